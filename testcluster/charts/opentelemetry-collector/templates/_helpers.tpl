{{- define "otel.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := .Values.nameOverride | default .Chart.Name -}}
{{- if contains $name .Release.Name }}{{ .Release.Name | trunc 63 | trimSuffix "-" }}{{ else }}{{ printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}{{ end -}}
{{- end -}}
{{- end -}}

{{- define "otel.selectorLabels" -}}
app.kubernetes.io/name: {{ .Values.nameOverride | default .Chart.Name | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* component: standalone-collector (deployment), agent-collector (daemonset), statefulset-collector. */}}
{{- define "otel.component" -}}
{{- if eq .Values.mode "deployment" }}standalone-collector{{ else if eq .Values.mode "daemonset" }}agent-collector{{ else }}statefulset-collector{{ end -}}
{{- end -}}

{{- define "otel.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{ include "otel.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: opentelemetry-collector
app.kubernetes.io/component: {{ include "otel.component" . }}
{{- end -}}
