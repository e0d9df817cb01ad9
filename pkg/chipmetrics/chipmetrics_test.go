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
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/accel-dra/accel-dra/pkg/checkpoint"
	"github.com/accel-dra/accel-dra/pkg/chipmetrics"
	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
	"github.com/accel-dra/accel-dra/pkg/vendors/vendortest"
)

// acmeNode writes the test vendor's telemetry files under a fresh root:
// one file per chip index, nil leaves the chip without one (its read
// fails).
func acmeNode(t *testing.T, files ...*string) (string, []inventory.Chip) {
	root := t.TempDir()
	var chips []inventory.Chip
	for i, f := range files {
		chips = append(chips, inventory.Chip{Vendor: vendortest.Vendor, Model: vendortest.Model, Index: i, UUID: "ACME-000" + string(rune('0'+i)), Healthy: true})
		if f == nil {
			continue
		}
		path := filepath.Join(root, vendortest.TelemetryFile(i))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(*f), 0o644))
	}
	return root, chips
}

func ptr(s string) *string { return &s }

// podResources is a kubelet PodResources v1 server on a unix socket.
type podResources struct {
	podresourcesv1.UnimplementedPodResourcesListerServer
	resp *podresourcesv1.ListPodResourcesResponse
}

func (p *podResources) List(context.Context, *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	return p.resp, nil
}

func servePodResources(t *testing.T, p *podResources) string {
	socket := filepath.Join(t.TempDir(), "kubelet.sock")
	l, err := net.Listen("unix", socket)
	require.NoError(t, err)
	srv := grpc.NewServer()
	podresourcesv1.RegisterPodResourcesListerServer(srv, p)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return socket
}

func claimOf(ns, pod, container, claim, device string) *podresourcesv1.PodResources {
	return &podresourcesv1.PodResources{Namespace: ns, Name: pod, Containers: []*podresourcesv1.ContainerResources{{
		Name: container, DynamicResources: []*podresourcesv1.DynamicResource{{ClaimNamespace: ns, ClaimName: claim,
			ClaimResources: []*podresourcesv1.ClaimResource{{DriverName: vendortest.Driver, PoolName: "node-a", DeviceName: device}}}},
	}}}
}

