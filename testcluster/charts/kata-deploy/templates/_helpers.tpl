{{/* Common labels of the ConfigMaps. */}}
{{- define "kata-deploy.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* The enabled shims, sorted, one per line: enabled true, or ~ while disableAll is off. */}}
{{- define "kata-deploy.enabledShims" -}}
{{- $all := .Values.shims.disableAll | default false -}}
{{- $out := list -}}
{{- range $name := keys .Values.shims | sortAlpha -}}
{{- if ne $name "disableAll" -}}
{{- $on := index $.Values.shims $name "enabled" -}}
{{- if or (and (kindIs "bool" $on) $on) (and (not (kindIs "bool" $on)) (not $all)) -}}
{{- $out = append $out $name -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- join "\n" $out -}}
{{- end -}}

{{/* The enabled shims of one architecture (dict root, arch), space-separated. */}}
{{- define "kata-deploy.shimsFor" -}}
{{- $out := list -}}
{{- range $name := include "kata-deploy.enabledShims" .root | trim | splitList "\n" -}}
{{- if and $name (has $.arch (index $.root.Values.shims $name "supportedArches" | default list)) -}}
{{- $out = append $out $name -}}
{{- end -}}
{{- end -}}
{{- join " " $out -}}
{{- end -}}

{{/* The kata-deploy image: <reference>:<tag or appVersion>, or the reference as it is with a digest. */}}
{{- define "kata-deploy.image" -}}
{{- if contains "@" .Values.image.reference -}}
{{- .Values.image.reference -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.reference (.Values.image.tag | default .Chart.AppVersion | toString) -}}
{{- end -}}
{{- end -}}

{{/* The host directory of containerd's configuration, per distribution. */}}
{{- define "kata-deploy.containerdConfDir" -}}
{{- $dirs := dict "k3s" "/var/lib/rancher/k3s/agent/etc/containerd/" "rke2" "/var/lib/rancher/rke2/agent/etc/containerd/" "k0s" "/etc/k0s/" "microk8s" "/var/snap/microk8s/current/args/" -}}
{{- .Values.containerd.configDir | default (get $dirs .Values.k8sDistribution) | default "/etc/containerd/" -}}
{{- end -}}

{{/* "true" when an enabled shim has a drop-in. */}}
{{- define "kata-deploy.hasDropIns" -}}
{{- range $name := include "kata-deploy.enabledShims" . | trim | splitList "\n" -}}
{{- if and $name (trim (index $.Values.shims $name "dropIn" | default "")) -}}true{{- end -}}
{{- end -}}
{{- end -}}

{{/* Pod overhead per shim (RuntimeClass overhead.podFixed). */}}
{{- define "kata-deploy.overheads" -}}
{{- $small := dict "memory" "130Mi" "cpu" "250m" -}}
{{- $qemu := dict "memory" "160Mi" "cpu" "250m" -}}
{{- $tee := dict "memory" "2048Mi" "cpu" "1.0" -}}
{{- $se := dict "memory" "1024Mi" "cpu" "1.0" -}}
{{- $gpu := dict "memory" "10240Mi" "cpu" "1.0" -}}
{{- toYaml (dict
  "clh" $small "clh-azure" $small "clh-runtime-rs" $small "clh-azure-runtime-rs" $small
  "dragonball" $small "fc" $small "stratovirt" $small
  "qemu" $qemu "qemu-runtime-rs" $qemu "qemu-coco-dev" $qemu "qemu-coco-dev-runtime-rs" $qemu
  "qemu-se" $se "qemu-se-runtime-rs" $se
  "qemu-snp" $tee "qemu-snp-runtime-rs" $tee "qemu-tdx" $tee "qemu-tdx-runtime-rs" $tee "qemu-cca" $tee
  "qemu-nvidia-gpu" $gpu "qemu-nvidia-gpu-runtime-rs" $gpu "qemu-nvidia-gpu-snp" $gpu
  "qemu-nvidia-gpu-snp-runtime-rs" $gpu "qemu-nvidia-gpu-tdx" $gpu "qemu-nvidia-gpu-tdx-runtime-rs" $gpu
  "remote" (dict "memory" "120Mi" "cpu" "250m")) -}}
{{- end -}}
