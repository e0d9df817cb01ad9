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
Fails the rendering unless at least one vendor is enabled: the agent would
be scheduled nowhere.
*/}}
{{- define "accel-dra.checkVendors" -}}
{{- if not (or .Values.vendors.ascend.enabled .Values.vendors.cambricon.enabled) }}
{{- fail "enable at least one of vendors.ascend.enabled and vendors.cambricon.enabled" }}
{{- end }}
{{- end }}

{{/*
"true" when the DeviceClass deviceclasses/<key>.accel-dra.dev.yaml is to be
installed: switched on in deviceClasses and its vendor enabled. Names
starting with "ascend" or "cambricon" belong to that vendor; the others
(accelerator) select chips of both and need either.
Call with (dict "key" $key "Values" .Values).
*/}}
{{- define "accel-dra.deviceClassEnabled" -}}
{{- $v := .Values.vendors }}
{{- if index .Values.deviceClasses .key }}
{{- if hasPrefix "ascend" .key }}
{{- if $v.ascend.enabled }}true{{ end }}
{{- else if hasPrefix "cambricon" .key }}
{{- if $v.cambricon.enabled }}true{{ end }}
{{- else if or $v.ascend.enabled $v.cambricon.enabled }}true
{{- end }}
{{- end }}
{{- end }}

{{/*
A per-model or per-partition-shape DeviceClass for a
modelDeviceClasses.extra entry (dict with vendor, model and optional
template): byte for byte what hack/gen-deviceclasses writes under
deviceclasses/models/ for that model and template (test/chart compares
every generated file with this helper's output; change both together).
A shape's partitions have the vendor's partition type; Ascend's vNPU
template is matched by its name, Cambricon's sMLU profile by its quota
("25p" matches "25p.5827mb": the rest is the chip's memory).
*/}}
{{- define "accel-dra.modelDeviceClass" -}}
{{- $shapes := dict "ascend" (dict "type" "vnpu" "prefix" false) "cambricon" (dict "type" "smlu" "prefix" true) }}
{{- $shape := get $shapes .vendor }}
{{- if not $shape }}
{{- fail (printf "modelDeviceClasses.extra: vendor %q has no per-model classes (ascend, cambricon)" .vendor) }}
{{- end }}
{{- $driver := printf "%s.accel-dra.dev" .vendor }}
{{- $type := "chip" }}
{{- $name := .model }}
{{- $match := "" }}
{{- if .template }}
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
  name: {{ lower $name }}.accel-dra.dev
spec:
  selectors:
  - cel:
      expression: >-
        device.driver == {{ printf "%q" $driver }} && device.attributes["accel-dra.dev"].type == {{ printf "%q" $type }} && device.attributes["accel-dra.dev"].model == {{ printf "%q" .model }}{{ $match }}
{{ end }}

{{/*
The node groups the chart runs a DaemonSet for, as JSON {"groups": [...]}:
each nodeGroups entry with its vendors narrowed to the enabled ones
(in the order ascend, cambricon; an entry left without one is not
rendered), its chipModes and partitionTemplates defaulted to kubeletPlugin's and vnpu
true where its Ascend chips may be partitioned (see values.yaml,
nodeGroups). Fails the rendering for the old per-vendor nodeSelector, a
name used twice, an enabled vendor no group serves, and a vendor in two
groups one of which runs on every node (two pods would serve one driver
on a node).
*/}}
{{- define "accel-dra.nodeGroups" -}}
{{- $v := .Values.vendors }}
{{- range $vendor := list "ascend" "cambricon" }}
{{- if hasKey (index $v $vendor) "nodeSelector" }}
{{- fail (printf "vendors.%s.nodeSelector is replaced by nodeGroups[].nodeSelector: the chart runs one DaemonSet per node group, each mounting only its vendors' files; move the labels to the nodeGroups entry whose vendors include %s (values.yaml, docs/install.md \"Node groups\")" $vendor $vendor) }}
{{- end }}
{{- end }}
{{- $groups := list }}
{{- $names := dict }}
{{- $everyNode := dict }}
{{- $served := dict }}
{{- range $i, $g := .Values.nodeGroups }}
{{- if hasKey $names $g.name }}
{{- fail (printf "nodeGroups[%d].name: %q is the name of nodeGroups[%d] already; each group is a DaemonSet named after it" $i $g.name (index $names $g.name)) }}
{{- end }}
{{- $_ := set $names $g.name $i }}
{{- $vendors := list }}
{{- range $vendor := list "ascend" "cambricon" }}
{{- if and (has $vendor $g.vendors) (index $v $vendor).enabled }}
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
{{- $_ := set $served $vendor $i }}
{{- if not $g.nodeSelector }}{{ $_ := set $everyNode $vendor true }}{{ end }}
{{- end }}
{{- $chipModes := $g.chipModes | default $.Values.kubeletPlugin.chipModes | default "Whole" }}
{{- $mode := $g.partitionMode | default "auto" }}
{{- $vnpu := and (has "ascend" $vendors) (ne $mode "off") (contains "Partitioned" $chipModes) }}
{{- $templates := $g.partitionTemplates | default $.Values.kubeletPlugin.partitionTemplates | default list }}
{{- $groups = append $groups (dict "name" $g.name "vendors" $vendors "nodeSelector" ($g.nodeSelector | default dict) "partitionMode" $mode
  "chipModes" $chipModes "partitionTemplates" $templates "tolerations" ($g.tolerations | default list) "vnpu" $vnpu) }}
{{- end }}
{{- end }}
{{- range $vendor := list "ascend" "cambricon" }}
{{- if and (index $v $vendor).enabled (not (hasKey $served $vendor)) }}
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
- Real hardware: privileged. npu-smi, cnmon and the Ascend driver library
  open the vendors' device files (/dev/davinci_manager, /dev/devmm_svm,
  /dev/hisi_hdc, /dev/cambricon_ctl, …) and read sysfs attributes that the
  device cgroup and masked paths of an unprivileged container deny; Huawei's
  ascend-device-plugin and Cambricon's device plugin run privileged for the
  same reason.
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
