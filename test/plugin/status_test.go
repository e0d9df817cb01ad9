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
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/accel-dra/accel-dra/api/accel-dra.dev/v1alpha1"
	"github.com/accel-dra/accel-dra/pkg/driver"
	"github.com/accel-dra/accel-dra/pkg/vendors/ascend"
	"github.com/accel-dra/accel-dra/pkg/vendors/cambricon"
)

// deviceStatus waits until the claim's status.devices in the fake API
// server satisfy cond and returns them.
func (n *node) deviceStatus(c *resourceapi.ResourceClaim, cond func([]resourceapi.AllocatedDeviceStatus) bool) []resourceapi.AllocatedDeviceStatus {
	n.t.Helper()
	var got []resourceapi.AllocatedDeviceStatus
	require.Eventually(n.t, func() bool {
		cur, err := n.client.ResourceV1().ResourceClaims(c.Namespace).Get(n.ctx, c.Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		got = cur.Status.Devices
		return cond(got)
	}, 30*time.Second, 20*time.Millisecond, "status.devices of %s: %+v", c.Name, &got)
	return got
}

func statusData(t *testing.T, s resourceapi.AllocatedDeviceStatus) v1alpha1.DeviceStatusData {
	t.Helper()
	require.NotNil(t, s.Data, "entry %s has no data", s.Device)
	var d v1alpha1.DeviceStatusData
	require.NoError(t, json.Unmarshal(s.Data.Raw, &d))
	return d
}

func TestPrepareWritesEachDevicesStatusAndUnprepareClearsIt(t *testing.T) {
	n := startNode(t, nodeOptions{Profile: "atlas-800t-a2", Vendor: ascend.Vendor, ChipModes: "Partitioned"})
	c := n.claim("train", []string{"npu-0", "npu-2-vir05-1c-16g-0"})
	n.mustPrepare(c)
	got := n.deviceStatus(c, func(s []resourceapi.AllocatedDeviceStatus) bool { return len(s) == 2 })
	byDevice := map[string]resourceapi.AllocatedDeviceStatus{}
	for _, s := range got {
		require.Equal(t, n.driverName, s.Driver)
		require.Equal(t, nodeName, s.Pool)
		require.Len(t, s.Conditions, 1)
		require.Equal(t, "Ready", s.Conditions[0].Type)
		require.Equal(t, metav1.ConditionTrue, s.Conditions[0].Status)
		byDevice[s.Device] = s
	}
	chips := n.inv.ChipsOf(ascend.Vendor)
	whole := statusData(t, byDevice["npu-0"])
	require.Equal(t, v1alpha1.DeviceStatusData{UUID: chips[0].UUID, Model: "Ascend910B3", Index: ptr.To(0), PCIBusID: chips[0].PCIBusID,
		DriverVersion: chips[0].DriverVersion, DeviceIP: "10.20.0.2/24"}, whole)
	require.Equal(t, &resourceapi.NetworkDeviceData{IPs: []string{"10.20.0.2/24"}}, byDevice["npu-0"].NetworkData, "the NPU's RoCE address")

	vnpu := statusData(t, byDevice["npu-2-vir05-1c-16g-0"])
	parts := n.partitionsOnChips()
	require.Len(t, parts, 1)
	require.Equal(t, "vir05_1c_16g", vnpu.Template)
	require.Equal(t, ptr.To(parts[0].ID), vnpu.InstanceID, "the id of the vNPU the tool made")
	require.Equal(t, ptr.To(2), vnpu.Index, "the parent chip's index")
	require.Equal(t, chips[2].UUID, vnpu.UUID)

	n.unprepare(c)
	n.deviceStatus(c, func(s []resourceapi.AllocatedDeviceStatus) bool { return len(s) == 0 })
}

func TestAStatusWriteThatFailsIsRetriedAndNeverFailsThePrepare(t *testing.T) {
	n := startNode(t, nodeOptions{Profile: "mlu370-x8", Vendor: cambricon.Vendor, ChipModes: "Whole"})
	var failures atomic.Int32
	n.client.PrependReactor("patch", "resourceclaims", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() == "status" && failures.Add(1) <= 3 {
			return true, nil, apierrors.NewServiceUnavailable("etcd is having a bad day")
		}
		return false, nil, nil
	})
	c := n.claim("serve", []string{"mlu-4"})
	ids := n.mustPrepare(c)
	require.Len(t, ids, 1, "the prepare answered at once")
	got := n.deviceStatus(c, func(s []resourceapi.AllocatedDeviceStatus) bool { return len(s) == 1 })
	require.GreaterOrEqual(t, failures.Load(), int32(4), "three failed writes, then one that took")
	require.Equal(t, "MLU370-X8", statusData(t, got[0]).Model)
	require.Nil(t, got[0].NetworkData, "no RoCE address is known for an MLU")
	n.unprepare(c)
}

