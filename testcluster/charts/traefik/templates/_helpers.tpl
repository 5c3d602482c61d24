{{/* The workload's name: the release name when it holds "traefik", else <release>-traefik. */}}
{{- define "traefik.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* app.kubernetes.io/instance is <release>-<namespace>, not the release name. */}}
{{- define "traefik.instance" -}}
{{- printf "%s-%s" .Release.Name .Release.Namespace | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "traefik.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ include "traefik.instance" . }}
{{- end -}}

{{- define "traefik.labels" -}}
{{ include "traefik.selectorLabels" . }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* ClusterRole and ClusterRoleBinding: <fullname>-<namespace>. */}}
{{- define "traefik.clusterRoleName" -}}
{{- printf "%s-%s" (include "traefik.fullname" .) .Release.Namespace | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "traefik.serviceAccountName" -}}
{{- .Values.serviceAccount.name | default (include "traefik.fullname" .) -}}
{{- end -}}

{{/* registry/repository:tag, the tag defaulting to the appVersion (or @digest). */}}
{{- define "traefik.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s/%s@%s" .Values.image.registry .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s/%s:%s" .Values.image.registry .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{/* The proxy version the guards compare: the image tag (without a digest), else the appVersion. */}}
{{- define "traefik.proxyVersion" -}}
{{- (split "@" (.Values.image.tag | default .Chart.AppVersion))._0 -}}
{{- end -}}
