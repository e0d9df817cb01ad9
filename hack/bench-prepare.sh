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

# Runs BenchmarkPrepare (test/plugin) and prints, per case, the prepare's
# and its floor's p50 / p99 / p99.9 and their ratios, with the load
# average before, at each case's start and after: the numbers
# docs/benchmarks.md reports. Needs root (fake device nodes), like make test.
#
#   hack/bench-prepare.sh                       # 2000 rounds per case
#   BENCHTIME=300x hack/bench-prepare.sh        # quicker, p99.9 meaningless
#   BENCH='Prepare$/huawei/16-chips' hack/bench-prepare.sh
#   TRACE=/tmp/prepare-trace hack/bench-prepare.sh   # + where the time went
#
# With TRACE=<dir>, each case writes a runtime/trace (<case>.trace, for go
# tool trace) and the report of its median and slowest prepares
# (<case>.txt), printed at the end. OUT (default a temporary file) keeps
# the raw go test output, for benchstat.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
BENCH=${BENCH:-'Prepare$'}
BENCHTIME=${BENCHTIME:-2000x}
COUNT=${COUNT:-1}
OUT=${OUT:-$(mktemp /tmp/bench-prepare.XXXXXX)}

echo "$(date -u +%FT%TZ) $(nproc) CPUs, load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
env ${TRACE:+ACCEL_DRA_PREPARE_TRACE="$TRACE"} "$GO" test -count="$COUNT" -run '^$' -bench "$BENCH" -benchtime "$BENCHTIME" \
	-benchmem -timeout 60m ./test/plugin/ >"$OUT" 2>&1 || { cat "$OUT"; exit 1; }
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg); raw output: $OUT"
echo
awk '
/^BenchmarkPrepare\// {
	name = $1; sub(/^BenchmarkPrepare\//, "", name); sub(/-[0-9]+$/, "", name)
	delete m
	for (i = 3; i < NF; i += 2) m[$(i + 1)] = $i
	printf "| %s | %s | %.2f / %.2f / %.2f | %.2f / %.2f / %.2f | %.2f / %.2f / %.2f |\n", name, m["load1"],
		m["prepare-p50-ms"], m["prepare-p99-ms"], m["prepare-p99.9-ms"],
		m["floor-p50-ms"], m["floor-p99-ms"], m["floor-p99.9-ms"],
		m["prepare/floor-p50"], m["prepare/floor-p99"], m["prepare/floor-p99.9"]
}
BEGIN {
	print "| case | load1 at start | prepare p50 / p99 / p99.9 ms | floor p50 / p99 / p99.9 ms | ratio p50 / p99 / p99.9 |"
	print "|---|---|---|---|---|"
}' "$OUT"
if [ -n "${TRACE:-}" ]; then
	for f in "$TRACE"/*.txt; do
		echo
		cat "$f"
	done
fi
