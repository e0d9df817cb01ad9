// Copyright The accel-dra Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

package fakeapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"
)

// Handler serves c over the Kubernetes REST API, in JSON, so that a
// program with a real client (the node agent binary, through its
// --kubeconfig) talks to the fake in another process: get, list, watch,
// create, update, patch (server-side apply included) and delete of every
// built-in type, with the reactors of c (NewClient's field selectors and
// generated names). Watches stream from the fake's tracker; a watch that
// asks for its initial events (the client's WatchList) is refused with
// 400, as by an API server without that feature, and the client falls
// back to list and watch.
func Handler(c *fake.Clientset) http.Handler {
	return &handler{c: c, kinds: kindsByResource()}
}

type handler struct {
	c *fake.Clientset
	// kinds maps each built-in resource to its kind, for list actions.
	kinds map[schema.GroupVersionResource]schema.GroupVersionKind
}

func kindsByResource() map[schema.GroupVersionResource]schema.GroupVersionKind {
	out := map[schema.GroupVersionResource]schema.GroupVersionKind{}
	for gvk := range scheme.Scheme.AllKnownTypes() {
		if strings.HasSuffix(gvk.Kind, "List") {
			continue
		}
		plural, _ := meta.UnsafeGuessKindToResource(gvk)
		out[plural] = gvk
	}
	return out
}

// request is a REST path taken apart:
// /api/v1[/namespaces/<ns>]/<resource>[/<name>[/<subresource>]] or the
// same under /apis/<group>/<version>.
type request struct {
	gvr                  schema.GroupVersionResource
	namespace, name, sub string
	watch                bool
	query                map[string][]string
	contentType          string
}

func parsePath(r *http.Request) (request, error) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var req request
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		req.gvr.Version, parts = parts[1], parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		req.gvr.Group, req.gvr.Version, parts = parts[1], parts[2], parts[3:]
	default:
		return req, fmt.Errorf("path %s: not a resource path", r.URL.Path)
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		req.namespace, parts = parts[1], parts[2:]
	}
	if len(parts) == 0 || len(parts) > 3 {
		return req, fmt.Errorf("path %s: not a resource path", r.URL.Path)
	}
	req.gvr.Resource = parts[0]
	if len(parts) > 1 {
		req.name = parts[1]
	}
	if len(parts) > 2 {
		req.sub = parts[2]
	}
	req.query = r.URL.Query()
	req.watch = r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1"
	req.contentType = strings.TrimSpace(strings.Split(r.Header.Get("Content-Type"), ";")[0])
	return req, nil
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req, err := parsePath(r)
	if err != nil {
		writeError(w, apierrors.NewNotFound(schema.GroupResource{}, r.URL.Path))
		return
	}
	if _, ok := h.kinds[req.gvr]; !ok {
		writeError(w, apierrors.NewNotFound(req.gvr.GroupResource(), req.name))
		return
	}
	if req.watch {
		h.serveWatch(w, r, req)
		return
	}
	obj, err := h.invoke(r, req)
	if err != nil {
		writeError(w, err)
		return
	}
	status := http.StatusOK
	if r.Method == http.MethodPost {
		status = http.StatusCreated
	}
	writeObject(w, status, obj)
}

