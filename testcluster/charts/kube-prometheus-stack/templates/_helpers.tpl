{{/* Labels of one component: dict "root" $ "component" "operator". */}}
{{- define "kps.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
{{ include "kps.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/part-of: kube-prometheus-stack
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
release: {{ .root.Release.Name | quote }}
{{- end }}

{{- define "kps.selectorLabels" -}}
app.kubernetes.io/name: kube-prometheus-stack-{{ .component }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "kps.image" -}}
{{- printf "%s/%s:%s" .registry .repository .tag -}}
{{- end }}
