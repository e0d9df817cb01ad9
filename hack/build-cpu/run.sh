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

# hack/build-cpu/run.sh COMMAND...: runs COMMAND (.ci/run, make test, ...)
# with a copy of the Go toolchain whose compile, link, vet and asm log
# each run's CPU seconds, package and source directory to
# _output/build-cpu/tools.log, then sums them: by tool and architecture,
# by the directory the go command ran in (which module built it), and
# the packages compiled more than once from the same source directory.
# How test/README.md found where a cold run's CPU goes. The copy prints
# the same version, so the build cache keys are those of the real one.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
out=$repo/_output/build-cpu
goroot=$out/goroot
log=$out/tools.log
tools=$goroot/pkg/tool/$(go env GOHOSTOS)_$(go env GOHOSTARCH)

if [ ! -x "$tools/compile.real" ]; then
	rm -rf "$goroot"
	mkdir -p "$out"
	cp -a "$(go env GOROOT)" "$goroot"
	for tool in compile link vet asm; do
		mv "$tools/$tool" "$tools/$tool.real"
		# argv[0] stays the tool's name: the go command reads the
		# tool's version line (compile -V=full) into its cache keys.
		cat >"$tools/$tool" <<WRAP
#!/usr/bin/env bash
p=- prev= src=-
for a in "\$@"; do
	case \$prev in -p) p=\$a ;; -o) [ "\$p" != - ] || p=\$a ;; esac
	[ "\$src" != - ] || [ "\${a%.go}" = "\$a" ] || src=\${a%/*}
	prev=\$a
done
(exec -a "\$0" "\$0.real" "\$@") && rc=0 || rc=\$?
t=\$(mktemp); times >"\$t"; read -r u s <<<"\$(tail -1 "\$t")"; rm -f "\$t"
echo "$tool \${GOARCH:-host} \$p \$u \$s \$PWD \$src" >>"$log"
exit \$rc
WRAP
		chmod +x "$tools/$tool"
	done
fi

: >"$log"
rc=0
PATH=$goroot/bin:$PATH "$@" || rc=$?

# times prints 1m2.345s: seconds.
awk -v repo="$repo" '
function sec(x,  m) { m = x; sub(/m.*/, "", m); sub(/^[0-9]+m/, "", x); sub(/s$/, "", x); return m * 60 + x }
{
	c = sec($4) + sec($5); total += c
	tool[$1 " " $2] += c; runs[$1 " " $2]++
	d = $6; sub(repo, ".", d); if ($1 == "compile" || $1 == "link") dir[d] += c
	if ($1 == "compile" && $7 != "-") { k = $2 " " $3 " " $7; n[k]++; cpu[k] += c }
}
END {
	printf "%.0f CPU-s in %d tool runs\n", total, NR
	for (k in tool) printf "  %-16s %7.0f CPU-s %6d runs\n", k, tool[k], runs[k]
	print "compile and link by the go command'"'"'s directory:"
	for (k in dir) if (dir[k] >= 5) printf "  %7.0f %s\n", dir[k], k
	for (k in n) if (n[k] > 1) { again += cpu[k] * (n[k] - 1) / n[k]; if (cpu[k] >= 2) printf "  compiled %d times: %s (%.1f CPU-s)\n", n[k], k, cpu[k] }
	printf "compiled again from the same source: about %.0f CPU-s\n", again
}' "$log"
exit $rc
