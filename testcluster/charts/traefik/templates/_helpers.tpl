{{- define "traefik.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "traefik.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "traefik.selectorLabels" -}}
app.kubernetes.io/name: traefik
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "traefik.ingressClassName" -}}
{{- .Values.ingressClass.name | default "traefik" }}
{{- end }}
