//go:build e2e

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

package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// DecodeObjects splits multi-document YAML into objects; empty documents
// (comments only) are skipped. source names the input in errors.
func DecodeObjects(source string, data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for i := 0; ; i++ {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("%s: decoding document %d: %w", source, i, err)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetKind() == "" || u.GetAPIVersion() == "" {
			return nil, fmt.Errorf("%s: document %d has no apiVersion/kind", source, i)
		}
		objs = append(objs, u)
	}
}

// ReadObjects reads YAML files, or every *.yaml of directories, in name
// order.
func ReadObjects(paths ...string) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	for _, p := range paths {
		files := []string{p}
		if st, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("reading manifests: %w", err)
		} else if st.IsDir() {
			files, err = filepath.Glob(filepath.Join(p, "*.yaml"))
			if err != nil {
				return nil, fmt.Errorf("listing %s: %w", p, err)
			}
			sort.Strings(files)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("reading manifests: %w", err)
			}
			o, err := DecodeObjects(f, data)
			if err != nil {
				return nil, err
			}
			objs = append(objs, o...)
		}
	}
	return objs, nil
}

// Resource maps an object's kind to its resource and says whether it is
// namespaced.
func (c *Cluster) Resource(obj *unstructured.Unstructured) (schema.GroupVersionResource, bool, error) {
	gvk := obj.GroupVersionKind()
	m, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		c.Mapper.Reset()
		m, err = c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return schema.GroupVersionResource{}, false, fmt.Errorf("mapping %s %s: %w", gvk, obj.GetName(), err)
	}
	return m.Resource, m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// Apply server-side applies objects as fieldManager, as `kubectl apply
// --server-side` does; namespaced objects without a namespace go to
// "default". The applied objects (as the server returned them) come back
// in order.
func (c *Cluster) Apply(ctx context.Context, fieldManager string, objs ...*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, obj := range objs {
		obj = obj.DeepCopy()
		gvr, namespaced, err := c.Resource(obj)
		if err != nil {
			return out, err
		}
		ri := c.Dynamic.Resource(gvr)
		var applied *unstructured.Unstructured
		if namespaced {
			if obj.GetNamespace() == "" {
				obj.SetNamespace("default")
			}
			applied, err = ri.Namespace(obj.GetNamespace()).Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
		} else {
			applied, err = ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
		}
		if err != nil {
			return out, fmt.Errorf("applying %s %s: %w", obj.GetKind(), objectName(obj), err)
		}
		out = append(out, applied)
	}
	return out, nil
}

// Delete deletes objects (foreground), ignoring those already gone.
func (c *Cluster) Delete(ctx context.Context, objs ...*unstructured.Unstructured) error {
	policy := metav1.DeletePropagationForeground
	var errs []error
	for _, obj := range objs {
		gvr, namespaced, err := c.Resource(obj)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ri := c.Dynamic.Resource(gvr)
		opts := metav1.DeleteOptions{PropagationPolicy: &policy}
		if namespaced {
			ns := obj.GetNamespace()
			if ns == "" {
				ns = "default"
			}
			err = ri.Namespace(ns).Delete(ctx, obj.GetName(), opts)
		} else {
			err = ri.Delete(ctx, obj.GetName(), opts)
		}
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting %s %s: %w", obj.GetKind(), objectName(obj), err))
		}
	}
	return errors.Join(errs...)
}

func objectName(obj *unstructured.Unstructured) string {
	if obj.GetNamespace() != "" {
		return obj.GetNamespace() + "/" + obj.GetName()
	}
	return obj.GetName()
}
