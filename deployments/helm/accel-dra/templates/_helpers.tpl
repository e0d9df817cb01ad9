{{/*
Name of the chart, for labels.
*/}}
{{- define "accel-dra.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Fully qualified name of the release's objects, at most 63 characters (DNS
label). A release name that already contains the chart name is used as is.
*/}}
{{- define "accel-dra.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Namespace of the namespaced objects.
*/}}
{{- define "accel-dra.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride }}
{{- end }}

{{/*
Chart name and version for the helm.sh/chart label.
*/}}
{{- define "accel-dra.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels of every object the chart owns (the DeviceClasses are rendered from
their files unchanged and carry none).
*/}}
{{- define "accel-dra.labels" -}}
helm.sh/chart: {{ include "accel-dra.chart" . }}
{{ include "accel-dra.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
Selector labels of the node agent's pods.
*/}}
{{- define "accel-dra.selectorLabels" -}}
app.kubernetes.io/name: {{ include "accel-dra.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: kubeletplugin
{{- end }}

{{/*
Name of the node agent's ServiceAccount. The RBAC binding and the admission
policy's match condition use it, so an existing account must be named.
*/}}
{{- define "accel-dra.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (printf "%s-kubeletplugin" (include "accel-dra.fullname" .)) .Values.serviceAccount.name }}
{{- else if .Values.serviceAccount.name }}
{{- .Values.serviceAccount.name }}
{{- else }}
{{- fail "serviceAccount.name must name an existing ServiceAccount when serviceAccount.create is false" }}
{{- end }}
{{- end }}

{{/*
Image of the node agent.
*/}}
{{- define "accel-dra.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/*
"true" when the agent simulates a hardware profile instead of reading the
node's devices.
*/}}
{{- define "accel-dra.simulated" -}}
{{- if .Values.simulation.profile }}true{{ end }}
{{- end }}

{{/*
The chart's vendor table as JSON: files/vendors.yaml, which
hack/gen-deviceclasses writes from the code's vendors (make generate).
Each vendor under its --vendors option: its DRA driver, its tool (name,
the agent's flag of its path, that path's key in vendors.<option>), its
management library's flag and key, its partition type, the node paths
its agent needs. Templates range over it and name no vendor.
*/}}
{{- define "accel-dra.vendorTable" -}}
{{- .Files.Get "files/vendors.yaml" | fromYaml | toJson }}
{{- end }}

{{/*
The vendors of the chart as JSON, by option: each vendor table entry with
"values", its vendors.<option> block ({} without one), and "enabled"
(false without a block: a vendor added to the code since the values were
written is off until vendors.<option>.enabled is true). Fails the
rendering for a vendors key that is no vendor of the chart, a key of a
vendor's block that is not one of its values, a tool path outside /host,
an enabled vendor on real hardware without its tool's path, and no vendor
enabled (the agent would be scheduled nowhere).
*/}}
{{- define "accel-dra.vendors" -}}
{{- $table := include "accel-dra.vendorTable" . | fromJson }}
{{- $values := .Values.vendors | default dict }}
{{- range $name, $_ := $values }}
{{- if not (hasKey $table $name) }}
{{- fail (printf "vendors.%s: the chart has no vendor %s (its vendors: %s)" $name $name (keys $table | sortAlpha | join ", ")) }}
{{- end }}
{{- end }}
{{- $out := dict }}
{{- $switches := list }}
{{- $any := false }}
{{- range $name, $v := $table }}
{{- $vals := index $values $name | default dict }}
{{- $allowed := list "enabled" "nodeSelector" "hostPaths" "libraryPath" $v.tool.value }}
{{- with $v.library }}{{ $allowed = append $allowed .value }}{{ end }}
{{- range $key, $_ := $vals }}
{{- if not (has $key $allowed) }}
{{- fail (printf "vendors.%s.%s: vendor %s has no such value (it has %s)" $name $key $name (join ", " $allowed)) }}
{{- end }}
{{- end }}
{{- $enabled := $vals.enabled | default false }}
{{- include "accel-dra.checkTool" (dict "name" $name "tool" $v.tool "path" (index $vals $v.tool.value | default "") "needed" (and $enabled (not $.Values.simulation.profile))) }}
{{- $_ := set $out $name (merge (dict "values" $vals "enabled" $enabled) $v) }}
{{- $switches = append $switches (printf "vendors.%s.enabled" $name) }}
{{- $any = or $any $enabled }}
{{- end }}
{{- if not $any }}
{{- fail (printf "enable at least one of %s and %s" (initial $switches | join ", ") (last $switches)) }}
{{- end }}
{{- toJson $out }}
{{- end }}

{{/*
Fails the rendering for a vendor's tool path (dict of name, tool, path and
needed) that is not under /host, or missing where needed: the DaemonSet
mounts that one file at its path under /host.
*/}}
{{- define "accel-dra.checkTool" -}}
{{- if .path }}
{{- if not (hasPrefix "/host/" .path) }}
{{- fail (printf "vendors.%s.%s %q: the tool's path on the node under /host, where the DaemonSet mounts that one file (e.g. /host/usr/bin/%s)" .name .tool.value .path .tool.name) }}
{{- end }}
{{- else if .needed }}
{{- fail (printf "vendors.%s.%s: the path of %s on the node under /host (e.g. /host/usr/bin/%s) must be set: the DaemonSet mounts that one file" .name .tool.value .tool.name .tool.name) }}
{{- end }}
{{- end }}

{{/*
The DRA driver names of the vendors a list names, in its order, as a JSON
list: the one place a driver's name comes from (the vendor table). Call
with (list <"accel-dra.vendors" or the table> <vendor options>).
*/}}
{{- define "accel-dra.drivers" -}}
{{- $vendors := index . 0 }}
{{- $drivers := list }}
{{- range index . 1 }}
{{- $drivers = append $drivers (index $vendors .).driver }}
{{- end }}
{{- toJson $drivers }}
{{- end }}

{{/*
"true" when the DeviceClass deviceclasses/<key>.accel-dra.dev.yaml is to be
installed: switched on in deviceClasses and its vendor enabled. A name
starting with a vendor's option (the longest that fits) belongs to that
vendor; the others (accelerator) select chips of every vendor and need
one enabled. Call with (dict "key" $key "switches" .Values.deviceClasses
"vendors" <"accel-dra.vendors">).
*/}}
{{- define "accel-dra.deviceClassEnabled" -}}
{{- if index .switches .key }}
{{- $owner := "" }}
{{- $any := false }}
{{- range $name, $v := .vendors }}
{{- if and (hasPrefix $name $.key) (gt (len $name) (len $owner)) }}{{ $owner = $name }}{{ end }}
{{- $any = or $any $v.enabled }}
{{- end }}
{{- if $owner }}
{{- if (index .vendors $owner).enabled }}true{{ end }}
{{- else if $any }}true
{{- end }}
{{- end }}
{{- end }}

{{/*
A per-model or per-partition-shape DeviceClass for a
modelDeviceClasses.extra entry (dict with vendor, model and optional
template, and the vendor's "driver" and "partitions" from the vendor
table): byte for byte what hack/gen-deviceclasses writes under
deviceclasses/models/ for that model and template (test/chart compares
every generated file with this helper's output; change both together).
A shape's partitions have the vendor's partition type; the template is
matched whole, or with the vendor's partitions.prefix as the start of the
partitionTemplate (Cambricon's sMLU quota "25p" matches "25p.5827mb": the
rest is the chip's memory).
*/}}
{{- define "accel-dra.modelDeviceClass" -}}
{{- $driver := .driver }}
{{- $type := "chip" }}
{{- $name := .model }}
{{- $match := "" }}
{{- if .template }}
{{- $shape := .partitions }}
{{- if not $shape }}
{{- fail (printf "modelDeviceClasses.extra: vendor %q has no partitions, so no template %q" .vendor .template) }}
{{- end }}
{{- $type = $shape.type }}
{{- if $shape.prefix }}
{{- $name = printf "%s-%s-%s" .model $type .template }}
{{- $match = printf " && device.attributes[%q].partitionTemplate.startsWith(%q)" $driver (printf "%s." .template) }}
{{- else }}
{{- $name = printf "%s-%s" .model (replace "_" "-" .template) }}
{{- $match = printf " && device.attributes[%q].partitionTemplate == %q" $driver .template }}
{{- end }}
# Partitions ({{ $type }}) of template {{ .template }} of {{ .model }} chips: one partition shape, for quota engines that count devices per DeviceClass.
# Written by hack/gen-deviceclasses (make generate), or by the chart for modelDeviceClasses.extra: [{vendor: {{ .vendor }}, model: {{ .model }}, template: {{ .template }}}]
{{- else }}
# Whole {{ .model }} chips: one model, for quota engines that count devices per DeviceClass.
# Written by hack/gen-deviceclasses (make generate), or by the chart for modelDeviceClasses.extra: [{vendor: {{ .vendor }}, model: {{ .model }}}]
{{- end }}
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: {{ lower $name | replace "_" "-" }}.accel-dra.dev
spec:
  selectors:
  - cel:
      expression: >-
        device.driver == {{ printf "%q" $driver }} && device.attributes["accel-dra.dev"].type == {{ printf "%q" $type }} && device.attributes["accel-dra.dev"].model == {{ printf "%q" .model }}{{ $match }}
{{ end }}

{{/*
The node groups the chart runs a DaemonSet for, as JSON {"groups": [...]}:
each nodeGroups entry with its vendors narrowed to the enabled ones (in
the vendor table's order; an entry left without one is not rendered), its
chipModes and partitionTemplates defaulted to kubeletPlugin's, and
partitions true where its chips may be partitioned (partition mode not
off, chip modes that partition; see values.yaml, nodeGroups). Fails the
rendering for the old per-vendor nodeSelector, a vendor the chart does not
have, a name used twice, an enabled vendor no group serves, and a vendor
in two groups one of which runs on every node (two pods would serve one
driver on a node).
*/}}
{{- define "accel-dra.nodeGroups" -}}
{{- $v := include "accel-dra.vendors" . | fromJson }}
{{- range $vendor, $e := $v }}
{{- if hasKey $e.values "nodeSelector" }}
{{- fail (printf "vendors.%s.nodeSelector is replaced by nodeGroups[].nodeSelector: the chart runs one DaemonSet per node group, each mounting only its vendors' files; move the labels to the nodeGroups entry whose vendors include %s (values.yaml, docs/install.md \"Node groups\")" $vendor $vendor) }}
{{- end }}
{{- end }}
{{- $groups := list }}
{{- $names := dict }}
{{- $everyNode := dict }}
{{- $served := dict }}
{{- $servedBy := dict }}
{{- range $i, $g := .Values.nodeGroups }}
{{- if hasKey $names $g.name }}
{{- fail (printf "nodeGroups[%d].name: %q is the name of nodeGroups[%d] already; each group is a DaemonSet named after it" $i $g.name (index $names $g.name)) }}
{{- end }}
{{- $_ := set $names $g.name $i }}
{{- range $g.vendors }}
{{- if not (hasKey $v .) }}
{{- fail (printf "nodeGroups[%d].vendors: the chart has no vendor %s (its vendors: %s)" $i . (keys $v | sortAlpha | join ", ")) }}
{{- end }}
{{- end }}
{{- $vendors := list }}
{{- range $vendor, $e := $v }}
{{- if and (has $vendor $g.vendors) $e.enabled }}
{{- $vendors = append $vendors $vendor }}
{{- end }}
{{- end }}
{{- if $vendors }}
{{- range $vendor := $vendors }}
{{- if hasKey $served $vendor }}
{{- if or (not $g.nodeSelector) (hasKey $everyNode $vendor) }}
{{- fail (printf "nodeGroups[%d] (%s) and nodeGroups[%d] both serve %s and one of them has no nodeSelector: on a node both select, two agents would serve one driver; give each group labels of its own" (index $served $vendor) (index $.Values.nodeGroups (index $served $vendor)).name $i $vendor) }}
{{- end }}
{{- end }}
{{- range $j := index $servedBy $vendor | default list }}
{{- include "accel-dra.checkOverlap" (dict "vendor" $vendor "i" $i "j" $j "groups" $.Values.nodeGroups) }}
{{- end }}
{{- $_ := set $servedBy $vendor (append (index $servedBy $vendor | default list) $i) }}
{{- $_ := set $served $vendor $i }}
{{- if not $g.nodeSelector }}{{ $_ := set $everyNode $vendor true }}{{ end }}
{{- end }}
{{- $chipModes := $g.chipModes | default $.Values.kubeletPlugin.chipModes | default "Whole" }}
{{- $mode := $g.partitionMode | default "auto" }}
{{- $partitions := and (ne $mode "off") (contains "Partitioned" $chipModes) }}
{{- $templates := $g.partitionTemplates | default $.Values.kubeletPlugin.partitionTemplates | default list }}
{{- include "accel-dra.checkChipModes" (dict "i" $i "group" $g.name "modes" $chipModes "vendors" $vendors "table" $v) }}
{{- include "accel-dra.checkTemplates" (dict "i" $i "group" $g.name "templates" $templates "vendors" $vendors "table" $v) }}
{{- $groups = append $groups (dict "name" $g.name "vendors" $vendors "nodeSelector" ($g.nodeSelector | default dict) "partitionMode" $mode
  "chipModes" $chipModes "partitionTemplates" $templates "tolerations" ($g.tolerations | default list) "partitions" $partitions) }}
{{- end }}
{{- end }}
{{- range $vendor, $e := $v }}
{{- if and $e.enabled (not (hasKey $served $vendor)) }}
{{- fail (printf "vendors.%s is enabled but no nodeGroups entry serves it: add %s to a group's vendors, or set vendors.%s.enabled=false" $vendor $vendor $vendor) }}
{{- end }}
{{- end }}
{{- toJson (dict "groups" $groups) }}
{{- end }}

{{/*
Node affinity of one node group's agent (a dict of nodeGroups): one
nodeSelectorTerm with the group's labels (ANDed). An empty nodeSelector
means every node, and then no affinity is rendered.
*/}}
{{- define "accel-dra.affinity" -}}
{{- if .nodeSelector }}
{{- $exprs := list }}
{{- range $key, $value := .nodeSelector }}
{{- $exprs = append $exprs (dict "key" $key "operator" "In" "values" (list (toString $value))) }}
{{- end }}
nodeAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    nodeSelectorTerms:
    {{- toYaml (list (dict "matchExpressions" $exprs)) | nindent 4 }}
{{- end }}
{{- end }}

{{/*
A nodeSelector map as "k1=v1, k2=v2", or "(every node)" when empty.
*/}}
{{- define "accel-dra.labelList" -}}
{{- $labels := list }}
{{- range $k, $v := . }}
{{- $labels = append $labels (printf "%s=%v" $k $v) }}
{{- end }}
{{- if $labels }}{{ join ", " $labels }}{{ else }}(every node){{ end }}
{{- end }}

{{/*
Security context of the agent's container, unless kubeletPlugin.securityContext
replaces it.
- Real hardware: privileged. The vendors' tools and management libraries
  open the vendors' device files (e.g. /dev/davinci_manager,
  /dev/cambricon_ctl) and read sysfs attributes that the device cgroup and
  masked paths of an unprivileged container deny; the vendors' own device
  plugins run privileged for the same reason.
- Simulation: no privileges, every capability dropped. The agent only
  writes sockets, CDI specs and its checkpoint into root-owned host
  directories, which uid 0 may do as their owner without CAP_DAC_OVERRIDE.
- Simulation with fakeDevices: as simulation, plus CAP_MKNOD to create the
  null-clone device nodes.
All run as uid 0 with a read-only root filesystem.
*/}}
{{- define "accel-dra.securityContext" -}}
{{- if .Values.kubeletPlugin.securityContext }}
{{- toYaml .Values.kubeletPlugin.securityContext }}
{{- else if not (include "accel-dra.simulated" .) }}
privileged: true
runAsUser: 0
readOnlyRootFilesystem: true
{{- else }}
privileged: false
allowPrivilegeEscalation: false
runAsUser: 0
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
  {{- if .Values.simulation.fakeDevices }}
  add: ["MKNOD"]
  {{- end }}
seccompProfile:
  type: RuntimeDefault
{{- end }}
{{- end }}

{{/*
Name of the admission webhook's objects: its Service, Deployment,
PodDisruptionBudget and ValidatingWebhookConfiguration, and the
cert-manager Certificate. The Service name is a DNS label (at most 63
characters), so the fullname is cut to leave room for "-webhook".
*/}}
{{- define "accel-dra.webhook.name" -}}
{{- printf "%s-webhook" (include "accel-dra.fullname" . | trunc 55 | trimSuffix "-") }}
{{- end }}

{{/*
The Secret (kubernetes.io/tls) the webhook serves from. Helm's and
cert-manager's have different names. When certManager.enabled is switched
off, cert-manager leaves its Secret behind, and Helm could not take that
Secret over. When it is switched on, Helm deletes its own Secret, which
cert-manager would otherwise be writing at the same moment. With a
different name in each mode, the Deployment rolls over to the new Secret
and the old pods serve until the new ones are ready.
*/}}
{{- define "accel-dra.webhook.secretName" -}}
{{- if .Values.webhook.certManager.enabled }}
{{- printf "%s-cert-manager-tls" (include "accel-dra.webhook.name" .) }}
{{- else }}
{{- printf "%s-tls" (include "accel-dra.webhook.name" .) }}
{{- end }}
{{- end }}

{{/*
Selector labels of the webhook's pods; the component keeps them apart from
the node agent's.
*/}}
{{- define "accel-dra.webhook.selectorLabels" -}}
app.kubernetes.io/name: {{ include "accel-dra.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: webhook
{{- end }}

{{/*
Labels of the webhook's objects.
*/}}
{{- define "accel-dra.webhook.labels" -}}
helm.sh/chart: {{ include "accel-dra.chart" . }}
{{ include "accel-dra.webhook.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
Fails the rendering for webhook values that cannot work together.
*/}}
{{- define "accel-dra.webhook.check" -}}
{{- $cm := .Values.webhook.certManager }}
{{- if $cm.issuerRef }}
{{- if not $cm.enabled }}
{{- fail "webhook.certManager.issuerRef needs webhook.certManager.enabled: without cert-manager the chart generates the certificate itself" }}
{{- end }}
{{- if not (index $cm.issuerRef "name") }}
{{- fail "webhook.certManager.issuerRef.name must name the cert-manager Issuer or ClusterIssuer that signs the webhook's certificate" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
A CEL condition: the devices (a CEL path to a claim spec's devices) have a
request, or a firstAvailable subrequest, that asks for the capacity
accel-dra.dev/shareUnits (names.CapShareUnits), which the webhook checks.
*/}}
{{- define "accel-dra.webhook.asksForShareUnits" -}}
(has({{ . }}.requests) && {{ . }}.requests.exists(r,
(has(r.exactly) && has(r.exactly.capacity) && has(r.exactly.capacity.requests) &&
'accel-dra.dev/shareUnits' in r.exactly.capacity.requests) ||
(has(r.firstAvailable) && r.firstAvailable.exists(s, has(s.capacity) &&
has(s.capacity.requests) && 'accel-dra.dev/shareUnits' in s.capacity.requests))))
{{- end }}

{{/*
The fields every webhook of the ValidatingWebhookConfiguration shares.
Call with a dict of failurePolicy, timeoutSeconds, service (name,
namespace, path, port) and, for a certificate made by Helm, caBundle.
*/}}
{{- define "accel-dra.webhook.common" -}}
admissionReviewVersions: [v1]
sideEffects: None
failurePolicy: {{ .failurePolicy }}
timeoutSeconds: {{ .timeoutSeconds }}
matchPolicy: Equivalent
clientConfig:
  service:
    name: {{ .service.name }}
    namespace: {{ .service.namespace }}
    path: {{ .service.path }}
    port: {{ .service.port }}
  {{- with .caBundle }}
  caBundle: {{ . }}
  {{- end }}
{{- end }}

{{/*
Fails unless nodeGroups[.i] and nodeGroups[.j], which both serve .vendor,
select no node in common: their nodeSelectors must give one label key
different values (a node has one value per key). Otherwise a node with
both groups' labels runs two agents serving one driver.
*/}}
{{- define "accel-dra.checkOverlap" -}}
{{- $a := (index .groups .i).nodeSelector | default dict }}
{{- $b := (index .groups .j).nodeSelector | default dict }}
{{- $disjoint := false }}
{{- range $k, $val := $a }}
{{- if and (hasKey $b $k) (ne (toString (index $b $k)) (toString $val)) }}{{ $disjoint = true }}{{ end }}
{{- end }}
{{- if not $disjoint }}
{{- fail (printf "nodeGroups[%d] (%s) and nodeGroups[%d] (%s) both serve %s and a node with both nodeSelectors' labels is selected by both: two agents would serve one driver there; give the groups one label key with different values" .j (index .groups .j).name .i (index .groups .i).name .vendor) }}
{{- end }}
{{- end }}

{{/*
Fails for a chipModes setting the agent's --chip-modes refuses
(partitions.ParsePolicy): comma-separated entries, each a mode (Whole,
Partitioned, Shared) or <device>=<mode>, the device a chip (npu-0) or
all of one vendor's (npu-*), of any vendor of the chart: the setting may
be kubeletPlugin's, shared by every group, and the agent accepts every
vendor's names.
*/}}
{{- define "accel-dra.checkChipModes" -}}
{{- $prefixes := list }}
{{- range .table }}{{ $prefixes = append $prefixes .devicePrefix }}{{ end }}
{{- range $n, $entry := splitList "," .modes }}
{{- $entry = trim $entry }}
{{- if $entry }}
{{- $parts := splitList "=" $entry }}
{{- $mode := trim (last $parts) }}
{{- if not (has $mode (list "Whole" "Partitioned" "Shared")) }}
{{- fail (printf "nodeGroups[%d] (%s): chipModes entry %d %q: mode %q is not Whole, Partitioned or Shared" $.i $.group (add1 $n) $entry $mode) }}
{{- end }}
{{- if gt (len $parts) 2 }}
{{- fail (printf "nodeGroups[%d] (%s): chipModes entry %d %q: want <mode> or <device>=<mode>" $.i $.group (add1 $n) $entry) }}
{{- end }}
{{- if eq (len $parts) 2 }}
{{- $device := trim (first $parts) }}
{{- $ok := false }}
{{- range $prefixes }}{{ if regexMatch (printf `^%s-([0-9]+|\*)$` .) $device }}{{ $ok = true }}{{ end }}{{ end }}
{{- if not $ok }}
{{- fail (printf "nodeGroups[%d] (%s): chipModes entry %d %q: %q is not a chip device name (%s-N or %s-*)" $.i $.group (add1 $n) $entry $device (join "-N, " $prefixes) (join "-*, " $prefixes)) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Fails for a partitionTemplates slug that no partition shape of the
chart's vendors has (the agent's --partition-templates refuses it).
*/}}
{{- define "accel-dra.checkTemplates" -}}
{{- $known := list }}
{{- range .table }}{{ with .partitions }}{{ $known = concat $known .slugs }}{{ end }}{{ end }}
{{- range .templates }}
{{- if not (has . $known) }}
{{- fail (printf "nodeGroups[%d] (%s): partitionTemplates: %q is the slug of no partition template (known: %s)" $.i $.group . (join ", " ($known | sortAlpha))) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The agent's --metrics-addr: metrics.bindAddress and metrics.port, an IPv6
address in brackets (::1 becomes [::1]:51516, which Go's net.Listen
takes; ::1:51516 it refuses). Fails for a port the probes already use.
*/}}
{{- define "accel-dra.metricsAddr" -}}
{{- $m := .Values.metrics }}
{{- if eq (int $m.port) (int .Values.kubeletPlugin.healthzPort) }}
{{- fail (printf "metrics.port %d is kubeletPlugin.healthzPort too: the metrics server and the probe server cannot listen on one port; set metrics.port 0 to serve /metrics beside the probes, or another port" (int $m.port)) }}
{{- end }}
{{- $host := $m.bindAddress | default "" }}
{{- if and (contains ":" $host) (not (hasPrefix "[" $host)) }}{{ $host = printf "[%s]" $host }}{{ end }}
{{- printf "%s:%d" $host (int $m.port) }}
{{- end }}

{{/*
Fabric labels need the policy that keeps the agent to its own Node's
accel-dra.dev/ labels: without it the agent's patch on nodes would reach
every node and label.
*/}}
{{- define "accel-dra.fabric.check" -}}
{{- $f := .Values.kubeletPlugin.fabric }}
{{- if and $f.nodeLabels (not .Values.validatingAdmissionPolicy.enabled) }}
{{- fail "kubeletPlugin.fabric.nodeLabels needs validatingAdmissionPolicy.enabled: the policy keeps the agent's writes to its own Node and to accel-dra.dev/ labels" }}
{{- end }}
{{- if and (not $f.nodeLabels) (or $f.leafLabel $f.spineLabel $f.levelConfigMap $f.mirrorTopotreeSuperPodID $f.superPodScope) }}
{{- fail "kubeletPlugin.fabric: leafLabel, spineLabel, levelConfigMap, superPodScope and mirrorTopotreeSuperPodID need nodeLabels: true" }}
{{- end }}
{{- end }}
