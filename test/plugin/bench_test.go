package plugin_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/accel-dra/accel-dra/pkg/inventory"
)

// BenchmarkPrepareAndUnprepare measures one kubelet NodePrepareResources
// plus NodeUnprepareResources round trip over the plugin's unix socket:
// claim lookup in the (fake) API, config decoding, CDI spec write and
// delete, and two checkpoint writes with fsync.
func BenchmarkPrepareAndUnprepare(b *testing.B) {
	for _, chips := range []int{1, 8} {
		b.Run(fmt.Sprintf("%d chips", chips), func(b *testing.B) {
			n := newNode(b, "atlas-800t-a2", inventory.VendorHuawei)
			c := n.claim("bench", chipNames("npu", chips))
			b.ReportAllocs()
			for b.Loop() {
				n.mustPrepare(c)
				n.unprepare(c)
			}
		})
	}
}

// BenchmarkPluginHeapWith50PreparedClaims reports the Go heap in use by a
// plugin (in the test process) holding 50 prepared claims of 64 chips'
// node: the memory the checkpointed state and the helper cost.
func BenchmarkPluginHeapWith50PreparedClaims(b *testing.B) {
	n := newNode(b, "testdata/64-npu.yaml", inventory.VendorHuawei)
	for i := 0; i < 50; i++ {
		n.mustPrepare(n.claim(fmt.Sprintf("c%d", i), []string{fmt.Sprintf("npu-%d", i)}))
	}
	var m runtime.MemStats
	for b.Loop() {
		runtime.GC()
		runtime.ReadMemStats(&m)
	}
	b.ReportMetric(float64(m.HeapInuse)/(1<<20), "MiB-heap-inuse")
}
