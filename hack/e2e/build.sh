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

# Builds everything the tier-4 e2e cluster runs, from the Go module proxy and
# this repository, into a cache keyed by version:
#
#   etcd 3.7.3                       hack/e2e/etcd/go.mod
#   kube-apiserver, kube-scheduler,  hack/e2e/k8s/go.mod (k8s.io/kubernetes
#   kube-controller-manager, kubelet   v1.37.2 + staging replaces)
#   kubectl                          the same module and version, a
#                                      component of its own (see build_kubectl)
#   containerd, shim, ctr 2.4.2      go install -tags no_btrfs,..., without cgo
#   runc 1.4.4                       go install -tags seccomp (libseccomp-dev)
#   kwok 0.8.0 + its stage files     hack/e2e/kwok/go.mod (the k8s.io
#                                      libraries of this repository)
#   kueue 0.19.2 + its CRDs and      hack/e2e/k8s/go.mod, with Kubernetes'
#     webhook configurations           k8s.io libraries; the CRDs and webhooks
#                                      from the module's config/
#   volcano 1.14.1 vc-scheduler,     hack/e2e/volcano/go.mod (volcano.sh/apis
#     vc-controller-manager, CRDs      v1.14.0 from the proxy, k8s 0.34.1)
#   helm                             hack/tools/go.mod (if present)
#   pause                            hack/e2e/pause (sandbox image binary)
#   ascend-runtime                   hack/e2e/ascend-runtime (a stand-in for
#                                      ascend-docker-runtime, RuntimeClass ascend)
#   accel-dra-kubeletplugin,         this repository (rebuilt every time; the
#   accel-dra                          Go build cache makes that quick)
#
# and installs the Debian packages the node needs (containernetworking-plugins,
# libseccomp-dev, pkg-config, busybox-static) when they are missing.
#
# Layout: $CACHE/<component>-<version>/ holds the binaries and a .stamp of
# the inputs; $CACHE/bin/ links the current ones. A component is rebuilt
# only when its stamp differs. Builds run one after another: the kube-apiserver
# link alone peaks near 3 GB on two cores.
#
# Usage: build.sh [COMPONENT...]: with names (e.g. `build.sh kueue volcano`),
# builds only those components and not this repository's binaries.
# Environment: ACCEL_DRA_E2E_CACHE (default $REPO/_output/e2e-cache),
# ACCEL_DRA_E2E_LATER (components a run without names leaves out).
# Prints the bin directory on the last line of stdout.
set -euo pipefail
ONLY=("$@")

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CACHE=${ACCEL_DRA_E2E_CACHE:-$REPO/_output/e2e-cache}
mkdir -p "$CACHE/bin"
CACHE=$(cd "$CACHE" && pwd)
TIMES=$CACHE/build-times.txt

K8S_VERSION=v1.37.2
ETCD_VERSION=v3.7.3
CONTAINERD_VERSION=v2.4.2
RUNC_VERSION=v1.4.4
KWOK_VERSION=v0.8.0
KUEUE_VERSION=$(go -C "$REPO/hack/e2e/k8s" list -m -f '{{.Version}}' sigs.k8s.io/kueue)
VOLCANO_VERSION=v1.14.1

GO_VERSION=$(go env GOVERSION)

# Everything builds without cgo and with -trimpath, as make builds this
# repository: Kubernetes then reuses the k8s.io/* v0.37.2, grpc and protobuf
# packages make test compiled, and the kubelet is built as upstream builds
# it since 1.36 (without cgo, kubernetes#135870). containerd and runc keep
# cgo, as their releases do (runc links libseccomp).
export CGO_ENABLED=0

log() { echo "build.sh: $*" >&2; }

apt_deps() {
	local missing=()
	for p in containernetworking-plugins libseccomp-dev pkg-config busybox-static; do
		dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	log "installing Debian packages: ${missing[*]}"
	if [ "$(id -u)" -ne 0 ]; then
		log "need root to apt-get install ${missing[*]}"
		return 1
	fi
	apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
}