func TestTheContainerGetsTheDeviceMetadataFile(t *testing.T) {
	n := startNode(t, nodeOptions{Profile: "mixed-910b-mlu370", Vendor: ascend.Vendor, ChipModes: "Partitioned", Setup: func(n *node) {
		n.configure = func(cfg *driver.Config) { cfg.DeviceMetadata = true }
	}})
	c := n.claim("train", []string{"npu-1", "npu-3-vir05-1c-16g-0"})
	ids := n.mustPrepare(c)
	require.Len(t, ids, 3, "one CDI device per chip and one for the request's metadata file")
	ctr := n.container(ids)
	const path = "/var/run/kubernetes.io/dra-device-attributes/resourceclaims/train/accel/ascend.accel-dra.dev-metadata.json"
	var host string
	for _, m := range ctr.Mounts {
		if m.Destination == path {
			host = m.Source
			require.Contains(t, m.Options, "ro")
		}
	}
	require.NotEmpty(t, host, "the metadata file is mounted at %s: %v", path, mountPaths(ctr, n.root))
	raw, err := os.ReadFile(host)
	require.NoError(t, err)
	var md struct {
		APIVersion string `json:"apiVersion"`
		Requests   []struct {
			Name    string `json:"name"`
			Devices []struct {
				Name        string                                 `json:"name"`
				Attributes  map[string]resourceapi.DeviceAttribute `json:"attributes"`
				NetworkData *resourceapi.NetworkDeviceData         `json:"networkData"`
			} `json:"devices"`
		} `json:"requests"`
	}
	require.NoError(t, json.NewDecoder(strings.NewReader(string(raw))).Decode(&md), "%s", raw)
	require.Equal(t, "metadata.resource.k8s.io/v1beta1", md.APIVersion)
	require.Len(t, md.Requests, 1)
	require.Len(t, md.Requests[0].Devices, 2)
	chips := n.inv.ChipsOf(ascend.Vendor)
	whole, vnpu := md.Requests[0].Devices[0], md.Requests[0].Devices[1]
	require.Equal(t, "npu-1", whole.Name)
	require.Equal(t, chips[1].UUID, *whole.Attributes["uuid"].StringValue)
	require.Equal(t, int64(1), *whole.Attributes["index"].IntValue)
	require.Equal(t, chips[1].PCIBusID, *whole.Attributes["pciBusID"].StringValue)
	require.NotNil(t, whole.NetworkData, "the RoCE address, for an HCCL rank table")
	require.Equal(t, []string{chips[1].DeviceIP}, whole.NetworkData.IPs)
	require.Equal(t, "vir05_1c_16g", *vnpu.Attributes["template"].StringValue)
	require.NotNil(t, vnpu.Attributes["instanceID"].IntValue)

	n.unprepare(c)
	require.NoFileExists(t, host)
	require.Empty(t, n.cdiFiles(), "the metadata spec goes with the claim's")
	_, err = os.Stat(filepath.Dir(host))
	require.True(t, os.IsNotExist(err), "no metadata directory of the claim is left")
}
