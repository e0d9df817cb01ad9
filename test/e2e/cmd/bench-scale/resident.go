//go:build e2e

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

package main

import (
	"bufio"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// residentShare is how many resident bytes of a binary's file-backed
// pages one package (or section, where no symbol covers them) holds.
type residentShare struct {
	name  string
	bytes float64
}

// residentByPackage attributes the resident pages of the mappings of bin
// in process pid (from /proc/<pid>/pagemap: needs root) to the packages
// whose symbols lie in them, pro rata by bytes, reading the symbols from
// symbols (an unstripped build of bin with the same layout: -s -w only
// leave out the symbol table and DWARF, not loaded sections). Bytes no
// symbol covers count for their ELF section (.gopclntab, the function
// tables: no symbol of its own). It returns the shares, largest first,
// and the total.
func residentByPackage(pid int, bin, symbols string) ([]residentShare, float64, error) {
	present, err := residentPages(pid, bin)
	if err != nil {
		return nil, 0, err
	}
	f, err := elf.Open(symbols)
	if err != nil {
		return nil, 0, fmt.Errorf("reading the symbols of %s: %w", symbols, err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		return nil, 0, fmt.Errorf("reading the symbols of %s: %w", symbols, err)
	}
	sort.Slice(syms, func(i, j int) bool { return syms[i].Value < syms[j].Value })
	shares := map[string]float64{}
	const page = 4096
	total := 0.0
	for _, addr := range present {
		total += page
		covered := uint64(0)
		// The first symbol ending after the page's start.
		i := sort.Search(len(syms), func(i int) bool { return syms[i].Value+syms[i].Size > addr })
		for ; i < len(syms) && syms[i].Value < addr+page; i++ {
			s := syms[i]
			if s.Size == 0 || elf.ST_TYPE(s.Info) == elf.STT_SECTION {
				continue
			}
			lo, hi := max(s.Value, addr), min(s.Value+s.Size, addr+page)
			if hi > lo {
				shares[packageOf(s.Name)] += float64(hi - lo)
				covered += hi - lo
			}
		}
		if covered < page {
			section := "(no section)"
			for _, sec := range f.Sections {
				if sec.Addr <= addr && addr < sec.Addr+sec.Size {
					section = sec.Name
				}
			}
			shares[section] += float64(page - min(covered, page))
		}
	}
	out := make([]residentShare, 0, len(shares))
	for n, b := range shares {
		out = append(out, residentShare{n, b})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].bytes > out[j].bytes })
	return out, total, nil
}

// packageGroup puts a package into the group the report sums: every API
// group of k8s.io/api together, the typed clients, the apply
// configurations, the rest by module.
func packageGroup(pkg string) string {
	for _, prefix := range []string{
		"k8s.io/api/", "k8s.io/client-go/kubernetes/typed/", "k8s.io/client-go/applyconfigurations/",
		"k8s.io/client-go/informers/", "k8s.io/client-go/listers/",
	} {
		if strings.HasPrefix(pkg, prefix) {
			return prefix + "*"
		}
	}
	for _, module := range []string{
		"k8s.io/client-go", "k8s.io/apimachinery", "google.golang.org/grpc", "google.golang.org/protobuf",
		"github.com/google/gnostic-models", "github.com/prometheus", "github.com/accel-dra/accel-dra",
		"k8s.io/dynamic-resource-allocation", "k8s.io/kube-openapi", "sigs.k8s.io", "go.yaml.in", "github.com/json-iterator",
		"github.com/fxamacker/cbor", "k8s.io/klog", "k8s.io/component-base", "tags.cncf.io/container-device-interface",
	} {
		if strings.HasPrefix(pkg, module) {
			return module
		}
	}
	if !strings.Contains(pkg, ".") || strings.HasPrefix(pkg, ".") {
		return "std, runtime, sections: " + pkg
	}
	return pkg
}

// packageOf is the import path of a Go symbol name, e.g. of
// type:*k8s.io/api/core/v1.Pod, an itab's or k8s.io/api/core/v1.(*Pod).Reset.
func packageOf(name string) string {
	for _, prefix := range []string{"type:", "go:itab.", "go:info.", "*"} {
		name = strings.TrimPrefix(name, prefix)
	}
	if strings.HasPrefix(name, "go:") || strings.HasPrefix(name, "runtime.") {
		return "runtime"
	}
	slash := strings.LastIndex(name, "/")
	dot := strings.Index(name[slash+1:], ".")
	if dot < 0 {
		return name
	}
	return name[:slash+1+dot]
}

// residentPages lists the page addresses of pid's mappings of bin that are
// resident, from /proc/<pid>/maps and /proc/<pid>/pagemap (bit 63: page
// present).
func residentPages(pid int, bin string) ([]uint64, error) {
	abs, err := filepath.Abs(bin)
	if err != nil {
		return nil, err
	}
	maps, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, fmt.Errorf("reading the agent's mappings: %w", err)
	}
	defer maps.Close()
	pagemap, err := os.Open(fmt.Sprintf("/proc/%d/pagemap", pid))
	if err != nil {
		return nil, fmt.Errorf("reading the agent's page map: %w", err)
	}
	defer pagemap.Close()
	var out []uint64
	sc := bufio.NewScanner(maps)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[5] != abs {
			continue
		}
		lo, hi, _ := strings.Cut(fields[0], "-")
		start, err := strconv.ParseUint(lo, 16, 64)
		if err != nil {
			return nil, fmt.Errorf("parsing the mapping %q: %w", sc.Text(), err)
		}
		end, err := strconv.ParseUint(hi, 16, 64)
		if err != nil {
			return nil, fmt.Errorf("parsing the mapping %q: %w", sc.Text(), err)
		}
		entries := make([]byte, (end-start)/4096*8)
		if _, err := pagemap.ReadAt(entries, int64(start/4096*8)); err != nil {
			return nil, fmt.Errorf("reading the agent's page map: %w", err)
		}
		for i := 0; i < len(entries); i += 8 {
			if binary.LittleEndian.Uint64(entries[i:])&(1<<63) != 0 {
				out = append(out, start+uint64(i/8)*4096)
			}
		}
	}
	return out, sc.Err()
}