// TestCollectorLabelsHoldersCountsIdleTimeAndLeavesFailingChipsOut reads
// a busy chip held by an admin-access monitor, an idle chip held by a
// training pod, and a chip whose read fails, through the test vendor and a
// real PodResources gRPC server, twice 90 s apart.
func TestCollectorLabelsHoldersCountsIdleTimeAndLeavesFailingChipsOut(t *testing.T) {
	root, chips := acmeNode(t,
		ptr("utilization 0.8\nmemory_used 4294967296\ntemperature 61\npower 230\nhealthy true\n"),
		ptr("utilization 0\nmemory_used 0\ntemperature 38\ncard_power 150\nhealthy true\n"),
		nil)
	prepared := map[types.UID]checkpoint.Claim{
		"uid-train": {Namespace: "team-a", Name: "train", Devices: []checkpoint.Device{{Kind: checkpoint.KindChip, Pool: "node-a", Device: "xpu-1"}}},
		"uid-watch": {Namespace: "monitoring", Name: "watch", Devices: []checkpoint.Device{{Kind: checkpoint.KindAdmin, Pool: "node-a", Device: "xpu-0"}}},
	}
	socket := servePodResources(t, &podResources{resp: &podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{
		claimOf("team-a", "trainer", "main", "train", "xpu-1"),
		claimOf("monitoring", "watcher", "probe", "watch", "xpu-0"),
		claimOf("other", "elsewhere", "c", "x", "xpu-9"),
	}}})
	kubelet, err := chipmetrics.NewKubeletPodResources(socket)
	require.NoError(t, err)
	t.Cleanup(func() { _ = kubelet.Close() })

	now := time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)
	var logs bytes.Buffer
	ctx := klog.NewContext(t.Context(), textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&logs))))
	c := chipmetrics.New(chipmetrics.Config{Node: "node-a", PodResources: kubelet, Now: func() time.Time { return now },
		Drivers: []chipmetrics.Driver{{Name: vendortest.Driver, Pool: "node-a", Names: vendortest.Acme{}.Names(),
			Telemetry: vendortest.Acme{}.NewTelemetry(vendors.BackendConfig{Root: root}), Chips: chips,
			Prepared: func() map[types.UID]checkpoint.Claim { return prepared }}}})
	reg := prometheus.NewRegistry()
	require.NoError(t, c.Register(reg))
	c.Read(ctx)
	now = now.Add(90 * time.Second)
	c.Read(ctx)

	const labels0 = `access="admin",claim="watch",container="probe",device="xpu-0",driver="acme.accel-dra.dev",model="ACME-1",namespace="monitoring",node="node-a",pod="watcher",uuid="ACME-0000"`
	const labels1 = `access="workload",claim="train",container="main",device="xpu-1",driver="acme.accel-dra.dev",model="ACME-1",namespace="team-a",node="node-a",pod="trainer",uuid="ACME-0001"`
	want := `
# HELP accel_dra_chip_allocated_idle_seconds How long a chip held by a workload claim has shown zero utilization (since it was prepared or last busy).
# TYPE accel_dra_chip_allocated_idle_seconds gauge
accel_dra_chip_allocated_idle_seconds{` + labels1 + `} 90
# HELP accel_dra_chip_utilization_ratio Compute utilization of the chip (Ascend AI cores, Cambricon MLU cores), 0 to 1.
# TYPE accel_dra_chip_utilization_ratio gauge
accel_dra_chip_utilization_ratio{` + labels0 + `} 0.8
accel_dra_chip_utilization_ratio{` + labels1 + `} 0
# HELP accel_dra_chip_power_watts Power the chip draws now.
# TYPE accel_dra_chip_power_watts gauge
accel_dra_chip_power_watts{` + labels0 + `} 230
# HELP accel_dra_chip_card_power_watts Power the whole card the chip is on draws now, where the chip has no figure of its own (Ascend 310P: the card's MCU); each chip of the card reports the card's figure.
# TYPE accel_dra_chip_card_power_watts gauge
accel_dra_chip_card_power_watts{` + labels1 + `} 150
# HELP accel_dra_chip_memory_used_bytes Device memory (HBM or DDR) in use on the chip.
# TYPE accel_dra_chip_memory_used_bytes gauge
accel_dra_chip_memory_used_bytes{` + labels0 + `} 4.294967296e+09
accel_dra_chip_memory_used_bytes{` + labels1 + `} 0
# HELP accel_dra_chip_telemetry_errors_total Failed reads of a chip quantity (one vendor library call for one chip) or of all of a driver's chips (call "read").
# TYPE accel_dra_chip_telemetry_errors_total counter
accel_dra_chip_telemetry_errors_total{call="acme-telemetry",driver="acme.accel-dra.dev"} 2
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "accel_dra_chip_allocated_idle_seconds", "accel_dra_chip_utilization_ratio",
		"accel_dra_chip_power_watts", "accel_dra_chip_card_power_watts", "accel_dra_chip_memory_used_bytes", "accel_dra_chip_telemetry_errors_total"))
	assert.Equal(t, 1, strings.Count(logs.String(), "Cannot read a chip quantity"), "logged once:\n%s", logs.String())
	assert.Contains(t, logs.String(), `device="xpu-2"`)

	// The chip reads again (logged), the pod goes: the labels go with it,
	// and the chip turns busy, which resets its idle time.
	require.NoError(t, os.MkdirAll(filepath.Join(root, filepath.Dir(vendortest.TelemetryFile(2))), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, vendortest.TelemetryFile(2)), []byte("utilization 0.5\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, vendortest.TelemetryFile(1)), []byte("utilization 0.3\n"), 0o644))
	delete(prepared, "uid-watch")
	now = now.Add(10 * time.Second)
	c.Read(ctx)
	assert.Contains(t, logs.String(), "Reading again")
	const free0 = `access="",claim="",container="",device="xpu-0",driver="acme.accel-dra.dev",model="ACME-1",namespace="",node="node-a",pod="",uuid="ACME-0000"`
	const free2 = `access="",claim="",container="",device="xpu-2",driver="acme.accel-dra.dev",model="ACME-1",namespace="",node="node-a",pod="",uuid="ACME-0002"`
	want = `
