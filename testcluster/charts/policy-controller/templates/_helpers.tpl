{{/* Names as upstream composes them: the chart's name, and a full name that is the
release name when it holds the chart's name (release policy-controller: policy-controller). */}}
{{- define "pc.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "pc.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "pc.selector" -}}
app.kubernetes.io/name: {{ include "pc.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "pc.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{ include "pc.selector" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- range $k, $v := .Values.webhook.customLabels }}
{{ $k }}: {{ $v }}
{{- end }}
{{- end -}}

{{- define "pc.webhookLabels" -}}
{{ include "pc.labels" . }}
control-plane: {{ include "pc.fullname" . }}-webhook
{{- end -}}

{{- define "pc.serviceAccount" -}}
{{- if .Values.webhook.serviceAccount.create -}}
{{- default (printf "%s-webhook" (include "pc.fullname" .)) .Values.webhook.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.webhook.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* A version starting with sha256: is a digest (repository@digest), else a tag. */}}
{{- define "pc.image" -}}
{{- if hasPrefix "sha256:" .version -}}
{{- printf "%s@%s" .repository .version -}}
{{- else -}}
{{- printf "%s:%s" .repository .version -}}
{{- end -}}
{{- end -}}

{{- define "pc.namespaceSelector" -}}
{{- if .Values.webhook.namespaceSelector -}}
{{ toYaml .Values.webhook.namespaceSelector }}
{{- else -}}
matchExpressions:
  - key: policy.sigstore.dev/include
    operator: In
    values: ["true"]
{{- end -}}
{{- end -}}