# prometheus (and its promtool) for the chip telemetry tests: a server the
# tests run on loopback. Without the recommended exporters, and the
# package's own service is not wanted running: the tests start their own.
apt_prometheus() {
	dpkg -s prometheus >/dev/null 2>&1 && return 0
	log "installing Debian package: prometheus"
	if [ "$(id -u)" -ne 0 ]; then
		log "need root to apt-get install prometheus"
		return 1
	fi
	apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >&2
}

sha() { cat "$@" | sha256sum | cut -c1-16; }

# wanted NAME: whether this run builds NAME (every component when no
# names were given on the command line, but those in
# ACCEL_DRA_E2E_LATER, which hack/e2e/run.sh builds while the first tests
# run).
wanted() {
	local n
	if [ ${#ONLY[@]} -eq 0 ]; then
		for n in ${ACCEL_DRA_E2E_LATER:-}; do [ "$n" = "$1" ] && return 1; done
		return 0
	fi
	for n in "${ONLY[@]}"; do [ "$n" = "$1" ] && return 0; done
	return 1
}

# component NAME VERSION STAMP BUILD_FUNCTION: runs BUILD_FUNCTION with the
# output directory as $1 unless $CACHE/NAME-VERSION/.stamp equals STAMP;
# records the wall time of a real build in build-times.txt. A lock per
# component lets two runs share the cache: hack/e2e/run.sh builds Volcano
# while its first round of tests runs, and a test that needs it waits for
# that build instead of building it again.
component() {
	local name=$1 version=$2 stamp=$3 fn=$4
	local dir=$CACHE/$name-$version
	wanted "$name" || return 0
	local lock
	exec {lock}>"$CACHE/.$name.lock"
	if ! flock -n "$lock"; then
		log "$name $version: waiting for another build.sh building it"
		flock "$lock"
	fi
	if [ -f "$dir/.stamp" ] && [ "$(cat "$dir/.stamp")" = "$stamp" ]; then
		log "$name $version: cached"
	else
		log "$name $version: building"
		rm -rf "$dir.tmp"
		mkdir -p "$dir.tmp"
		local start=$SECONDS
		"$fn" "$dir.tmp"
		local took=$((SECONDS - start))
		echo "$stamp" >"$dir.tmp/.stamp"
		rm -rf "$dir"
		mv "$dir.tmp" "$dir"
		log "$name $version: built in ${took}s"
		printf '%s\t%s\t%s\t%ss\n' "$(date -u +%FT%TZ)" "$name" "$version" "$took" >>"$TIMES"
	fi
	local f
	for f in "$dir"/*; do
		ln -sfn "$f" "$CACHE/bin/$(basename "$f")"
	done
	exec {lock}>&-
}

# -s -w: no symbol table or DWARF to write at link time; the tests never
# debug etcd.
build_etcd() {
	go -C "$REPO/hack/e2e/etcd" build -trimpath -ldflags "-s -w" -o "$1/etcd" go.etcd.io/etcd/server/v3
}

K8S_LDFLAGS="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 -X k8s.io/component-base/version.gitTreeState=clean"
build_kubernetes() {
	go -C "$REPO/hack/e2e/k8s" build -trimpath -ldflags "$K8S_LDFLAGS" -o "$1/" \
		k8s.io/kubernetes/cmd/kube-apiserver \
		k8s.io/kubernetes/cmd/kube-controller-manager \
		k8s.io/kubernetes/cmd/kube-scheduler \
		k8s.io/kubernetes/cmd/kubelet
}

# kubectl, for the kubectl plugin test (`kubectl accel-dra`): built from
# hack/e2e/k8s/go.mod, the same k8s.io/kubernetes and staging versions as
# the control plane, but in a copy of the module where Go may add the
# requirements only kubectl needs (kustomize, ...), so hack/e2e/k8s/go.sum
# and with it the kubernetes component's stamp stay as they are: adding
# kubectl does not rebuild the cached kube-apiserver. make's GOFLAGS (no
# DWARF) stay, so that it takes Kubernetes' compiled packages.
build_kubectl() {
	local mod
	mod=$(mktemp -d)
	cp "$REPO/hack/e2e/k8s/go.mod" "$REPO/hack/e2e/k8s/go.sum" "$mod/"
	GOFLAGS="${GOFLAGS:-} -mod=mod" go -C "$mod" build -trimpath -ldflags "$K8S_LDFLAGS" -o "$1/kubectl" k8s.io/kubernetes/cmd/kubectl
	rm -rf "$mod"
}

# Without cgo, as containerd's own Makefile builds its shim
# (SHIM_CGO_ENABLED ?= 0): no package of containerd v2.4.2 imports "C"
# once no_btrfs leaves out the btrfs snapshotter, and the cgo variants of
# net and os/user are the only difference. Built so, and -trimpath, it
# takes the standard library every other build here compiles (cgo off,
# trimmed) instead of compiling its own, and links without the C linker.
# The devmapper and zfs snapshotters, which the node's config disables
# (test/e2e/framework/node.go), and the OpenTelemetry exporters of its
# tracing plugin, which nothing configures, are left out with containerd's
# own build tags (BUILDING.md): 49 packages fewer to compile.
CONTAINERD_TAGS=no_btrfs,no_devmapper,no_zfs,no_tracing
build_containerd() {
	GOBIN=$1 CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -buildvcs=false" go install -trimpath -tags "$CONTAINERD_TAGS" \
		-ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION" \
		github.com/containerd/containerd/v2/cmd/containerd@$CONTAINERD_VERSION \
		github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$CONTAINERD_VERSION \
		github.com/containerd/containerd/v2/cmd/ctr@$CONTAINERD_VERSION
}

build_runc() {
	GOBIN=$1 CGO_ENABLED=1 go install -tags seccomp \
		-ldflags "-X main.version=${RUNC_VERSION#v}" \
		github.com/opencontainers/runc@$RUNC_VERSION
}

# module_dir MODULE[@VERSION]: the module's directory in the Go module cache,
# downloaded from the proxy if needed (without a version, the one the
# current directory's go.mod selects).
module_dir() {
	go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'
}

# join_yaml FILE...: the files as one multi-document YAML stream.
join_yaml() {
	local f first=1
	for f in "$@"; do
		[ $first = 1 ] || echo '---'
		first=0
		cat "$f"
	done
}

# kwok's stages: nodes become Ready and keep a lease; pods become Ready and
# are finished when deleted. pod/fast/pod-complete.yaml is left out on
# purpose: it ends Job pods at once, which would release their claims
# while the tests look at them (the demo containers sleep for an hour).
KWOK_STAGES="node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml pod/fast/pod-ready.yaml pod/fast/pod-delete.yaml"
build_kwok() {
	go -C "$REPO/hack/e2e/kwok" build -trimpath -ldflags "-s -w" -o "$1/kwok" sigs.k8s.io/kwok/cmd/kwok
	local s f files=()
	s=$(go -C "$REPO/hack/e2e/kwok" list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage
	for f in $KWOK_STAGES; do files+=("$s/$f"); done
	join_yaml "${files[@]}" >"$1/kwok-stages.yaml"
}

# Kueue: the manager binary, and from the same module version the CRDs
# (config/components/crd/bases, no conversion webhook: the tests use
# v1beta2, the storage version) and the webhook configurations
# (config/components/webhook/manifests.yaml), which the e2e framework
# points at the manager by URL (test/e2e/framework/kueue.go).
#
# Built from hack/e2e/k8s/go.mod, Kubernetes' build module, with its and
# this repository's k8s.io v0.37.2 libraries instead of its own v0.36.2,
# so that it takes the packages make test and Kubernetes compiled (CI's
# budget in test/README.md). Two things of v0.19.2 do not compile
# against v0.37, and neither runs here:
# - sigs.k8s.io/scheduler-library (the alpha SchedulerLibraryIntegration
#   gate, off by default) is left out with Kueue's own build tag
#   exclude_scheduler_library;
# - kubeflow/trainer's generated OpenAPI table names core/v1
#   PodStatusResult, which k8s.io/api v0.37 no longer has. Kueue never
#   serves trainer's OpenAPI; the build replaces the module with a copy
#   without that line (-modfile: the replace is the build's, not
#   go.mod's, as Go refuses an -overlay of the module cache).
KUEUE_TRAINER_LINE='corev1.PodStatusResult{}.OpenAPIModelName()'
build_kueue() {
	# The copy and the build's go.mod in the output directory, so that a
	# failed build leaves them where the next one clears them (component).
	local mod=$REPO/hack/e2e/k8s tmp=$1/.build openapi
	mkdir -p "$tmp"
	# go mod download, not go list -m: from an empty module cache the
	# module is not there yet before the build.
	cp -r "$(cd "$mod" && module_dir github.com/kubeflow/trainer/v2)" "$tmp/trainer"
	chmod -R u+w "$tmp/trainer"
	openapi=$tmp/trainer/pkg/apis/trainer/v1alpha1/zz_generated.openapi.go
	if ! grep -qF "$KUEUE_TRAINER_LINE" "$openapi"; then
		log "kueue: kubeflow/trainer no longer names $KUEUE_TRAINER_LINE: drop its replacement in build_kueue"
		return 1
	fi
	grep -vF "$KUEUE_TRAINER_LINE" "$openapi" >"$openapi.new"
	mv "$openapi.new" "$openapi"
	cp "$mod/go.mod" "$mod/go.sum" "$tmp/"
	go mod edit -replace=github.com/kubeflow/trainer/v2="$tmp/trainer" "$tmp/go.mod"
	go -C "$mod" build -modfile "$tmp/go.mod" -trimpath -tags exclude_scheduler_library \
		-ldflags "-s -w" -o "$1/kueue" sigs.k8s.io/kueue/cmd/kueue
	rm -rf "$tmp"
	local dir
	dir=$(go -C "$mod" list -m -f '{{.Dir}}' sigs.k8s.io/kueue)
	join_yaml "$dir"/config/components/crd/bases/*.yaml >"$1/kueue-crds.yaml"
	cp "$dir/config/components/webhook/manifests.yaml" "$1/kueue-webhooks.yaml"
	chmod u+w "$1/kueue-webhooks.yaml"
}

# Volcano v1.14.1, the newest release the proxy can build (its volcano.sh/apis
# v1.14.0 is served): the scheduler and the controller-manager (Volcano
# Jobs and PodGroups; the tests run without the admission webhook), from
# hack/e2e/volcano/go.mod, and the CRDs of the same module version.
VOLCANO_LDFLAGS="-s -w -X volcano.sh/volcano/pkg/version.Version=$VOLCANO_VERSION"
build_volcano() {
	go -C "$REPO/hack/e2e/volcano" build -trimpath -ldflags "$VOLCANO_LDFLAGS" -o "$1/vc-scheduler" volcano.sh/volcano/cmd/scheduler
	go -C "$REPO/hack/e2e/volcano" build -trimpath -ldflags "$VOLCANO_LDFLAGS" -o "$1/vc-controller-manager" volcano.sh/volcano/cmd/controller-manager
	local mod
	mod=$(go -C "$REPO/hack/e2e/volcano" list -m -f '{{.Dir}}' volcano.sh/volcano)
	join_yaml "$mod"/installer/helm/chart/volcano/crd/bases/*.yaml >"$1/volcano-crds.yaml"
}

build_helm() {
	CGO_ENABLED=0 go -C "$REPO/hack/tools" build -trimpath -o "$1/helm" helm.sh/helm/v4/cmd/helm
}

build_pause() {
	CGO_ENABLED=0 go -C "$REPO/hack/e2e/pause" build -trimpath -ldflags "-s -w" -o "$1/pause" .
}

build_ascend_runtime() {
	CGO_ENABLED=0 go -C "$REPO/hack/e2e/ascend-runtime" build -trimpath -ldflags "-s -w" -o "$1/ascend-runtime" .
}

# One apt-get at a time, when two runs share the cache.
exec {apt_lock}>"$CACHE/.apt.lock"
flock "$apt_lock"
apt_deps
apt_prometheus
exec {apt_lock}>&-

# First the components that share no compiled package with this
# repository (their own dependency versions), then kwok, Kubernetes, Kueue
# and kubectl, whose modules require the same versions as this one
# (test/imports/modules_test.go): after make test, or after another build
# that compiled the k8s.io libraries, Go's build cache holds most of what
# they import, and Kueue comes after Kubernetes for the k8s.io/apiserver
# and controller packages both import. .ci/run runs the e2e tier beside
# make test, so the later they come, the more make test has compiled for
# them.
component etcd $ETCD_VERSION "$ETCD_VERSION $GO_VERSION nocgo -s -w $(sha "$REPO/hack/e2e/etcd/go.mod" "$REPO/hack/e2e/etcd/go.sum")" build_etcd
component containerd $CONTAINERD_VERSION "$CONTAINERD_VERSION $GO_VERSION $CONTAINERD_TAGS nocgo trimpath" build_containerd
component runc $RUNC_VERSION "$RUNC_VERSION $GO_VERSION seccomp" build_runc
component kwok $KWOK_VERSION "$KWOK_VERSION $GO_VERSION nocgo $KWOK_STAGES $(sha "$REPO/hack/e2e/kwok/go.mod" "$REPO/hack/e2e/kwok/go.sum")" build_kwok
component kubernetes $K8S_VERSION "$K8S_VERSION $GO_VERSION nocgo $K8S_LDFLAGS $(sha "$REPO/hack/e2e/k8s/go.mod" "$REPO/hack/e2e/k8s/go.sum")" build_kubernetes
component kueue $KUEUE_VERSION "$KUEUE_VERSION $GO_VERSION nocgo k8s.io-shared $(sha "$REPO/hack/e2e/k8s/go.mod" "$REPO/hack/e2e/k8s/go.sum")" build_kueue
component kubectl $K8S_VERSION "$K8S_VERSION $GO_VERSION nocgo $K8S_LDFLAGS $(sha "$REPO/hack/e2e/k8s/go.mod" "$REPO/hack/e2e/k8s/go.sum")" build_kubectl
# Volcano last: only two tests need it, and hack/e2e/run.sh runs them
# after the others, so that it builds while those run.
component volcano $VOLCANO_VERSION "$VOLCANO_VERSION $GO_VERSION nocgo $VOLCANO_LDFLAGS $(sha "$REPO/hack/e2e/volcano/go.mod" "$REPO/hack/e2e/volcano/go.sum")" build_volcano
component pause "$(sha "$REPO/hack/e2e/pause/main.go" "$REPO/hack/e2e/pause/go.mod")" "$GO_VERSION" build_pause
component ascend-runtime "$(sha "$REPO/hack/e2e/ascend-runtime/main.go" "$REPO/hack/e2e/ascend-runtime/go.mod")" "$GO_VERSION" build_ascend_runtime
if [ -f "$REPO/hack/tools/go.mod" ] && grep -q 'helm.sh/helm/v4' "$REPO/hack/tools/go.mod"; then
	component helm "$(sha "$REPO/hack/tools/go.mod" "$REPO/hack/tools/go.sum")" "$GO_VERSION" build_helm
fi

# Our own binaries, always from the work tree, unless only some
# components were asked for.
if [ ${#ONLY[@]} -gt 0 ]; then
	echo "$CACHE/bin"
	exit 0
fi
log "accel-dra: building from $REPO"
start=$SECONDS
mkdir -p "$CACHE/accel-dra"
CGO_ENABLED=0 go -C "$REPO" build -trimpath -o "$CACHE/accel-dra/" ./cmd/accel-dra-kubeletplugin ./cmd/accel-dra-cdi-hook ./cmd/accel-dra
for f in "$CACHE"/accel-dra/*; do ln -sfn "$f" "$CACHE/bin/$(basename "$f")"; done
log "accel-dra: built in $((SECONDS - start))s"

echo "$CACHE/bin"
