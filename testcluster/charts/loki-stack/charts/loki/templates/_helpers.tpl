{{- define "loki.fullname" -}}
{{- if contains .Chart.Name .Release.Name }}{{ .Release.Name | trunc 63 | trimSuffix "-" }}{{ else }}{{ printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}{{ end -}}
{{- end -}}

{{- define "loki.labels" -}}
app: {{ .Chart.Name }}
chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
release: {{ .Release.Name }}
heritage: {{ .Release.Service }}
{{- end -}}

{{/* The PodDisruptionBudget's apiVersion, picked as loki 2.16.0 picks it (see pdb.yaml). */}}
{{- define "loki.pdbAPIVersion" -}}
{{- ternary "policy/v1" "policy/v1beta1" (.Capabilities.APIVersions.Has "policy/v1/PodDisruptionBudgets") -}}
{{- end -}}
