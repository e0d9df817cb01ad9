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

# Brings the e2e cluster of test/e2e up with the demo applied and leaves it
# running (`up`), shows how to reach it (`status`), or stops it and removes
# everything it left on the machine (`down`). Needs root.
#
#   hack/e2e/demo-cluster.sh up|status|down
#
# `up` prints, per demo pod, the chips it got and (on the real node) what
# its container sees, then the kubeconfig path. Same environment as run.sh.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
verb=${1:-}
case "$verb" in
up) bash "$REPO/hack/e2e/build.sh" >/dev/null ;;
down | status) ;;
*)
	echo "usage: $0 up|status|down" >&2
	exit 2
	;;
esac
exec go -C "$REPO" run -tags e2e ./test/e2e/cmd/demo-cluster "$verb"
