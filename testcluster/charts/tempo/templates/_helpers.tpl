{{- define "tempo.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "tempo.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "tempo.selectorLabels" -}}
app.kubernetes.io/name: tempo
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}
