{{/*
The chart's name: app.kubernetes.io/name, "collector" unless nameOverride.
*/}}
{{- define "collector.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name of every object. At most 52 characters: the StatefulSet's pods
get a label controller-revision-hash NAME-HASH, which must fit in 63.
*/}}
{{- define "collector.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Chart name and version, for the helm.sh/chart label.
*/}}
{{- define "collector.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The labels of every object.
*/}}
{{- define "collector.labels" -}}
helm.sh/chart: {{ include "collector.chart" . }}
{{ include "collector.selectorLabels" . }}
app.kubernetes.io/component: exporter
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | trunc 63 | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
The labels that select this release's pod (immutable in a StatefulSet).
*/}}
{{- define "collector.selectorLabels" -}}
app.kubernetes.io/name: {{ include "collector.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
The image reference.
*/}}
{{- define "collector.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}

{{/*
The Secret the pod reads its credentials from.
*/}}
{{- define "collector.secretName" -}}
{{- if .Values.existingSecret }}
{{- .Values.existingSecret }}
{{- else }}
{{- include "collector.fullname" . }}
{{- end }}
{{- end }}

{{/*
The collector's configuration as YAML, after checking what the chart fixes:
the checkpoint (and a file sink) on the /data volume, metrics on
0.0.0.0:9464, no secrets.
*/}}
{{- define "collector.config" -}}
{{- $c := .Values.config | default dict }}
{{- $cp := dig "checkpoint" "path" "" $c }}
{{- if not (hasPrefix "/data/" $cp) }}
{{- fail (printf "config.checkpoint.path %q must be a file under /data, the persistent volume (e.g. /data/checkpoint.db)" $cp) }}
{{- end }}
{{- $listen := dig "metrics" "listen" "" $c }}
{{- if ne $listen "0.0.0.0:9464" }}
{{- fail (printf "config.metrics.listen %q must be 0.0.0.0:9464: the probes, the Service and the ServiceMonitor use that port" $listen) }}
{{- end }}
{{- if eq (dig "sink" "type" "file" $c) "file" }}
{{- $dir := dig "sink" "file" "dir" "" $c }}
{{- if not (or (eq $dir "/data") (hasPrefix "/data/" $dir)) }}
{{- fail (printf "config.sink.file.dir %q must be under /data, the persistent volume (the root filesystem is read-only)" $dir) }}
{{- end }}
{{- end }}
{{- range $key, $v := dict "api.secret" (dig "api" "secret" "" $c) "edge.token" (dig "edge" "token" "" $c) "sink.kafka.sasl.password" (dig "sink" "kafka" "sasl" "password" "" $c) "sink.clickhouse.password" (dig "sink" "clickhouse" "password" "" $c) }}
{{- if $v }}
{{- fail (printf "config.%s is a secret: put it in the Secret (existingSecret or secret.*), not in config" $key) }}
{{- end }}
{{- end }}
{{- toYaml $c }}
{{- end }}

{{/*
Checks of the values that are not about config.
*/}}
{{- define "collector.validate" -}}
{{- if and .Values.existingSecret .Values.secret.create }}
{{- fail "existingSecret and secret.create are exclusive: the pod reads one Secret" }}
{{- end }}
{{- if and .Values.secret.create (not .Values.secret.apiSecret) }}
{{- fail "secret.create needs secret.apiSecret (better: create the Secret yourself and set existingSecret)" }}
{{- end }}
{{- end }}
