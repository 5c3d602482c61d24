{{- define "otel.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "otel.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "otel.selectorLabels" -}}
app.kubernetes.io/name: opentelemetry-collector
app.kubernetes.io/instance: {{ .Release.Name }}
component: standalone-collector
{{- end }}
