{{- define "loki-stack.fullname" -}}
{{- if contains .Chart.Name .Release.Name }}{{ .Release.Name | trunc 63 | trimSuffix "-" }}{{ else }}{{ printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}{{ end -}}
{{- end -}}

{{- define "loki-stack.labels" -}}
app: {{ .Chart.Name }}
chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
release: {{ .Release.Name }}
heritage: {{ .Release.Service }}
{{- end -}}

{{/* The Loki Service: <release>-loki, or the release name when it holds "loki". */}}
{{- define "loki.serviceName" -}}
{{- if contains "loki" .Release.Name }}{{ .Release.Name | trunc 63 | trimSuffix "-" }}{{ else }}{{ printf "%s-loki" .Release.Name | trunc 63 | trimSuffix "-" }}{{ end -}}
{{- end -}}
