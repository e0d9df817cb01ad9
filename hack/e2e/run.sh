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
bash "$REPO/hack/e2e/build.sh" >/dev/null
# The image the chart's pods run on the real node (make image, linux/amd64
# only: the node is this machine), imported into its containerd.
CACHE=${ACCEL_DRA_E2E_CACHE:-$REPO/_output/e2e-cache}
export ACCEL_DRA_E2E_IMAGE=${ACCEL_DRA_E2E_IMAGE:-$CACHE/accel-dra-image-amd64.tar}
make -C "$REPO" --no-print-directory image IMAGE_PLATFORMS=linux/amd64 IMAGE_ARCHIVE="$ACCEL_DRA_E2E_IMAGE" >&2
built=$SECONDS
echo "run.sh: binaries ready in $((built - start))s" >&2

rc=0
go -C "$REPO" test -tags e2e ./test/e2e/ -count=1 -v -timeout "${ACCEL_DRA_E2E_TIMEOUT:-60m}" "$@" || rc=$?
echo "run.sh: build $((built - start))s, tests $((SECONDS - built))s, total $((SECONDS - start))s, exit $rc" >&2
exit $rc
