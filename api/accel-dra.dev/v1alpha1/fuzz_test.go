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

package v1alpha1_test

// Fuzz target of the opaque config decoder, which both the kubelet plugin
// and the admission webhook run on user input (DecodeOpaqueConfig). Run it
// for a while with
//
//	go test -run x -fuzz FuzzDecodeConfig -fuzztime 60s -parallel 1 ./api/accel-dra.dev/v1alpha1

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
)

func FuzzDecodeConfig(f *testing.F) {
	for _, s := range []string{
		`{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","env":{"HCCL_CONNECT_TIMEOUT":"1200"},"sharing":{"strategy":"Exclusive"}}`,
		`{"apiVersion":"accel-dra.dev/v1alpha1","kind":"CambriconConfig"}`,
		`{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","envs":{"A":"1"}}`,
		`{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","env":{"A":"1","A":"2"}}`,
		`{"apiVersion":"accel-dra.dev/v1alpha1","kind":"AscendConfig","env":{"ASCEND_VISIBLE_DEVICES":"0","DRA_X":"1","1A":"x"}}`,
		`{"apiVersion":"accel-dra.dev/v1alpha1","kind":"CambriconConfig","sharing":{"strategy":"TimeSlicing"}}`,
		`{"apiVersion":"accel-dra.dev/v1alpha1","kind":"CambriconConfig","sharing":null,"env":null}`,
		`{"apiVersion":"accel-dra.dev/v1","kind":"AscendConfig"}`,
		`{"kind":"AscendConfig"}`,
		`apiVersion: accel-dra.dev/v1alpha1`,
		`null`, `[]`, ``,
	} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	decoder := newDecoder(f)
	f.Fuzz(func(t *testing.T, raw []byte, ascend bool) {
		kind := cambriconKind
		if ascend {
			kind = ascendKind
		}
		cfg, err := decoder.DecodeConfig(raw, kind)
		if err != nil {
			requireNamesWhatIsWrong(t, err, kind)
			return
		}
		// Accepted: defaulted, valid, and it survives a round trip.
		require.Equal(t, kind, cfg.GetObjectKind().GroupVersionKind().Kind)
		require.Contains(t, v1alpha1.SharingStrategies, cfg.SharingStrategy())
		encoded, err := json.Marshal(cfg)
		require.NoError(t, err)
		again, err := decoder.DecodeConfig(encoded, kind)
		require.NoError(t, err, "re-decoding %s", encoded)
		require.Equal(t, cfg, again)
	})
}

// requireNamesWhatIsWrong asserts that a rejected config's error says
// what to fix: a validation error names the field inside the parameters,
// anything else says it could not decode or which kind it wanted.
func requireNamesWhatIsWrong(t *testing.T, err error, kind string) {
	t.Helper()
	msg := err.Error()
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		require.True(t, strings.HasPrefix(msg, kind+": "), "validation error %q names the kind", msg)
		for _, e := range agg.Errors() {
			var fe *field.Error
			require.True(t, errors.As(e, &fe), "validation error %v is a field error", e)
			require.NotEmpty(t, fe.Field)
			require.Contains(t, msg, fe.Field)
		}
		return
	}
	switch {
	case strings.HasPrefix(msg, "decoding: "):
		require.Contains(t, msg, "want apiVersion accel-dra.dev/v1alpha1, kind "+kind)
		if strings.Contains(msg, "strict decoding error") {
			require.Regexp(t, `(unknown|duplicate) field "[^"]*"`, msg)
		}
	case strings.HasPrefix(msg, "kind "):
		require.Contains(t, msg, "want "+kind)
	default:
		require.Fail(t, "unexpected error", "%v", err)
	}
}
