{{- define "traefik.podTemplate" -}}
metadata:
  labels:
    {{- include "traefik.labels" . | nindent 4 }}
spec:
  serviceAccountName: {{ include "traefik.serviceAccountName" . }}
  automountServiceAccountToken: true
  terminationGracePeriodSeconds: {{ .Values.deployment.terminationGracePeriodSeconds | default 60 }}
  hostNetwork: {{ .Values.hostNetwork }}
  containers:
    - name: {{ include "traefik.fullname" . }}
      image: {{ include "traefik.image" . }}
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      {{- with .Values.resources }}
      resources:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      readinessProbe:
        httpGet:
          path: /ping
          port: {{ .Values.ports.traefik.port }}
          scheme: HTTP
        {{- toYaml .Values.readinessProbe | nindent 8 }}
      livenessProbe:
        httpGet:
          path: /ping
          port: {{ .Values.ports.traefik.port }}
          scheme: HTTP
        {{- toYaml .Values.livenessProbe | nindent 8 }}
      ports:
        {{- range $name, $p := .Values.ports }}
        {{- if $p }}
        {{- if and $.Values.hostNetwork $p.hostPort $p.port (ne (int $p.hostPort) (int $p.port)) }}
        {{- fail "ERROR: All hostPort must match their respective containerPort when `hostNetwork` is enabled" }}
        {{- end }}
        - name: {{ $name | lower | trunc 15 }}
          containerPort: {{ $p.containerPort | default $p.port }}
          {{- with $p.hostPort }}
          hostPort: {{ . }}
          {{- end }}
          protocol: {{ $p.protocol | default "TCP" }}
        {{- end }}
        {{- end }}
      {{- with .Values.securityContext }}
      securityContext:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      volumeMounts:
        - name: data
          mountPath: /data
        - name: tmp
          mountPath: /tmp
      args:
        {{- range $name, $p := .Values.ports }}
        {{- if $p }}
        - "--entryPoints.{{ $name }}.address=:{{ $p.port }}/{{ $p.protocol | default "TCP" | lower }}"
        {{- end }}
        {{- end }}
        - "--api.dashboard=true"
        - "--ping=true"
        {{- with .Values.providers.kubernetesCRD }}
        {{- if .enabled }}
        - "--providers.kubernetescrd"
        {{- with .labelSelector }}
        - "--providers.kubernetescrd.labelSelector={{ . }}"
        {{- end }}
        {{- with .ingressClass }}
        - "--providers.kubernetescrd.ingressClass={{ . }}"
        {{- end }}
        {{- if .allowCrossNamespace }}
        - "--providers.kubernetescrd.allowCrossNamespace=true"
        {{- end }}
        {{- if .allowExternalNameServices }}
        - "--providers.kubernetescrd.allowExternalNameServices=true"
        {{- end }}
        {{- with .namespaces }}
        - "--providers.kubernetescrd.namespaces={{ join "," . }}"
        {{- end }}
        {{- end }}
        {{- end }}
        {{- with .Values.providers.kubernetesIngress }}
        {{- if .enabled }}
        - "--providers.kubernetesingress"
        {{- if and $.Values.service.enabled .publishedService.enabled }}
        - "--providers.kubernetesingress.ingressendpoint.publishedservice={{ .publishedService.pathOverride | default (printf "%s/%s" $.Release.Namespace (include "traefik.fullname" $)) }}"
        {{- end }}
        {{- with .labelSelector }}
        - "--providers.kubernetesingress.labelSelector={{ . }}"
        {{- end }}
        {{- with .ingressClass }}
        - "--providers.kubernetesingress.ingressClass={{ . }}"
        {{- end }}
        {{- with .namespaces }}
        - "--providers.kubernetesingress.namespaces={{ join "," . }}"
        {{- end }}
        {{- end }}
        {{- end }}
        {{- if .Values.experimental.knative }}
        - "--experimental.knative"
        {{- end }}
        {{- with .Values.providers.knative }}
        {{- if .enabled }}
        - "--providers.knative"
        {{- with .namespaces }}
        - "--providers.knative.namespaces={{ join "," . }}"
        {{- end }}
        {{- with .labelSelector }}
        - "--providers.knative.labelSelector={{ . }}"
        {{- end }}
        {{- end }}
        {{- end }}
        {{- range $name, $p := .Values.ports }}
        {{- if $p }}
        {{- if (($p.http).tls).enabled }}
        - "--entryPoints.{{ $name }}.http.tls=true"
        {{- end }}
        {{- with ($p.forwardedHeaders).trustedIPs }}
        - "--entryPoints.{{ $name }}.forwardedHeaders.trustedIPs={{ join "," . }}"
        {{- end }}
        {{- if ($p.forwardedHeaders).insecure }}
        - "--entryPoints.{{ $name }}.forwardedHeaders.insecure"
        {{- end }}
        {{- with ($p.proxyProtocol).trustedIPs }}
        - "--entryPoints.{{ $name }}.proxyProtocol.trustedIPs={{ join "," . }}"
        {{- end }}
        {{- if ($p.proxyProtocol).insecure }}
        - "--entryPoints.{{ $name }}.proxyProtocol.insecure"
        {{- end }}
        {{- $rt := (($p.transport).respondingTimeouts) | default dict }}
        {{- range $key := list "readTimeout" "writeTimeout" "idleTimeout" }}
        {{- $v := index $rt $key }}
        {{- if and (ne $v nil) (toString $v) }}
        - "--entryPoints.{{ $name }}.transport.respondingTimeouts.{{ $key }}={{ $v }}"
        {{- end }}
        {{- end }}
        {{- $lc := (($p.transport).lifeCycle) | default dict }}
        {{- range $key := list "requestAcceptGraceTimeout" "graceTimeOut" }}
        {{- $v := index $lc $key }}
        {{- if and (ne $v nil) (toString $v) }}
        - "--entryPoints.{{ $name }}.transport.lifeCycle.{{ $key }}={{ $v }}"
        {{- end }}
        {{- end }}
        {{- end }}
        {{- end }}
        {{- range .Values.additionalArguments }}
        - {{ . | quote }}
        {{- end }}
      env:
        - name: POD_NAME
          valueFrom:
            fieldRef:
              fieldPath: metadata.name
        - name: POD_NAMESPACE
          valueFrom:
            fieldRef:
              fieldPath: metadata.namespace
  volumes:
    - name: data
      emptyDir: {}
    - name: tmp
      emptyDir: {}
  {{- with .Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.priorityClassName }}
  priorityClassName: {{ . }}
  {{- end }}
  {{- with .Values.podSecurityContext }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}
