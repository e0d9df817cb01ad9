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

# Tier 4 of docs/architecture.md: builds the cluster's binaries (hack/e2e/build.sh,
# cached) and runs the e2e tests of test/e2e against a real control plane,
# a real containerd + kubelet node and kwok nodes. Needs root.
#
#   hack/e2e/run.sh [go test flags, e.g. -run TestKilling]
#
# Environment: ACCEL_DRA_E2E_CACHE (build cache, default _output/e2e-cache),
# ACCEL_DRA_E2E_ARTIFACTS (component logs, default
# _output/e2e-artifacts/e2e-<time>), ACCEL_DRA_E2E_TIMEOUT (go test
# -timeout, default 60m). Exits with the tests' exit code.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
start=$SECONDS
# Without arguments the tests run in two rounds, each against a cluster of
# its own (about 15 s to start): first every test that does not need the
# components in LATER, while build.sh builds those on the CPU the tests
# leave idle (they mostly wait on the cluster), then the tests that do
# (LATE_TESTS). A test that needs a LATER component in the first round
# still passes: the framework waits for its build (ensureBuilt). With
# arguments (go test flags) everything is built first and one round runs.
LATER=volcano
LATE_TESTS='^(TestGangsStayInOneSuperPod|TestVolcanoJobsOverDRAClaims)$'
rounds=2
[ $# -eq 0 ] || rounds=1
if [ $rounds = 2 ]; then
	ACCEL_DRA_E2E_LATER=$LATER bash "$REPO/hack/e2e/build.sh" >/dev/null
else
	bash "$REPO/hack/e2e/build.sh" >/dev/null
fi
# The image the chart's pods run on the real node (make image, linux/amd64
# only: the node is this machine), imported into its containerd. Its
# binaries and Debian packages go to directories of the e2e tier's own,
# not make's bin/ and _output/image: .ci/run runs make test, whose arm64
# and image tiers write those, beside this.
CACHE=${ACCEL_DRA_E2E_CACHE:-$REPO/_output/e2e-cache}
export ACCEL_DRA_E2E_IMAGE=${ACCEL_DRA_E2E_IMAGE:-$CACHE/accel-dra-image-amd64.tar}
make -C "$REPO" --no-print-directory image IMAGE_PLATFORMS=linux/amd64 IMAGE_ARCHIVE="$ACCEL_DRA_E2E_IMAGE" \
	BIN=_output/e2e-bin IMAGE_OUT="$CACHE/image" >&2
built=$SECONDS
echo "run.sh: binaries ready in $((built - start))s" >&2

# -vet=off: make lint's golangci-lint vets test/e2e with the e2e tag; go
# test's own vet would analyze each of its dependencies for their facts.
gotest() {
	go -C "$REPO" test -tags e2e -vet=off ./test/e2e/ -count=1 -v -timeout "${ACCEL_DRA_E2E_TIMEOUT:-60m}" "$@"
}
rc=0
if [ $rounds = 1 ]; then
	gotest "$@" || rc=$?
	echo "run.sh: build $((built - start))s, tests $((SECONDS - built))s, total $((SECONDS - start))s, exit $rc" >&2
	exit $rc
fi
later_log=$(mktemp /tmp/e2e-later-build.XXXXXX)
bash "$REPO/hack/e2e/build.sh" $LATER >"$later_log" 2>&1 &
later=$!
trap 'kill "$later" 2>/dev/null || true' EXIT
gotest -skip "$LATE_TESTS" || rc=$?
first=$SECONDS
if ! wait "$later"; then
	echo "run.sh: building $LATER failed:" >&2
	cat "$later_log" >&2
	rc=1
fi
echo "run.sh: $LATER ready $((SECONDS - first))s after the first round" >&2
# The second cluster's component logs go next to the first's.
[ -z "${ACCEL_DRA_E2E_ARTIFACTS:-}" ] || export ACCEL_DRA_E2E_ARTIFACTS=$ACCEL_DRA_E2E_ARTIFACTS-round2
gotest -run "$LATE_TESTS" || { r=$?; [ $rc -ne 0 ] || rc=$r; }
rm -f "$later_log"
echo "run.sh: build $((built - start))s, first round $((first - built))s, second round $((SECONDS - first))s, total $((SECONDS - start))s, exit $rc" >&2
exit $rc
