{{- define "suc.registry" -}}
{{- with .Values.global.cattle.systemDefaultRegistry }}{{ . }}/{{ end -}}
{{- end -}}