// invoke runs the request as the fake clientset's action through its
// reactors and returns the object to answer with.
func (h *handler) invoke(r *http.Request, req request) (runtime.Object, error) {
	var action k8stesting.Action
	switch {
	case r.Method == http.MethodGet && req.name != "":
		var opts metav1.GetOptions
		if err := decodeQuery(req, &opts); err != nil {
			return nil, err
		}
		action = k8stesting.NewGetSubresourceActionWithOptions(req.gvr, req.namespace, req.sub, req.name, opts)
	case r.Method == http.MethodGet:
		var opts metav1.ListOptions
		if err := decodeQuery(req, &opts); err != nil {
			return nil, err
		}
		action = k8stesting.NewListActionWithOptions(req.gvr, h.kinds[req.gvr], req.namespace, opts)
	case r.Method == http.MethodPost || r.Method == http.MethodPut:
		obj, err := decodeBody(r)
		if err != nil {
			return nil, err
		}
		if r.Method == http.MethodPost {
			action = k8stesting.NewCreateSubresourceActionWithOptions(req.gvr, req.name, req.sub, req.namespace, obj, metav1.CreateOptions{})
		} else {
			action = k8stesting.NewUpdateSubresourceActionWithOptions(req.gvr, req.sub, req.namespace, obj, metav1.UpdateOptions{})
		}
	case r.Method == http.MethodPatch:
		var opts metav1.PatchOptions
		if err := decodeQuery(req, &opts); err != nil {
			return nil, err
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("reading the patch: %v", err))
		}
		var subs []string
		if req.sub != "" {
			subs = []string{req.sub}
		}
		action = k8stesting.NewPatchSubresourceActionWithOptions(req.gvr, req.namespace, req.name, types.PatchType(req.contentType), body, opts, subs...)
	case r.Method == http.MethodDelete && req.name != "":
		action = k8stesting.NewDeleteSubresourceActionWithOptions(req.gvr, req.sub, req.namespace, req.name, metav1.DeleteOptions{})
	default:
		return nil, apierrors.NewMethodNotSupported(req.gvr.GroupResource(), r.Method)
	}
	obj, err := h.c.Invokes(action, nil)
	if err == nil && obj == nil {
		// A delete answers with a status.
		obj = &metav1.Status{Status: metav1.StatusSuccess}
	}
	return obj, err
}

// serveWatch streams the tracker's events of the request's resource as
// JSON watch events until the client goes away or the fake ends the watch.
func (h *handler) serveWatch(w http.ResponseWriter, r *http.Request, req request) {
	var opts metav1.ListOptions
	if err := decodeQuery(req, &opts); err != nil {
		writeError(w, err)
		return
	}
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		writeError(w, apierrors.NewBadRequest("sendInitialEvents is not supported by the fake API server"))
		return
	}
	watcher, err := h.c.InvokesWatch(k8stesting.NewWatchActionWithOptions(req.gvr, req.namespace, opts))
	if err != nil {
		writeError(w, err)
		return
	}
	defer watcher.Stop()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	enc := json.NewEncoder(w)
	for {
		select {
		case <-r.Context().Done():
			return
		case e, ok := <-watcher.ResultChan():
			if !ok {
				return
			}
			raw, err := runtime.Encode(codec, e.Object)
			if err != nil {
				return
			}
			if enc.Encode(metav1.WatchEvent{Type: string(e.Type), Object: runtime.RawExtension{Raw: raw}}) != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
	}
}

// codec writes objects with their apiVersion and kind, as an API server
// does (the tracker's objects carry neither).
var codec = scheme.Codecs.LegacyCodec(scheme.Scheme.PrioritizedVersionsAllGroups()...)

func decodeQuery(req request, into runtime.Object) error {
	if err := scheme.ParameterCodec.DecodeParameters(req.query, schema.GroupVersion{Version: "v1"}, into); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("query of %s: %v", req.gvr.Resource, err))
	}
	return nil
}

func decodeBody(r *http.Request) (runtime.Object, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("reading the body: %v", err))
	}
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("decoding the body: %v", err))
	}
	return obj, nil
}

func writeObject(w http.ResponseWriter, status int, obj runtime.Object) {
	raw, err := runtime.Encode(codec, obj)
	if err != nil {
		writeError(w, apierrors.NewInternalError(fmt.Errorf("encoding the answer: %w", err)))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(raw)
}

func writeError(w http.ResponseWriter, err error) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		status = apierrors.NewInternalError(err)
	}
	s := status.Status()
	s.Kind, s.APIVersion = "Status", "v1"
	raw, _ := json.Marshal(s)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(s.Code))
	_, _ = w.Write(raw)
}
