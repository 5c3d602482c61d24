{{/* The release's resources are named after it (runr by default). */}}
{{- define "runr.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "runr.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "runr.labels" -}}
{{ include "runr.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "runr.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* The CloudNativePG Cluster of a bundled database. */}}
{{- define "runr.pgName" -}}
{{ include "runr.fullname" . }}-postgres
{{- end -}}

{{/* Where DATABASE_URL comes from: the bundled cluster's app Secret, or runr-secret. */}}
{{- define "runr.databaseURL" -}}
{{- if .Values.postgresql.bundled -}}
valueFrom:
  secretKeyRef:
    name: {{ include "runr.pgName" . }}-app
    key: uri
{{- else -}}
valueFrom:
  secretKeyRef:
    name: {{ .Values.secret.name }}
    key: DATABASE_URL
{{- end -}}
{{- end -}}

{{/* The environment the console and its Jobs share. */}}
{{- define "runr.env" -}}
- name: DATABASE_URL
  {{- include "runr.databaseURL" . | nindent 2 }}
- name: RUNR_APP_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .Values.secret.name }}
      key: APP_KEY
- name: RUNR_PREVIOUS_APP_KEYS
  valueFrom:
    secretKeyRef:
      name: {{ .Values.secret.name }}
      key: PREVIOUS_APP_KEYS
      optional: true
- name: RUNR_ADDR
  value: ":8080"
{{- with .Values.appURL }}
- name: RUNR_APP_URL
  value: {{ . | quote }}
{{- if hasPrefix "https://" . }}
- name: RUNR_SECURE_COOKIES
  value: "1"
{{- end }}
{{- end }}
{{- with .Values.trustedProxies }}
- name: RUNR_TRUSTED_PROXIES
  value: {{ . | quote }}
{{- end }}
{{- with .Values.knative }}
{{- with .minK8sMinor }}
- name: RUNR_MIN_K8S_MINOR
  value: {{ . | toString | quote }}
{{- end }}
{{- with .traefikImage }}
- name: RUNR_TRAEFIK_IMAGE
  value: {{ . | quote }}
{{- end }}
{{- end }}
{{- with .Values.quota }}
{{- with .cpu }}
- name: RUNR_QUOTA_CPU
  value: {{ . | toString | quote }}
{{- end }}
{{- with .memoryGiB }}
- name: RUNR_QUOTA_MEMORY_GIB
  value: {{ . | toString | quote }}
{{- end }}
{{- end }}
{{- with .Values.billing }}
{{- if .enabled }}
- name: RUNR_BILLING
  value: "on"
{{- end }}
{{- with .webhookUrl }}
- name: RUNR_BILLING_WEBHOOK_URL
  value: {{ . | quote }}
