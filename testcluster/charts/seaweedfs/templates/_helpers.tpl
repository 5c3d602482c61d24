{{/* The chart's name, or nameOverride. */}}
{{- define "seaweedfs.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* fullnameOverride, else the release name when it holds the chart's name, else <release>-<name>. */}}
{{- define "seaweedfs.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* <fullname>-<component>, the fullname cut so that the whole fits 62 characters. */}}
{{- define "seaweedfs.componentName" -}}
{{- $ctx := index . 0 -}}
{{- $suffix := index . 1 -}}
{{- printf "%s-%s" (trunc (sub 62 (len $suffix) | int) (include "seaweedfs.fullname" $ctx) | trimSuffix "-") $suffix -}}
{{- end -}}

{{/* registry/name:tag, the tag defaulting to the chart's appVersion. */}}
{{- define "seaweedfs.image" -}}
{{- $registry := default .Values.image.registry .Values.global.imageRegistry | toString -}}
{{- $name := .Values.global.seaweedfs.image.name | toString -}}
{{- if .Values.image.repository -}}
{{- $name = .Values.image.repository -}}
{{- else if .Values.global.seaweedfs.image.repository -}}
{{- $name = printf "%s/%s" (trimSuffix "/" .Values.global.seaweedfs.image.repository) (base $name) -}}
{{- end -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag | toString -}}
{{- if $registry -}}
{{- printf "%s/%s:%s" $registry $name $tag -}}
{{- else -}}
{{- printf "%s:%s" $name $tag -}}
{{- end -}}
{{- end -}}

{{- define "seaweedfs.labels" -}}
app.kubernetes.io/name: {{ include "seaweedfs.name" . }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version | replace "+" "_" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Whether the all-in-one S3 gateway authenticates (any of the three switches). */}}
{{- define "seaweedfs.allInOneAuth" -}}
{{- if and .Values.allInOne.s3.enabled (or .Values.allInOne.s3.enableAuth .Values.s3.enableAuth .Values.filer.s3.enableAuth) -}}true{{- end -}}
{{- end -}}

{{/* The ServiceAccount the chart makes and its ClusterRoleBinding names. */}}
{{- define "seaweedfs.serviceAccountName" -}}
{{- .Values.global.seaweedfs.serviceAccountName | default "seaweedfs" -}}
{{- end -}}

{{/* The value under key of Secret name in the release namespace when the cluster has it
     (so that an upgrade keeps generated credentials, as upstream's
     seaweedfs.getOrGeneratePassword does), else length random characters. Arguments:
     (list . name key length). */}}
{{- define "seaweedfs.keptOrRandom" -}}
{{- $ctx := index . 0 -}}
{{- $found := lookup "v1" "Secret" $ctx.Release.Namespace (index . 1) -}}
{{- $kept := dig "data" (index . 2) "" $found -}}
{{- if $kept -}}{{ b64dec $kept }}{{- else -}}{{ randAlphaNum (index . 3) }}{{- end -}}
{{- end -}}

{{/* The SFTP port of the all-in-one server. */}}
{{- define "seaweedfs.allInOneSftpPort" -}}
{{- .Values.allInOne.sftp.port | default .Values.sftp.port -}}
{{- end -}}
