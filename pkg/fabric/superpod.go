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

package fabric

import (
	"fmt"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/accel-dra/accel-dra/pkg/names"
)

// SuperPodOf is the super pod every whole chip among devices is in (their
// AttrSuperPod): "" where no chip says one (910B, 310P, MLU), an error
// where the chips disagree or only some say one, so the node publishes no
// super pod it is not sure of. Partition devices carry their chip's
// attributes and are skipped.
func SuperPodOf(devices []resourceapi.Device) (string, error) {
	var id, first string
	var chips, with int
	for _, d := range devices {
		if t := d.Attributes[names.AttrType].StringValue; t != nil && *t != names.TypeChip {
			continue
		}
		chips++
		v := d.Attributes[AttrSuperPod].StringValue
		if v == nil {
			continue
		}
		with++
		switch {
		case id == "":
			id, first = *v, d.Name
		case *v != id:
			return "", fmt.Errorf("field %s: the chips disagree on the super pod: %s says %q, %s says %q", AttrSuperPod, first, id, d.Name, *v)
		}
	}
	if with > 0 && with < chips {
		return "", fmt.Errorf("field %s: only %d of the node's %d chips say their super pod (%q)", AttrSuperPod, with, chips, id)
	}
	return id, nil
}

// SuperPodValue is the label value of super pod id: "sp-<id>", after
// scope where the admin gives one. A super pod id is unique only among
// the super pods of one super-pod cluster (the fabric manager numbers them
// from 0), so a Kubernetes cluster joining the super pods of several
// needs a scope per super-pod cluster for its values to be unique
// cluster-wide (--superpod-scope).
func SuperPodValue(scope, id string) (string, error) {
	v := "sp-" + id
	if scope != "" {
		v = scope + "." + v
	}
	if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
		return "", fmt.Errorf("label %s value %q (super pod %q, scope %q) is not a valid label value: %s", LabelSuperPod, v, id, scope, strings.Join(errs, "; "))
	}
	return v, nil
}

// SDID is a chip's super device id in the layout the 910_93 DCMI reference
// gives it (docs/hardware.md): server index in bits 22-31, chip 18-21, die
// 16-17, device 0-15. A simulated chip i is die i%2 of chip i/2; the
// simulated cluster and the benchmark's fabric side both number them so.
func SDID(serverIndex int64, index int) int64 {
	return serverIndex<<22 | int64(index/2)<<18 | int64(index%2)<<16 | int64(index)
}
