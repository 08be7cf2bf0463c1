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
0.0.0.0:9464, no /tap without a token, no secrets.
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
{{- /* /tap serves every record: on 0.0.0.0, only with a token (the
collector refuses the configuration otherwise; the chart says so first). */}}
{{- if and (dig "metrics" "tap" "enabled" false $c) (not (dig "metrics" "tap" "token_file" "" $c)) }}
{{- fail "config.metrics.tap.enabled needs config.metrics.tap.token_file, a file of a secretMounts Secret holding the bearer token: /tap hands every record to whoever reaches port 9464" }}
{{- end }}
{{- /* POST /-/reload (reloadInPlace, or set by hand) makes the collector
read its files again and restart streams: on 0.0.0.0, only with a token, as
/tap (the collector refuses the configuration otherwise). */}}
{{- if and (or .Values.reloadInPlace (dig "metrics" "reload" "enabled" false $c)) (not (dig "metrics" "reload" "token_file" "" $c)) }}
{{- fail "reloadInPlace (config.metrics.reload.enabled) needs config.metrics.reload.token_file, a file of a secretMounts Secret holding the bearer token: POST /-/reload on port 9464 would reload the collector for whoever reaches the port" }}
{{- end }}
{{- $keys := .Files.Get "files/config-keys.yaml" | fromYaml }}
{{- if or (hasKey $keys "Error") (not (get $keys "secrets")) (not (get $keys "files")) }}
{{- fail (printf "files/config-keys.yaml: %v" (get $keys "Error" | default "no secrets or files lists")) }}
{{- end }}
{{- /* The sink blocks: the one-sink section and every entry of "sinks". */}}
{{- $blocks := list (list "sink" (get $c "sink")) }}
{{- $secretBlocks := list }}
{{- $sinks := get $c "sinks" }}
{{- if $sinks }}
{{- if not (kindIs "slice" $sinks) }}
{{- fail "config.sinks must be a list of sink blocks" }}
{{- end }}
{{- /* The collector takes "sink" or "sinks", not both: with sinks, the
chart's default sink goes (after the secret check below). */}}
{{- $blocks = list }}
{{- with get $c "sink" }}
{{- $secretBlocks = list (list "sink" .) }}
{{- end }}
{{- $c = omit $c "sink" }}
{{- range $i, $s := $sinks }}
{{- $blocks = append $blocks (list (printf "sinks[%d]" $i) $s) }}
{{- end }}
{{- end }}
{{- /* A file sink writes to the volume. */}}
{{- range $b := $blocks }}
{{- $s := index $b 1 }}
{{- if eq (include "collector.dig" (list $s "type") | default "file") "file" }}
{{- $dir := include "collector.dig" (list $s "file.dir") }}
{{- if not (or (eq $dir "/data") (hasPrefix "/data/" $dir)) }}
{{- fail (printf "config.%s.file.dir %q must be under /data, the persistent volume (the root filesystem is read-only)" (index $b 0) $dir) }}
{{- end }}
{{- end }}
{{- end }}
{{- /* Every key to check, as [config path, block, path in the block]. */}}
{{- $secrets := list }}
{{- range $k := $keys.secrets.global }}
{{- $secrets = append $secrets (list $k $c $k) }}
{{- end }}
{{- $files := list }}
{{- range $k := $keys.files.global }}
{{- $files = append $files (list $k $c $k) }}
{{- end }}
{{- range $b := concat $blocks $secretBlocks }}
{{- range $k := $keys.secrets.sink }}
{{- $secrets = append $secrets (list (printf "%s.%s" (index $b 0) $k) (index $b 1) $k) }}
{{- end }}
{{- end }}
{{- range $b := $blocks }}
{{- range $k := $keys.files.sink }}
{{- $files = append $files (list (printf "%s.%s" (index $b 0) $k) (index $b 1) $k) }}
{{- end }}
{{- end }}
{{- /* No secret in config: the ConfigMap and the release's history would hold it. */}}
{{- $fromSecret := dict "api.secret" "api-secret" "edge.token" "edge-token" "sink.kafka.sasl.password" "kafka-sasl-password" "sink.clickhouse.password" "clickhouse-password" }}
{{- range $s := $secrets }}
{{- if include "collector.dig" (list (index $s 1) (index $s 2)) }}
{{- $key := index $s 0 }}
{{- $alt := "" }}
{{- with get $fromSecret $key }}
{{- $alt = printf ", or give it as key %s of the Secret (existingSecret)" . }}
{{- end }}
{{- fail (printf "config.%s is a secret: in config it would sit in the ConfigMap and the release's history. Keep it in a Kubernetes Secret, mount that with secretMounts and set config.%s_file to the file%s" $key $key $alt) }}
{{- end }}
{{- end }}
{{- /* Every file the collector reads is on a volume of the pod. */}}
{{- $roots := list "/data" "/etc/ssl/certs" "/etc/collector-credentials" }}
{{- range .Values.secretMounts }}
{{- $roots = append $roots .mountPath }}
{{- end }}
{{- range .Values.extraVolumeMounts }}
{{- $roots = append $roots .mountPath }}
{{- end }}
{{- range $f := $files }}
{{- $p := include "collector.dig" (list (index $f 1) (index $f 2)) }}
{{- if $p }}
{{- if not (hasPrefix "/" $p) }}
{{- fail (printf "config.%s %q must be an absolute path (the pod's working directory is /, read-only)" (index $f 0) $p) }}
{{- end }}
{{- $on := false }}
{{- range $r := $roots }}
{{- if include "collector.under" (list (clean $p) $r) }}
{{- $on = true }}
{{- end }}
{{- end }}
{{- if not $on }}
{{- fail (printf "config.%s %q is on no volume of the pod, so the collector cannot read it: mount the Secret that holds it with secretMounts (e.g. [{name: tls, secretName: kafka-client-tls, mountPath: %s}]) or with extraVolumes and extraVolumeMounts" (index $f 0) $p (dir (clean $p))) }}
{{- end }}
{{- end }}
{{- end }}
{{- /* reloadInPlace: POST /-/reload is served, so that a changed ConfigMap
is applied without a new pod (the checksum/config annotation goes). */}}
{{- if .Values.reloadInPlace }}
{{- $m := get $c "metrics" | default dict }}
{{- $r := get $m "reload" | default dict }}
{{- $c = set $c "metrics" (set $m "reload" (set $r "enabled" true)) }}
{{- end }}
{{- toYaml $c }}
{{- end }}