# HELP accel_dra_chip_allocated_idle_seconds How long a chip held by a workload claim has shown zero utilization (since it was prepared or last busy).
# TYPE accel_dra_chip_allocated_idle_seconds gauge
accel_dra_chip_allocated_idle_seconds{` + labels1 + `} 0
# HELP accel_dra_chip_utilization_ratio Compute utilization of the chip (Ascend AI cores, Cambricon MLU cores), 0 to 1.
# TYPE accel_dra_chip_utilization_ratio gauge
accel_dra_chip_utilization_ratio{` + free0 + `} 0.8
accel_dra_chip_utilization_ratio{` + labels1 + `} 0.3
accel_dra_chip_utilization_ratio{` + free2 + `} 0.5
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "accel_dra_chip_allocated_idle_seconds", "accel_dra_chip_utilization_ratio"))
}

// hanging is a Telemetry whose library call never returns until its
// context ends.
type hanging struct{}

func (hanging) Read(ctx context.Context, _ []inventory.Chip) ([]vendors.ChipSample, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestAHangingReadLeavesOnlyItsDriversSeriesOut: one vendor's read hangs
// until the read timeout; the other vendor's chips are still served, and
// a scrape meanwhile answers from the last reading.
func TestAHangingReadLeavesOnlyItsDriversSeriesOut(t *testing.T) {
	root, chips := acmeNode(t, ptr("utilization 0.25\n"))
	c := chipmetrics.New(chipmetrics.Config{Node: "n", ReadTimeout: 50 * time.Millisecond, Drivers: []chipmetrics.Driver{
		{Name: "hung.example.com", Names: vendors.Names{DevicePrefix: "hung"}, Telemetry: hanging{}, Chips: chips},
		{Name: vendortest.Driver, Names: vendortest.Acme{}.Names(), Telemetry: vendortest.Acme{}.NewTelemetry(vendors.BackendConfig{Root: root}), Chips: chips},
	}})
	reg := prometheus.NewRegistry()
	require.NoError(t, c.Register(reg))
	c.Read(t.Context())
	n, err := testutil.GatherAndCount(reg, "accel_dra_chip_utilization_ratio")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, 1.0, testutil.ToFloat64(counter(t, reg, "hung.example.com")))
}

func counter(t *testing.T, reg *prometheus.Registry, driver string) prometheus.Collector {
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "accel_dra_chip_telemetry_errors_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "driver" && l.GetValue() == driver {
					g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "x"})
					g.Set(m.GetCounter().GetValue())
					return g
				}
			}
		}
	}
	t.Fatalf("no error count of %s", driver)
	return nil
}

// stuck is a Telemetry whose library call ignores its context and
// returns only when release is closed.
type stuck struct{ release chan struct{} }

func (s stuck) Read(_ context.Context, chips []inventory.Chip) ([]vendors.ChipSample, error) {
	<-s.release
	return []vendors.ChipSample{{Index: chips[0].Index, UUID: chips[0].UUID, UtilizationRatio: vendors.Value(0.5)}}, nil
}

// TestAReadThatNeverReturnsIsLeftBehind: a library call that ignores the
// read timeout does not hold the collector; the next readings skip its
// driver until it returns, and then it reports again.
func TestAReadThatNeverReturnsIsLeftBehind(t *testing.T) {
	root, chips := acmeNode(t, ptr("utilization 0.25\n"))
	hung := stuck{release: make(chan struct{})}
	c := chipmetrics.New(chipmetrics.Config{Node: "n", ReadTimeout: 20 * time.Millisecond, Drivers: []chipmetrics.Driver{
		{Name: "hung.example.com", Names: vendors.Names{DevicePrefix: "hung"}, Telemetry: hung, Chips: chips},
		{Name: vendortest.Driver, Names: vendortest.Acme{}.Names(), Telemetry: vendortest.Acme{}.NewTelemetry(vendors.BackendConfig{Root: root}), Chips: chips},
	}})
	reg := prometheus.NewRegistry()
	require.NoError(t, c.Register(reg))
	count := func() int {
		n, err := testutil.GatherAndCount(reg, "accel_dra_chip_utilization_ratio")
		require.NoError(t, err)
		return n
	}
	c.Read(t.Context())
	c.Read(t.Context())
	assert.Equal(t, 1, count(), "the other driver's chip only")
	assert.Equal(t, 2.0, testutil.ToFloat64(counter(t, reg, "hung.example.com")), "timed out, then skipped")
	close(hung.release)
	require.Eventually(t, func() bool { c.Read(t.Context()); return count() == 2 }, 5*time.Second, 10*time.Millisecond,
		"the driver reports again once its call returned")
}
