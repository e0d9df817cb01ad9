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

package chart_test

import (
	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
	"github.com/accel-dra/accel-dra/pkg/vendors/all"
)

// configs decodes the opaque configs of the binaries' vendors, built as
// the webhook's main builds it.
var configs = mustConfigDecoder()

func mustConfigDecoder() *v1alpha1.ConfigDecoder {
	d, err := all.Registry().ConfigDecoder()
	if err != nil {
		panic(err)
	}
	return d
}
