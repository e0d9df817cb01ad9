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
Node affinity of the agent: one nodeSelectorTerm per enabled vendor (terms
are ORed, the labels of one term ANDed). An enabled vendor with an empty
nodeSelector means every node, and then no affinity is rendered.
*/}}
{{- define "accel-dra.affinity" -}}
{{- $terms := list }}
{{- $everyNode := false }}
{{- range $vendor := list "ascend" "cambricon" }}
{{- $cfg := index $.Values.vendors $vendor }}
{{- if $cfg.enabled }}
{{- if $cfg.nodeSelector }}
{{- $exprs := list }}
{{- range $key, $value := $cfg.nodeSelector }}
{{- $exprs = append $exprs (dict "key" $key "operator" "In" "values" (list (toString $value))) }}
{{- end }}
{{- $terms = append $terms (dict "matchExpressions" $exprs) }}
{{- else }}
{{- $everyNode = true }}
{{- end }}
{{- end }}
{{- end }}
{{- if and $terms (not $everyNode) }}
nodeAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    nodeSelectorTerms:
    {{- toYaml $terms | nindent 4 }}
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
