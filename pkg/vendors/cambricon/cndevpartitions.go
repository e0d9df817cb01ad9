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

package cambricon

// sMLU instances through libcndev, the calls Cambricon's device plugin
// makes (bindings.go GetDeviceProfileInfo, CreateSmluProfileInstance,
// GetAllSmluInfo) and destroy by instance name
// (cndevDestroySMluInstanceByInstanceName), so that an instance found in a
// list can be destroyed without the handle its creator got.

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"k8s.io/klog/v2"

	"github.com/accel-dra/accel-dra/pkg/inventory"
	"github.com/accel-dra/accel-dra/pkg/vendors"
)

// smluWithName is an instance, the name libcndev destroys it by and the
// id of its profile.
type smluWithName struct {
	SMLU
	name    string
	profile int32
}

// smluDefaultProfiles is the number of profiles the driver makes itself
// on every chip, ids 0 to 2 (jklincn/cambricon-mlu-driver
// smlu/smlu_internal.h lines 10-12, smlu/smlu_core.c lines 159-171): the
// agent never removes those, only the dynamic ones it made.
const smluDefaultProfiles = 3

func (l *CNDev) handle(what string, card int) (int32, error) {
	var h int32
	err := l.call(what, "cndevGetDeviceHandleByIndex", func() int32 { return l.handleByIndex(int32(card), &h) })
	return h, err
}

// smluInfos lists the sMLU instances of the card behind handle h, with
// a buffer grown as cndevGetAllSMluInstanceInfo asks. A return code
// other than success comes back as r with no instances, for the caller
// to judge (telemetry reads "not supported" as no sMLU); err is a call
// that failed under the library's deadline or a count out of bounds.
func (l *CNDev) smluInfos(h int32) (infos []cndevSMluInfo, r int32, err error) {
	count := int32(16)
	for {
		buf := make([]cndevSMluInfo, count)
		for i := range buf {
			buf[i].Version = cndevVersion6
		}
		n := count
		r, err := l.calls.Do("cndevGetAllSMluInstanceInfo", func() int32 { return l.instances(&n, &buf[0], h) })
		if err != nil {
			return nil, 0, err
		}
		if r == cndevInsufficientSpace && n > count && n <= 4096 {
			count = n
			continue
		}
		if r != cndevSuccess {
			return nil, r, nil
		}
		if n < 0 || n > count {
			return nil, r, fmt.Errorf("%s cndevGetAllSMluInstanceInfo reports %d instances for room for %d", CNDevLibrary, n, count)
		}
		return buf[:n], r, nil
	}
}

// listSMLU lists the sMLU instances of a card.
func (l *CNDev) listSMLU(card int) ([]smluWithName, error) {
	what := fmt.Sprintf("listing the sMLU instances of chip %d", card)
	h, err := l.handle(what, card)
	if err != nil {
		return nil, err
	}
	infos, r, err := l.smluInfos(h)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := l.err(r); err != nil {
		return nil, fmt.Errorf("%s: %s cndevGetAllSMluInstanceInfo: %w", what, CNDevLibrary, err)
	}
	out := make([]smluWithName, 0, len(infos))
	for _, in := range infos {
		node := cstring(in.DevNodeName[:])
		m := smluNode.FindStringSubmatch(node)
		if m == nil {
			return nil, fmt.Errorf("%s: %s lists instance %d with device node %q, not /dev/cambricon-caps/cap_dev<N>_mi<K>", what, CNDevLibrary, in.InstanceID, node)
		}
		nodeCard, _ := strconv.Atoi(m[1])
		out = append(out, smluWithName{SMLU: SMLU{Card: nodeCard, InstanceID: int(in.InstanceID), ProfileName: cstring(in.ProfileName[:]),
			UUID: "MLU-" + cstring(in.UUID[:]), DeviceNode: node}, name: cstring(in.InstanceName[:]), profile: in.ProfileID})
	}
	return out, nil
}

func (t *PartitionTool) libList(l *CNDev, c inventory.Chip) ([]vendors.Instance, []smluWithName, error) {
	rows, err := l.listSMLU(c.Index)
	if err != nil {
		return nil, nil, err
	}
	plain := make([]SMLU, len(rows))
	for i, r := range rows {
		plain[i] = r.SMLU
	}
	insts, err := smluInstances(c, plain, CNDevLibrary+" cndevGetAllSMluInstanceInfo")
	return insts, rows, err
}

func (t *PartitionTool) libCreate(ctx context.Context, l *CNDev, c inventory.Chip, tmpl vendors.Template) (vendors.Instance, error) {
	what := fmt.Sprintf("creating a %s sMLU instance on chip %d", tmpl.Name, c.Index)
	h, err := l.handle(what, c.Index)
	if err != nil {
		return vendors.Instance{}, err
	}
	profile, err := t.libProfile(ctx, l, h, c, tmpl, what)
	if err != nil {
		return vendors.Instance{}, err
	}
	before, _, err := t.libList(l, c)
	if err != nil {
		return vendors.Instance{}, err
	}
	var mi int32
	name := []byte{0} // the library names the instance
	if err := l.call(what, "cndevCreateSMluInstanceByProfileId", func() int32 { return l.create(&mi, profile, h, &name[0]) }); err != nil {
		return vendors.Instance{}, err
	}
	after, _, err := t.libList(l, c)
	if err != nil {
		return vendors.Instance{}, fmt.Errorf("%s: checking the new instance: %w", what, err)
	}
	for _, a := range after {
		if _, old := vendors.FindInstance(before, a.ID); !old {
			if a.Template != tmpl.Name {
				return vendors.Instance{}, fmt.Errorf("%s: %s lists the new instance %d with profile %s", what, CNDevLibrary, a.ID, a.Template)
			}
			klog.FromContext(ctx).V(2).Info("Created an sMLU instance through CNDev", "chip", c.Index, "instance", a.ID, "profile", tmpl.Name)
			return a, nil
		}
	}
	return vendors.Instance{}, fmt.Errorf("%s: %s reported success but lists no new instance", what, CNDevLibrary)
}

