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

package plugin_test

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/accel-dra/accel-dra/test/fakeapi"
)

// newFakeClient is fakeapi.NewClient: generated names and field selectors
// on ResourceSlices, which the resourceslice controller depends on.
func newFakeClient(objs ...runtime.Object) *fake.Clientset { return fakeapi.NewClient(objs...) }
