{{/* Common labels. */}}
{{- define "zot.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "zot.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Selector labels. */}}
{{- define "zot.selectorLabels" -}}
app.kubernetes.io/name: zot
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The claim the registry's storage lives on. */}}
{{- define "zot.pvcName" -}}
{{- if .Values.pvc.create }}{{ printf "%s-pvc" .Release.Name }}{{ else }}{{ .Values.pvc.name | default (printf "%s-pvc" .Release.Name) }}{{ end }}
{{- end }}