{{/*
The value at a dotted path of a map, as a string ("" when a step is missing
or not a map): (list MAP "a.b.c").
*/}}
{{- define "collector.dig" -}}
{{- $v := index . 0 }}
{{- range $seg := splitList "." (index . 1) }}
{{- if kindIs "map" $v }}
{{- $v = get $v $seg }}
{{- else }}
{{- $v = "" }}
{{- end }}
{{- end }}
{{- if kindIs "string" $v }}{{ $v }}{{ else if $v }}{{ toYaml $v }}{{ end }}
{{- end }}

{{/*
"true" when the clean absolute path (index . 0) is the directory (index . 1)
or under it.
*/}}
{{- define "collector.under" -}}
{{- $p := index . 0 }}
{{- $r := clean (index . 1) }}
{{- if or (eq $p $r) (eq $r "/") (hasPrefix (printf "%s/" $r) $p) }}true{{ end }}
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
{{- /* Extra volumes: unique names, mounts that leave the chart's own alone. */}}
{{- $volumes := list "config" "data" "tmp" "credentials" }}
{{- range $m := .Values.secretMounts }}
{{- if has $m.name $volumes }}
{{- fail (printf "secretMounts: the volume name %q is taken (config, data, tmp and credentials are the chart's)" $m.name) }}
{{- end }}
{{- $volumes = append $volumes $m.name }}
{{- end }}
{{- range $v := .Values.extraVolumes }}
{{- if has $v.name $volumes }}
{{- fail (printf "extraVolumes: the volume name %q is taken (config, data, tmp, credentials and secretMounts' names)" $v.name) }}
{{- end }}
{{- $volumes = append $volumes $v.name }}
{{- end }}
{{- $mounts := list }}
{{- range $m := .Values.secretMounts }}
{{- $mounts = append $mounts (list (printf "secretMounts %s" $m.name) $m.mountPath) }}
{{- end }}
{{- range $m := .Values.extraVolumeMounts }}
{{- if not (has $m.name $volumes) }}
{{- fail (printf "extraVolumeMounts: %s mounts volume %q, which is not in extraVolumes or secretMounts" $m.mountPath $m.name) }}
{{- end }}
{{- $mounts = append $mounts (list (printf "extraVolumeMounts %s" $m.name) $m.mountPath) }}
{{- end }}
{{- /* The API secret and the edge token are files of the Secret's volume,
read again at each renewal and refusal: a variable would win over the file
and hold the value of the pod's start until a restart. */}}
{{- range $e := .Values.extraEnv }}
{{- if has $e.name (list "COLLECTOR_API__SECRET" "COLLECTOR_EDGE__TOKEN" "COLLECTOR_API__SECRET_FILE" "COLLECTOR_EDGE__TOKEN_FILE") }}
{{- fail (printf "extraEnv: %s is the chart's: the API secret and the edge token are the files api-secret and edge-token of the Secret (existingSecret), mounted at /etc/collector-credentials and read again at each token renewal, so a rotated Secret needs no restart (a variable would win over the file and keep its value until a restart). For a file of another Secret, mount it with secretMounts and set config.api.secret_file or config.edge.token_file" $e.name) }}
{{- end }}
{{- end }}
{{- $seen := list }}
{{- range $m := $mounts }}
{{- $p := index $m 1 }}
{{- if not (hasPrefix "/" $p) }}
{{- fail (printf "%s: mountPath %q must be absolute" (index $m 0) $p) }}
{{- end }}
{{- if has (clean $p) $seen }}
{{- fail (printf "%s: mountPath %q is mounted twice" (index $m 0) $p) }}
{{- end }}
{{- $seen = append $seen (clean $p) }}
{{- range $own := list "/etc/collector" "/data" "/tmp" "/etc/collector-credentials" }}
{{- if or (include "collector.under" (list (clean $p) $own)) (include "collector.under" (list $own $p)) }}
{{- fail (printf "%s: mountPath %q overlaps the chart's mount %s (config at /etc/collector, checkpoint at /data, /tmp, the Secret at /etc/collector-credentials): mount it elsewhere, e.g. /etc/collector-tls" (index $m 0) $p $own) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The pod's ServiceAccount: the chart's (serviceAccount.name, default the
full name) or an existing one (serviceAccount.name, default "default").
*/}}
{{- define "collector.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "collector.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The labels of the helm test pod: the release's, but not the collector's
selector labels.
*/}}
{{- define "collector.testLabels" -}}
app.kubernetes.io/name: {{ include "collector.name" . }}-test
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: test
{{- end }}
