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

package chipmetrics_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/accel-dra/accel-dra/pkg/checkpoint"
	"github.com/accel-dra/accel-dra/pkg/chipmetrics"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
)

// containers is a fixed PodResources answer.
type containers []chipmetrics.Container

func (c containers) List(context.Context) ([]chipmetrics.Container, error) { return c, nil }

// sixteenChips is a collector of one 16-chip Ascend node whose chips all
// 16 claims hold, each claim's pod with one container, the telemetry
// simulated (what a read costs beyond the library's own calls).
func sixteenChips() *chipmetrics.Collector {
	names := ascend.Ascend{}.Names()
	var chips []inventory.Chip
	prepared := map[types.UID]checkpoint.Claim{}
	var list containers
	for i := range 16 {
		chips = append(chips, inventory.Chip{Vendor: ascend.Vendor, Model: "Ascend910B3", Index: i, UUID: fmt.Sprintf("uuid-%d", i), MemoryBytes: 64 << 30, Healthy: true})
		dev := names.ChipDevice(i)
		prepared[types.UID(fmt.Sprintf("uid-%d", i))] = checkpoint.Claim{Namespace: "team", Name: fmt.Sprintf("claim-%d", i),
			Devices: []checkpoint.Device{{Kind: checkpoint.KindChip, Pool: "node", Device: dev}}}
		list = append(list, chipmetrics.Container{Namespace: "team", Pod: fmt.Sprintf("pod-%d", i), Container: "main",
			ClaimNamespace: "team", ClaimName: fmt.Sprintf("claim-%d", i), Driver: names.Driver, Pool: "node", Device: dev})
	}
	return chipmetrics.New(chipmetrics.Config{Node: "node", PodResources: list, Drivers: []chipmetrics.Driver{{
		Name: names.Driver, Pool: "node", Names: names, Telemetry: vendors.SimulatedTelemetry{Node: "node"}, Chips: chips,
		Prepared: func() map[types.UID]checkpoint.Claim { return prepared },
	}}})
}

// BenchmarkRead16Chips is one reading of the collector (every interval):
// the chips' samples, the holders' labels, the series.
func BenchmarkRead16Chips(b *testing.B) {
	c := sixteenChips()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		c.Read(ctx)
	}
}

// BenchmarkScrape16Chips is a scrape of the collector's series through
// promhttp, as /metrics serves them.
func BenchmarkScrape16Chips(b *testing.B) {
	c := sixteenChips()
	c.Read(context.Background())
	reg := prometheus.NewRegistry()
	if err := c.Register(reg); err != nil {
		b.Fatal(err)
	}
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Body.String())
		}
	}
}