- name: RUNR_BILLING_WEBHOOK_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ $.Values.secret.name }}
      key: BILLING_WEBHOOK_SECRET
      optional: true
{{- end }}
{{- end }}
{{- with (.Values.observability).tracing }}
{{- if or (eq (toString .installWithServing) "false") (eq (toString .defaultMode) "off") }}
- name: RUNR_TRACING_DEFAULT_MODE
  value: "off"
{{- end }}
{{- with .tempoRetentionHours }}
- name: RUNR_TRACING_RETENTION_HOURS
  value: {{ . | toString | quote }}
{{- end }}
{{- with .collectorImage }}
- name: RUNR_TRACING_COLLECTOR_IMAGE
  value: {{ . | quote }}
{{- end }}
{{- with .tempoImage }}
- name: RUNR_TRACING_TEMPO_IMAGE
  value: {{ . | quote }}
{{- end }}
{{- with .collectorChartVersion }}
- name: RUNR_TRACING_COLLECTOR_CHART_VERSION
  value: {{ . | toString | quote }}
{{- end }}
{{- with .tempoChartVersion }}
- name: RUNR_TRACING_TEMPO_CHART_VERSION
  value: {{ . | toString | quote }}
{{- end }}
{{- end }}
{{- if not (hasKey .Values.env "RUNR_GATEWAY_URL") }}
# The in-cluster gateway: agents of regions on this cluster reach the console's Service.
- name: RUNR_GATEWAY_URL
  value: "http://{{ include "runr.fullname" . }}.{{ .Release.Namespace }}.svc:{{ .Values.service.port }}"
{{- end }}
{{- with (lookup "v1" "Namespace" "" "kube-system") }}
# This cluster's identity (read by Helm at install and upgrade): a region on it is the
# console's own cluster.
- name: RUNR_CLUSTER_UID
  value: {{ .metadata.uid | quote }}
{{- end }}
{{- if and .Values.ingress.enabled .Values.ingress.tls (not (hasKey .Values.env "RUNR_TLS_SECRET")) }}
{{- with (first .Values.ingress.tls).secretName }}
# The console's own certificate, offered to the regions on this cluster (Function TLS).
- name: RUNR_TLS_SECRET
  value: "{{ $.Release.Namespace }}/{{ . }}"
{{- end }}
{{- end }}
{{- with ((.Values.observability).replay).ingestUrl }}
- name: RUNR_REPLAY_INGEST_URL
  value: {{ . | quote }}
{{- end }}
{{- range $k, $v := .Values.env }}
- name: {{ $k }}
  value: {{ $v | toString | quote }}
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The security context of every container: the binary needs nothing else. */}}
{{- define "runr.securityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
runAsUser: 65532
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* The console's branding settings (only its pods render pages; the logos' files are
mounted by runr.brandingVolumes). */}}
{{- define "runr.brandingEnv" -}}
{{- with .Values.branding }}
{{- with .productName }}
- name: RUNR_BRANDING_PRODUCT_NAME
  value: {{ . | quote }}
{{- end }}
{{- with .companyName }}
- name: RUNR_BRANDING_COMPANY_NAME
  value: {{ . | quote }}
{{- end }}
{{- range $name := list "logo" "favicon" }}
{{- with (get $.Values.branding $name) }}
{{- if or .configMapKeyRef .secretKeyRef }}
- name: RUNR_BRANDING_{{ upper $name }}
  value: "file:/etc/runr/branding/{{ $name }}/{{ $name }}"
{{- else if .url }}
- name: RUNR_BRANDING_{{ upper $name }}
  value: {{ .url | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- if and .primaryColor .palette }}
{{- fail "branding: set primaryColor or palette, not both" }}
{{- end }}
{{- with .primaryColor }}
- name: RUNR_BRANDING_PRIMARY_COLOR
  value: {{ . | quote }}
{{- end }}
{{- with .palette }}
{{- $shades := list }}
{{- range $shade, $colour := . }}
{{- $shades = append $shades (printf "%v=%v" $shade $colour) }}
{{- end }}
- name: RUNR_BRANDING_PALETTE
  value: {{ join "," $shades | quote }}
{{- end }}
{{- with (.login).title }}
- name: RUNR_BRANDING_LOGIN_TITLE
  value: {{ . | quote }}
{{- end }}
{{- with (.login).text }}
- name: RUNR_BRANDING_LOGIN_TEXT
  value: {{ . | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The logos taken from a ConfigMap or Secret: volumeMounts ("mounts") or volumes. */}}
{{- define "runr.brandingVolumes" -}}
{{- $root := index . 0 }}{{- $part := index . 1 }}
{{- range $name := list "logo" "favicon" }}
{{- with (get ($root.Values.branding | default dict) $name) }}
{{- if or .configMapKeyRef .secretKeyRef }}
{{- if eq $part "mounts" }}
- name: branding-{{ $name }}
  mountPath: /etc/runr/branding/{{ $name }}
  readOnly: true
{{- else if .configMapKeyRef }}
- name: branding-{{ $name }}
  configMap:
    name: {{ required (printf "branding.%s.configMapKeyRef.name" $name) .configMapKeyRef.name }}
    items:
      - key: {{ required (printf "branding.%s.configMapKeyRef.key" $name) .configMapKeyRef.key }}
        path: {{ $name }}
{{- else }}
- name: branding-{{ $name }}
  secret:
    secretName: {{ required (printf "branding.%s.secretKeyRef.name" $name) .secretKeyRef.name }}
    items:
      - key: {{ required (printf "branding.%s.secretKeyRef.key" $name) .secretKeyRef.key }}
        path: {{ $name }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}
