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

# govulncheck of make lint: the driver's module, and hack/image's (the
# image's builder), against the Go vulnerability database GOVULNDB. A
# snapshot in _output/vulndb (the vuln.go.dev layout: index/db.json,
# index/modules.json, ID/*.json) pins it, so a run says the same until the
# snapshot changes; without one it is https://vuln.go.dev. When the
# database cannot be reached (no network to it, as on some build
# machines), the check is skipped with a message, not failed.
set -euo pipefail
: "${GOVULNCHECK:?GOVULNCHECK names the govulncheck binary (built from hack/vuln when missing or older)}"
db=${GOVULNDB:-}
if [ -z "$db" ]; then
	if [ -f _output/vulndb/index/db.json ]; then
		db=file://$PWD/_output/vulndb
	else
		db=https://vuln.go.dev
	fi
fi
case $db in
file://*)
	index=${db#file://}/index/db.json
	if [ ! -f "$index" ]; then
		echo "govulncheck skipped: no vulnerability database at ${db#file://} (no index/db.json)"
		exit 0
	fi
	modified=$(sed -n 's/.*"modified" *: *"\([^"]*\)".*/\1/p' "$index")
	;;
*)
	if ! index=$(curl -fsS --max-time 10 "$db/index/db.json" 2>/dev/null); then
		echo "govulncheck skipped: the vulnerability database $db is not reachable"
		exit 0
	fi
	modified=$(printf '%s' "$index" | sed -n 's/.*"modified" *: *"\([^"]*\)".*/\1/p')
	;;
esac
# Built only now that there is a database to check against: where there
# is none (CI's machines), its build was a minute of CPU for nothing.
if [ ! -x "$GOVULNCHECK" ] || [ hack/vuln/go.mod -nt "$GOVULNCHECK" ] || [ hack/vuln/go.sum -nt "$GOVULNCHECK" ]; then
	go -C hack/vuln build -o "$GOVULNCHECK" golang.org/x/vuln/cmd/govulncheck
fi
echo "govulncheck against $db (modified ${modified:-unknown})"
"$GOVULNCHECK" -db "$db" ./...
(cd hack/image && "$GOVULNCHECK" -db "$db" ./...)
