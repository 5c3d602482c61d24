{{/* <release>-kube-prometheus-stack (the release alone when it holds the chart's name), truncated to 26 characters. */}}
{{- define "kps.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 26 | trimSuffix "-" -}}
{{- else -}}
{{- $name := .Values.nameOverride | default .Chart.Name -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 26 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 26 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "kps.name" -}}
{{- .Values.nameOverride | default .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}

{{- define "kps.prometheusName" -}}
{{- if .Values.cleanPrometheusOperatorObjectNames }}{{ include "kps.fullname" . }}{{ else }}{{ include "kps.fullname" . }}-prometheus{{ end -}}
{{- end -}}

{{- define "kps.alertmanagerName" -}}
{{- if .Values.cleanPrometheusOperatorObjectNames }}{{ include "kps.fullname" . }}{{ else }}{{ include "kps.fullname" . }}-alertmanager{{ end -}}
{{- end -}}

{{/* The labels of every object of the chart itself. */}}
{{- define "kps.labels" -}}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: "{{ .Chart.Version }}"
app.kubernetes.io/part-of: {{ include "kps.name" . }}
chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
release: {{ .Release.Name | quote }}
heritage: {{ .Release.Service | quote }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "kps.operatorLabels" -}}
{{ include "kps.labels" . }}
app: {{ include "kps.name" . }}-operator
app.kubernetes.io/name: {{ include "kps.name" . }}-prometheus-operator
app.kubernetes.io/component: prometheus-operator
{{- end -}}

{{- define "kps.webhookLabels" -}}
{{ include "kps.labels" . }}
app.kubernetes.io/name: {{ include "kps.name" . }}-prometheus-operator
app.kubernetes.io/component: prometheus-operator-webhook
{{- end -}}

{{/* registry/repository:tag, the registry global.imageRegistry when set. */}}
{{- define "kps.image" -}}
{{- printf "%s/%s:%s" (.root.Values.global.imageRegistry | default .image.registry) .image.repository .tag -}}
{{- end -}}
