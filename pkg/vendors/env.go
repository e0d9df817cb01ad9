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

package vendors

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
)

// ValidateEnv checks the variables an opaque config sets in a claim's
// containers (its env field), own being the visible-devices variable of
// the config's vendor, with the API's check (v1alpha1.ValidateEnv) and r's
// variables reserved. The CDI writer calls it at prepare; the config
// decoder the webhook and the node agent build from r (ConfigDecoder) runs
// the same check at apply, so a config the node agent would refuse is
// refused when it is applied. Errors are under the path "env", in key
// order.
func (r Registry) ValidateEnv(own string, env map[string]string) field.ErrorList {
	return v1alpha1.ValidateEnv(own, r.ReservedEnv(), env)
}
