{{/* Labels of one component (its name is app.kubernetes.io/name). */}}
{{- define "knative-operator.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
{{ include "knative-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/part-of: knative-operator
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
{{- end }}

{{- define "knative-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- end }}
