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

package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
)

// ValidatePath is where the API server posts AdmissionReviews of
// ResourceClaims, ResourceClaimTemplates and DeviceClasses.
const ValidatePath = "/validate-resource-claim-parameters"

// maxReviewBytes bounds a request body: an object is at most 1.5 MiB in
// etcd, and an update carries the old and the new one.
const maxReviewBytes = 8 << 20

var (
	// scheme is client-go's (every served version of resource.k8s.io)
	// plus admission.k8s.io/v1, which client-go does not register.
	scheme = runtime.NewScheme()
	codecs serializer.CodecFactory
)

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(admissionv1.AddToScheme(scheme))
	codecs = serializer.NewCodecFactory(scheme)
}

// NewHandler returns the admission handler for ValidatePath. It speaks
// admission.k8s.io/v1 AdmissionReview over JSON: a request that is not one
// gets HTTP 400 with the reason as text; a review is always answered with
// HTTP 200 and the verdict in response.allowed and response.status.
// configs decodes the opaque configs of the drivers that are ours.
func NewHandler(configs *v1alpha1.ConfigDecoder) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { serveReview(configs, w, r) })
}

func serveReview(configs *v1alpha1.ConfigDecoder, w http.ResponseWriter, r *http.Request) {
	logger := klog.FromContext(r.Context())
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, fmt.Sprintf("%s %s: only POST of an AdmissionReview is served here", r.Method, r.URL.Path), http.StatusMethodNotAllowed)
		return
	}
	if ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || ct != "application/json" {
		http.Error(w, fmt.Sprintf("Content-Type %q: an AdmissionReview must be sent as application/json", r.Header.Get("Content-Type")), http.StatusUnsupportedMediaType)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxReviewBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			http.Error(w, fmt.Sprintf("AdmissionReview larger than %d bytes", tooLarge.Limit), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, fmt.Sprintf("reading AdmissionReview: %v", err), http.StatusBadRequest)
		return
	}
	review, err := decodeReview(body)
	if err != nil {
		logger.V(2).Info("Rejected a malformed AdmissionReview", "remote", r.RemoteAddr, "err", err)
		http.Error(w, "malformed AdmissionReview: "+err.Error(), http.StatusBadRequest)
		return
	}
	out := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Response: Review(r.Context(), configs, review.Request),
	}
	data, err := json.Marshal(out)
	if err != nil {
		http.Error(w, fmt.Sprintf("encoding AdmissionReview response: %v", err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}

func decodeReview(body []byte) (*admissionv1.AdmissionReview, error) {
	want := admissionv1.SchemeGroupVersion.WithKind("AdmissionReview")
	obj, gvk, err := codecs.UniversalDeserializer().Decode(body, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("%w (want apiVersion %s, kind %s)", err, want.GroupVersion(), want.Kind)
	}
	review, ok := obj.(*admissionv1.AdmissionReview)
	if !ok {
		return nil, fmt.Errorf("got apiVersion %s, kind %s, want apiVersion %s, kind %s", gvk.GroupVersion(), gvk.Kind, want.GroupVersion(), want.Kind)
	}
	if review.Request == nil {
		return nil, errors.New("request is missing")
	}
	if review.Request.UID == "" {
		return nil, errors.New("request.uid is missing")
	}
	return review, nil
}

// Review judges one admission request: a ResourceClaim,
// ResourceClaimTemplate or DeviceClass of resource.k8s.io (v1, v1beta2 or
// v1beta1) is denied when an opaque config for a driver of configs (ours:
// ascend.accel-dra.dev, cambricon.accel-dra.dev, …) does not decode and
// validate for its driver, or names a request the claim does not have.
// Configs of other drivers are not looked at. The denial lists every bad
// field, as the API server's own validation does: HTTP 422, reason
// Invalid, one cause per field.
func Review(ctx context.Context, configs *v1alpha1.ConfigDecoder, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	logger := klog.FromContext(ctx).WithValues("uid", req.UID, "kind", req.Kind.Kind, "object", klog.KRef(req.Namespace, req.Name), "operation", req.Operation, "dryRun", req.DryRun != nil && *req.DryRun)
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return resp
	}
	obj, err := decodeObject(req.Object, req.Kind)
	if err != nil {
		return deny(logger, resp, http.StatusBadRequest, metav1.StatusReasonBadRequest, fmt.Sprintf("decoding the %s of the AdmissionReview: %v", req.Kind.Kind, err))
	}
	o, ok := fromObject(obj)
	if !ok {
		gvk := obj.GetObjectKind().GroupVersionKind()
		return deny(logger, resp, http.StatusBadRequest, metav1.StatusReasonBadRequest,
			fmt.Sprintf("the accel-dra webhook validates ResourceClaims, ResourceClaimTemplates and DeviceClasses of %s (v1, v1beta2, v1beta1), not %s %s: check the rules of its ValidatingWebhookConfiguration",
				resourcev1.GroupName, gvk.GroupVersion(), gvk.Kind))
	}
	if req.Operation == admissionv1.Update && len(req.OldObject.Raw) > 0 {
		// An update that leaves the configs alone (finalizers, labels, …)
		// is not judged again: an object created before the webhook must
		// stay deletable.
		if oldObj, err := decodeObject(req.OldObject, req.Kind); err == nil {
			if old, ok := fromObject(oldObj); ok && old.devices.equal(o.devices) {
				return resp
			}
		}
	}
	errs := o.devices.validate(configs, o.configsPath, o.isClass)
	if len(errs) == 0 {
		logger.V(4).Info("Allowed")
		return resp
	}
	status := invalid(o.kind, objectName(req, obj), errs)
	resp.Allowed = false
	resp.Result = status
	logger.V(2).Info("Denied", "reason", status.Message)
	return resp
}

// objectName is the name for the message; a claim created with
// generateName may not have its name yet.
func objectName(req *admissionv1.AdmissionRequest, obj runtime.Object) string {
	if req.Name != "" {
		return req.Name
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	if accessor.GetName() != "" {
		return accessor.GetName()
	}
	return accessor.GetGenerateName()
}

func decodeObject(raw runtime.RawExtension, kind metav1.GroupVersionKind) (runtime.Object, error) {
	if len(raw.Raw) == 0 {
		return nil, errors.New("object is missing")
	}
	def := schema.GroupVersionKind{Group: kind.Group, Version: kind.Version, Kind: kind.Kind}
	obj, _, err := codecs.UniversalDeserializer().Decode(raw.Raw, &def, nil)
	return obj, err
}

func deny(logger klog.Logger, resp *admissionv1.AdmissionResponse, code int32, reason metav1.StatusReason, msg string) *admissionv1.AdmissionResponse {
	logger.Info("Denied a request the webhook cannot judge", "reason", msg)
	resp.Allowed = false
	resp.Result = &metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Message: msg}
	return resp
}

// invalid is the status of a denial, shaped like the API server's own
// validation errors (k8s.io/apimachinery/pkg/api/errors.NewInvalid), so
// kubectl prints one line per cause:
//
//	<Kind>.resource.k8s.io "<name>" is invalid: <error>
//	<Kind>.resource.k8s.io "<name>" is invalid: [<error>, <error>, …]
//
// where a bad config is "<field>: <DecodeConfig error>", e.g.
// spec.devices.config[0].opaque.parameters: decoding: strict decoding
// error: unknown field "envs" (…), and a config naming a missing request
// is the API server's own wording, spec.devices.config[0].requests[0]:
// Invalid value: "gpu": must be the name of a request in the claim or ….
func invalid(kind, name string, errs []error) *metav1.Status {
	gk := schema.GroupKind{Group: resourcev1.GroupName, Kind: kind}
	var causes []metav1.StatusCause
	for _, err := range errs {
		var oe *v1alpha1.OpaqueConfigError
		var fe *field.Error
		switch {
		case errors.As(err, &oe):
			causes = append(causes, metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Field: oe.Field, Message: oe.Err.Error()})
		case errors.As(err, &fe):
			causes = append(causes, metav1.StatusCause{Type: metav1.CauseType(fe.Type), Field: fe.Field, Message: fe.ErrorBody()})
		default:
			causes = append(causes, metav1.StatusCause{Message: err.Error()})
		}
	}
	return &metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusUnprocessableEntity,
		Reason:  metav1.StatusReasonInvalid,
		Message: fmt.Sprintf("%s %q is invalid: %v", gk.String(), name, utilerrors.NewAggregate(errs)),
		Details: &metav1.StatusDetails{Group: gk.Group, Kind: gk.Kind, Name: name, Causes: causes},
	}
}
