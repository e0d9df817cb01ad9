#!/usr/bin/env bash
# Copyright The accel-dra Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

# discover.sh HOST_BIN ARM64_BIN: the image's arm64 accel-dra (ARM64_BIN,
# built as make image builds it) discovers a mock-library node under
# qemu-user, and must print what the host's build (HOST_BIN) prints for
# the same node: the ResourceSlices and which call read each fact. Each
# node is a fixture root with the vendor's mock library, built for the
# binary's architecture, where the node agent looks for the real one
# (/usr/local/dcmi/libdcmi.so, /usr/local/neuware/lib64/libcndev.so), so
# the arm64 binary's purego calls into an arm64 libdcmi.so and libcndev.so
# are what is tested. ARM64_EXEC (the emulator command) and ARM64_CC (the
# cross compiler) come from the Makefile.
set -euo pipefail

host_bin=$1 arm64_bin=$2
: "${ARM64_EXEC:=qemu-aarch64-static -L /usr/aarch64-linux-gnu}"
: "${ARM64_CC:=aarch64-linux-gnu-gcc}"
repo=$(cd "$(dirname "$0")/../.." && pwd)
dcmi=$repo/pkg/vendors/ascend/testdata
cndev=$repo/pkg/vendors/cambricon/testdata
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() { echo "hack/arm64/discover.sh: $*" >&2; exit 1; }

# node NAME FIXTURE_ROOT LIB_PATH C_SOURCE INCLUDE_DIR: a copy of the
# fixture root per architecture, with that architecture's mock library.
node() {
	local name=$1 root=$2 lib=$3 src=$4 inc=$5 arch cc
	for arch in host arm64; do
		cc=gcc
		[ "$arch" = arm64 ] && cc=$ARM64_CC
		mkdir -p "$work/$arch/$name"
		cp -a "$root/." "$work/$arch/$name/"
		mkdir -p "$(dirname "$work/$arch/$name$lib")"
		"$cc" -shared -fPIC -I "$inc" -o "$work/$arch/$name$lib" "$src"
	done
}
node atlas-800t-a2 "$dcmi/atlas-800t-a2/root" /usr/local/dcmi/libdcmi.so "$dcmi/dcmi/mock_dcmi.c" "$dcmi/dcmi"
# An Atlas 850 (Ascend 950DT), read through DCMI v2 (mock_dcmiv2.c): the
# A2's root serves, its eight device files being all the 950 node needs
# (a unified-bus board has no PCIe address to read).
node atlas-850 "$dcmi/atlas-800t-a2/root" /usr/local/dcmi/libdcmi.so "$dcmi/dcmi/mock_dcmi.c" "$dcmi/dcmi"
node mlu370-x8 "$cndev/mlu370-x8/root" /usr/local/neuware/lib64/libcndev.so "$cndev/cndev/mock_cndev.c" "$cndev/cndev"

# The mocks' fixtures (the chips each library reports: the DCMI one per
# node, below); no vendor tool is on PATH, so a fact the library did not
# read is missing, not read by npu-smi or cnmon.
export ACCEL_DRA_CNDEV_MOCK_FIXTURE=$cndev/cndev/mlu370-x8.txt
read -ra emulator <<<"$ARM64_EXEC"
emulator[0]=$(command -v "${emulator[0]}") || fail "no ${emulator[0]}: make testdeps installs it"

for name in atlas-800t-a2 atlas-850 mlu370-x8; do
	# Each Ascend node's DCMI fixture has the node's name.
	export ACCEL_DRA_DCMI_FIXTURE=$dcmi/dcmi/$name.txt
	for out in yaml sources; do
		for arch in host arm64; do
			bin=$host_bin run=()
			[ "$arch" = arm64 ] && bin=$arm64_bin run=("${emulator[@]}")
			export ACCEL_DRA_DCMI_STATE=$work/$arch/$name.dcmi-state ACCEL_DRA_CNDEV_MOCK_STATE=$work/$arch/$name.cndev-state
			PATH=/nonexistent "${run[@]}" "$bin" discover --root "$work/$arch/$name" -o "$out" >"$work/$arch.$name.$out" 2>"$work/$arch.$name.$out.log" ||
				fail "$arch accel-dra discover --root <$name> -o $out failed: $(cat "$work/$arch.$name.$out.log")"
		done
		diff -u "$work/host.$name.$out" "$work/arm64.$name.$out" ||
			fail "the arm64 binary discovers $name differently from the host's (above)"
	done
	lib=libdcmi.so
	[ "$name" = mlu370-x8 ] && lib=libcndev.so
	# Every chip's model and memory were read through the library.
	for fact in model memory; do
		grep -E "^[a-z]+-[0-9]+ +$fact " "$work/arm64.$name.sources" | grep -qv " $lib " &&
			fail "arm64 $name: a chip's $fact was not read by $lib: $(grep " $fact " "$work/arm64.$name.sources")"
		grep -qE "^[a-z]+-[0-9]+ +$fact +$lib " "$work/arm64.$name.sources" ||
			fail "arm64 $name: no chip's $fact was read by $lib: $(cat "$work/arm64.$name.sources" "$work/arm64.$name.sources.log")"
	done
	echo "arm64 accel-dra discovered $name through $lib: $(grep -cE "^[a-z]+-[0-9]+ +model " "$work/arm64.$name.sources") chips, as the host's build"
done
