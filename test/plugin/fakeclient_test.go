package plugin_test

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/accel-dra/accel-dra/test/fakeapi"
)

// newFakeClient is fakeapi.NewClient: generated names and field selectors
// on ResourceSlices, which the resourceslice controller depends on.
func newFakeClient(objs ...runtime.Object) *fake.Clientset { return fakeapi.NewClient(objs...) }