// libDestroy destroys an instance by its name and then the dynamic
// profiles no instance uses any more, its own among them.
func (t *PartitionTool) libDestroy(ctx context.Context, l *CNDev, c inventory.Chip, inst vendors.Instance) error {
	_, rows, err := t.libList(l, c)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("destroying sMLU instance %d on chip %d", inst.ID, c.Index)
	for i, r := range rows {
		if r.InstanceID != inst.ID {
			continue
		}
		h, err := l.handle(what, c.Index)
		if err != nil {
			return err
		}
		name := append([]byte(r.name), 0)
		if err := l.call(what, "cndevDestroySMluInstanceByInstanceName", func() int32 { return l.destroy(h, &name[0]) }); err != nil {
			return err
		}
		t.dropUnusedProfiles(ctx, l, h, c, slices.Delete(rows, i, i+1))
		return nil
	}
	return nil // gone already
}

// libProfile returns the id of the profile named tmpl.Name on chip c
// (handle h): one the driver has (a default, or one made for an earlier
// share of that size: Cambricon's device plugin reuses those too,
// cambricon-k8s-device-plugin@3c9ed24 device-plugin/pkg/mlu/server.go
// lines 385-400), else a new one made with cndevCreateSMluProfileInfo
// (bindings.go lines 89-101: the IPU quota in percent, memory in bytes).
// The driver keeps at most 16 profiles (jklincn/cambricon-mlu-driver
// include/cndrv_smlu.h line 10, smlu/smlu_core.c lines 1053-1080), so the
// dynamic ones no instance uses, left by a create that failed or crashed,
// are dropped first.
func (t *PartitionTool) libProfile(ctx context.Context, l *CNDev, h int32, c inventory.Chip, tmpl vendors.Template, what string) (uint32, error) {
	ids := cndevSMluProfileIDInfo{Version: cndevVersion6}
	if err := l.call(what, "cndevGetSMluProfileIdInfo", func() int32 { return l.profileIDs(&ids, h) }); err != nil {
		return 0, err
	}
	for _, id := range ids.ProfileID[:max(0, min(int(ids.Count), len(ids.ProfileID)))] {
		info := cndevSMluProfileInfo{Version: cndevVersion6}
		if err := l.call(what, "cndevGetSMluProfileInfo", func() int32 { return l.profileInfo(&info, id, h) }); err != nil {
			return 0, err
		}
		if cstring(info.Name[:]) == tmpl.Name && id >= 0 {
			return uint32(id), nil
		}
	}
	if l.newProfile == nil || c.Cores <= 0 || tmpl.Cores*100%int64(c.Cores) != 0 {
		return 0, fmt.Errorf("%s: %s lists no such profile", what, CNDevLibrary)
	}
	_, rows, err := t.libList(l, c)
	if err != nil {
		return 0, err
	}
	t.dropUnusedProfiles(ctx, l, h, c, rows)
	set := cndevSMluSet{Version: cndevVersion6, MluQuota: uint32(tmpl.Cores * 100 / int64(c.Cores)), MemorySize: uint64(tmpl.MemoryBytes)}
	var id int32
	if err := l.call(what, "cndevCreateSMluProfileInfo", func() int32 { return l.newProfile(&set, &id, h) }); err != nil {
		return 0, err
	}
	klog.FromContext(ctx).V(2).Info("Created a dynamic sMLU profile through CNDev", "chip", c.Index, "profileID", id, "profile", tmpl.Name)
	return uint32(id), nil
}

// dropUnusedProfiles removes chip c's dynamic profiles that none of its
// instances (rows) uses. A failure is logged: the next create tries
// again.
func (t *PartitionTool) dropUnusedProfiles(ctx context.Context, l *CNDev, h int32, c inventory.Chip, rows []smluWithName) {
	if l.dropProfile == nil {
		return
	}
	logger := klog.FromContext(ctx)
	ids := cndevSMluProfileIDInfo{Version: cndevVersion6}
	what := fmt.Sprintf("removing the unused sMLU profiles of chip %d", c.Index)
	if err := l.call(what, "cndevGetSMluProfileIdInfo", func() int32 { return l.profileIDs(&ids, h) }); err != nil {
		logger.Error(err, "Cannot list the sMLU profiles to remove unused ones", "chip", c.Index)
		return
	}
	for _, id := range ids.ProfileID[:max(0, min(int(ids.Count), len(ids.ProfileID)))] {
		if id < smluDefaultProfiles || slices.ContainsFunc(rows, func(r smluWithName) bool { return r.profile == id }) {
			continue
		}
		if err := l.call(what, "cndevDestroySMluProfileInfo", func() int32 { return l.dropProfile(id, h) }); err != nil {
			logger.Error(err, "Cannot remove an unused dynamic sMLU profile", "chip", c.Index, "profileID", id)
			continue
		}
		logger.V(2).Info("Removed an unused dynamic sMLU profile", "chip", c.Index, "profileID", id)
	}
}
