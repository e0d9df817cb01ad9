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
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateEnv checks the variables an opaque config sets in a claim's
// containers (its env field), own being the visible-devices variable of
// the config's vendor. It is the one check of both the API's config
// validation (so the admission webhook, at apply) and the CDI writer (at
// prepare), so a config the node agent would refuse is refused when it is
// applied. Errors are under the path "env", in key order.
func (r Registry) ValidateEnv(own string, env map[string]string) field.ErrorList {
	reserved := r.ReservedEnv()
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs field.ErrorList
	for _, k := range keys {
		p := field.NewPath("env").Key(k)
		for _, msg := range validation.IsEnvVarName(k) {
			errs = append(errs, field.Invalid(p, k, msg))
		}
		// The driver sets them; a config must not change them, or a
		// container could claim to see chips it was not given, or name
		// chips a vendor runtime still on the node would inject.
		switch {
		case k == own || strings.HasPrefix(k, ReservedEnvPrefix):
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("%s and %s* are set by the driver to the allocated devices", own, ReservedEnvPrefix)))
		case slices.Contains(reserved, k):
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("%s is set by its vendor's driver to the allocated devices of a container that has any", k)))
		}
		// A process environment is NUL-terminated strings: the runtime
		// would fail the container, long after the apply.
		if strings.ContainsRune(env[k], 0) {
			errs = append(errs, field.Invalid(p, env[k], "must not contain a NUL byte"))
		}
	}
	return errs
}
