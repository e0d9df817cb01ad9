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

package nodeagent

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// hungAt is a vendor backend whose library has call hung since a time;
// nil: none is.
type hungAt struct{ call *vendors.HungCall }

func (h hungAt) HungLibraryCall() *vendors.HungCall { return h.call }

// TestLivenessFailsOnceALibraryCallIsHungLongerThanTheLimit: /livez
// answers while a vendor library's call is hung for less than the limit
// (a slow call may still return), and fails naming the vendor, the
// library and the call once it is hung for longer; other vendors'
// libraries do not count.
func TestLivenessFailsOnceALibraryCallIsHungLongerThanTheLimit(t *testing.T) {
	now := time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)
	call := func(ago time.Duration) *vendors.HungCall {
		return &vendors.HungCall{Library: "/usr/local/dcmi/libdcmi.so", Call: "dcmi_get_device_health", Since: now.Add(-ago)}
	}
	for _, tt := range []struct {
		name  string
		limit time.Duration
		hung  *vendors.HungCall
		want  string
	}{
		{name: "no hung call", limit: time.Minute},
		{name: "hung for less than the limit", limit: time.Minute, hung: call(59 * time.Second)},
		{name: "hung for longer than the limit", limit: time.Minute, hung: call(61 * time.Second),
			want: "ascend: /usr/local/dcmi/libdcmi.so: dcmi_get_device_health has not returned for 1m1s (longer than --library-hang-limit 1m0s); a restart loads the library afresh"},
		{name: "default limit", hung: call(DefaultLibraryHangLimit - time.Second)},
		{name: "longer than the default limit", hung: call(DefaultLibraryHangLimit + time.Second),
			want: "ascend: /usr/local/dcmi/libdcmi.so: dcmi_get_device_health has not returned for 1m1s (longer than --library-hang-limit 1m0s); a restart loads the library afresh"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &probes{hangLimit: tt.limit, libraries: []libraryWatch{
				{vendor: "ascend", watch: hungAt{tt.hung}},
				{vendor: "cambricon", watch: hungAt{}},
			}}
			err := p.hungLibraries(now)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tt.want)
		})
	}
}

// TestLivezNamesTheHungCall: the probe fails with a body saying which
// call is hung.
func TestLivezNamesTheHungCall(t *testing.T) {
	p := &probes{hangLimit: time.Second, libraries: []libraryWatch{{vendor: "cambricon", watch: hungAt{
		&vendors.HungCall{Library: "libcndev.so", Call: "cndevGetCardHealthState", Since: time.Now().Add(-time.Hour)}}}}}
	rec := httptest.NewRecorder()
	p.handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/livez", nil))
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.Contains(t, rec.Body.String(), "cambricon: libcndev.so: cndevGetCardHealthState has not returned for 1h0m0s")
}
