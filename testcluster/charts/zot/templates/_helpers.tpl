{{/* The workloads' name: the release name when it holds "zot", else <release>-zot. */}}
{{- define "zot.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "zot.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "zot.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{ include "zot.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "zot.pvcName" -}}
{{- .Values.pvc.name | default (printf "%s-pvc" .Release.Name) -}}
{{- end -}}

{{/* The pod template of the Deployment and the StatefulSet; .storage is the data volume's name. */}}
{{- define "zot.pod" -}}
{{- $ := .root -}}
metadata:
  annotations:
    {{- with $.Values.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
    {{- if and $.Values.mountConfig $.Values.configFiles }}
    checksum/config: {{ include (print $.Template.BasePath "/configmap.yaml") $ | sha256sum }}
    {{- end }}
  labels:
    {{- include "zot.selectorLabels" $ | nindent 4 }}
    {{- with $.Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  serviceAccountName: {{ $.Values.serviceAccount.create | ternary ($.Values.serviceAccount.name | default (include "zot.fullname" $)) ($.Values.serviceAccount.name | default "default") }}
  securityContext:
    {{- toYaml $.Values.podSecurityContext | nindent 4 }}
  {{- with $.Values.priorityClassName }}
  priorityClassName: {{ . }}
  {{- end }}
  containers:
    - name: {{ $.Chart.Name }}
      securityContext:
        {{- toYaml $.Values.securityContext | nindent 8 }}
      image: "{{ $.Values.image.repository }}:{{ $.Values.image.tag | default $.Chart.AppVersion }}"
      imagePullPolicy: {{ $.Values.image.pullPolicy }}
      {{- with $.Values.extraArgs }}
      args:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      env:
        {{- toYaml $.Values.env | nindent 8 }}
      ports:
        - name: zot
          containerPort: {{ $.Values.httpGet.port }}
          protocol: TCP
      volumeMounts:
        - mountPath: /var/lib/registry
          name: {{ .storage }}
        {{- if $.Values.mountConfig }}
        - mountPath: /etc/zot
          name: {{ $.Release.Name }}-config
        {{- end }}
        {{- if $.Values.mountSecret }}
        - mountPath: /secret
          name: {{ $.Release.Name }}-secret
        {{- end }}
        {{- range $.Values.externalSecrets }}
        - mountPath: {{ .mountPath | quote }}
          name: {{ .secretName | quote }}
        {{- end }}
        {{- with $.Values.extraVolumeMounts }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      livenessProbe:
        initialDelaySeconds: 5
        httpGet:
          path: /livez
          port: {{ $.Values.httpGet.port }}
          scheme: {{ $.Values.httpGet.scheme }}
      readinessProbe:
        initialDelaySeconds: 5
        httpGet:
          path: /readyz
          port: {{ $.Values.httpGet.port }}
          scheme: {{ $.Values.httpGet.scheme }}
      resources:
        {{- toYaml $.Values.resources | nindent 8 }}
  volumes:
    {{- if .emptyDir }}
    - name: {{ .storage }}
      emptyDir: {}
    {{- else if not $.Values.pvc.create }}
    - name: {{ .storage }}
      persistentVolumeClaim:
        claimName: {{ .storage }}
    {{- end }}
    {{- if $.Values.mountConfig }}
    - name: {{ $.Release.Name }}-config
      configMap:
        name: {{ $.Release.Name }}-config
    {{- end }}
    {{- if $.Values.mountSecret }}
    - name: {{ $.Release.Name }}-secret
      secret:
        secretName: {{ $.Release.Name }}-secret
    {{- end }}
    {{- range $.Values.externalSecrets }}
    - name: {{ .secretName }}
      secret:
        secretName: {{ .secretName }}
    {{- end }}
    {{- with $.Values.extraVolumes }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with $.Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $.Values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $.Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}
