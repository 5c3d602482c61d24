package ops

import (
	"runr.dev/console/helm"
	"runr.dev/console/ops/admission"
	"runr.dev/console/ops/data"
	"runr.dev/console/ops/gpu"
	"runr.dev/console/ops/isolation"
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/knative"
	"runr.dev/console/ops/nodes"
	"runr.dev/console/ops/observability"
	"runr.dev/console/ops/registry"
	"runr.dev/console/store"
)

// ValuesCase is one set of values the console sends to an upstream chart. The stand-in
// charts' contract test renders each with exactly these values and checks the facts read
// from the upstream chart at its pinned version.
type ValuesCase struct {
	Name      string
	Chart     helm.ChartRef
	Release   string
	Namespace string
	Values    map[string]any
}

// ValuesCases lists the values the console sends to every chart it installs, one case per
// shape (a registry on a PVC and on S3, Traefik with and without trusted addresses, ...).
func ValuesCases() []ValuesCase {
	traefikImage := "ghcr.io/brf-tech/runr/reqs/traefik:v3.7.4"
	// Observability's data on the default class, in emptyDir volumes, and on a named class.
	volumes, noVolumes := observability.StorageOf(store.Monitoring{}, true), observability.StorageOf(store.Monitoring{}, false)
	fastSSD := observability.StorageOf(store.Monitoring{StorageClass: "fast-ssd", PrometheusSizeGi: 5, LokiSizeGi: 3, TempoSizeGi: 2, PrometheusRetentionDays: 30, LokiRetentionDays: 14}, true)
	return []ValuesCase{
		{Name: "traefik", Chart: knative.ChartTraefik, Release: kit.TraefikRelease, Namespace: "knative-serving",
			Values: knative.TraefikValues(knative.TraefikOptions{Namespace: "knative-serving", Image: traefikImage, Class: knative.TraefikClass, Timeout: 120})},
		{Name: "traefik-trusted-ips", Chart: knative.ChartTraefik, Release: kit.TraefikRelease, Namespace: "knative-serving",
			Values: knative.TraefikValues(knative.TraefikOptions{Namespace: "knative-serving", Image: traefikImage, Class: knative.TraefikFallbackClass, Timeout: 610, TrustedIPs: []string{"10.0.0.0/24"}})},
		{Name: "traefik-host-network", Chart: knative.ChartTraefik, Release: kit.TraefikRelease, Namespace: "knative-serving",
			Values: knative.TraefikValues(knative.TraefikOptions{Namespace: "knative-serving", Image: traefikImage, Class: knative.TraefikClass, Timeout: 120, HostNetwork: true})},
		{Name: "zot-pvc", Chart: registry.ChartZot, Release: registry.ZotRelease, Namespace: registry.Namespace,
			Values: registry.ZotValues(registry.Params{Mode: store.RegistryInternal, StorageType: "pvc", StorageClass: "standard", Size: "10Gi"})},
		{Name: "zot-s3", Chart: registry.ChartZot, Release: registry.ZotRelease, Namespace: registry.Namespace,
			Values: registry.ZotValues(registry.Params{Mode: store.RegistryInternal, StorageType: "s3", S3Endpoint: "https://s3.example.test", S3Bucket: "images", S3Region: "eu-1", S3AccessKey: "AKIA"})},
		{Name: "knative-operator", Chart: knative.ChartKnativeOperator, Release: knative.OperatorRelease, Namespace: "knative-operator", Values: knative.OperatorValues()},
		{Name: "kube-prometheus-stack", Chart: observability.ChartPrometheus, Release: observability.PrometheusRelease, Namespace: observability.ObservabilityNamespace, Values: observability.PrometheusValues(volumes)},
		{Name: "kube-prometheus-stack-emptydir", Chart: observability.ChartPrometheus, Release: observability.PrometheusRelease, Namespace: observability.ObservabilityNamespace, Values: observability.PrometheusValues(noVolumes)},
		{Name: "kube-prometheus-stack-fast-ssd", Chart: observability.ChartPrometheus, Release: observability.PrometheusRelease, Namespace: observability.ObservabilityNamespace, Values: observability.PrometheusValues(fastSSD)},
		{Name: "loki-stack", Chart: observability.ChartLoki, Release: observability.LokiRelease, Namespace: observability.ObservabilityNamespace, Values: observability.LokiValues(volumes)},
		{Name: "loki-stack-emptydir", Chart: observability.ChartLoki, Release: observability.LokiRelease, Namespace: observability.ObservabilityNamespace, Values: observability.LokiValues(noVolumes)},
		{Name: "loki-stack-fast-ssd", Chart: observability.ChartLoki, Release: observability.LokiRelease, Namespace: observability.ObservabilityNamespace, Values: observability.LokiValues(fastSSD)},
		{Name: "tempo", Chart: observability.ChartTempo, Release: observability.TempoRelease, Namespace: observability.ObservabilityNamespace, Values: observability.TempoValues(72, "", volumes)},
		{Name: "tempo-emptydir", Chart: observability.ChartTempo, Release: observability.TempoRelease, Namespace: observability.ObservabilityNamespace, Values: observability.TempoValues(72, "", noVolumes)},
		{Name: "tempo-own-image", Chart: observability.ChartTempo, Release: observability.TempoRelease, Namespace: observability.ObservabilityNamespace, Values: observability.TempoValues(72, "registry.example.com:5000/mirror/tempo:3.1.0", fastSSD)},
		{Name: "opentelemetry-collector-own-image", Chart: observability.ChartOtelCollector, Release: observability.OtelRelease, Namespace: observability.ObservabilityNamespace, Values: observability.OtelValues("registry.example.com:5000/mirror/opentelemetry-collector-contrib:0.162.0")},
		{Name: "opentelemetry-collector", Chart: observability.ChartOtelCollector, Release: observability.OtelRelease, Namespace: observability.ObservabilityNamespace, Values: observability.OtelValues("")},
		{Name: "kata-deploy", Chart: isolation.ChartKataDeploy, Release: isolation.KataRelease, Namespace: isolation.SandboxNamespace, Values: isolation.KataValues([]string{"qemu", "clh"}, "k8s")},
		{Name: "kata-deploy-k3s-dragonball", Chart: isolation.ChartKataDeploy, Release: isolation.KataRelease, Namespace: isolation.SandboxNamespace, Values: isolation.KataValues([]string{"dragonball", "fc"}, "k3s")},
		{Name: "runtime-class-manager", Chart: isolation.ChartRuntimeClassManager, Release: isolation.WasmRelease, Namespace: isolation.SandboxNamespace, Values: isolation.WasmValues()},
		{Name: "gpu-operator", Chart: gpu.ChartGPUOperator, Release: gpu.GPUOperatorRelease, Namespace: gpu.GPUNamespace, Values: gpu.GPUOperatorValues()},
		{Name: "nvidia-device-plugin", Chart: gpu.ChartDevicePlugin, Release: gpu.DevicePluginRelease, Namespace: gpu.GPUNamespace, Values: gpu.DevicePluginValues()},
		{Name: "cloudnative-pg", Chart: data.ChartCloudNativePG, Release: data.CNPGRelease, Namespace: data.CNPGNamespace, Values: data.CNPGValues()},
		{Name: "seaweedfs", Chart: data.ChartSeaweedFS, Release: data.SeaweedFSRelease, Namespace: data.DataNamespace, Values: data.SeaweedFSValues("", data.DefaultSizeGi)},
		{Name: "seaweedfs-storage-class", Chart: data.ChartSeaweedFS, Release: data.SeaweedFSRelease, Namespace: data.DataNamespace, Values: data.SeaweedFSValues("standard", 50)},
		{Name: "system-upgrade-controller", Chart: nodes.ChartSystemUpgradeController, Release: nodes.SUCRelease, Namespace: nodes.SUCNamespace, Values: nodes.SUCValues()},
		{Name: "policy-controller", Chart: admission.ChartPolicyController, Release: admission.PolicyControllerRelease, Namespace: admission.CosignNamespace, Values: admission.PolicyControllerValues()},
	}
}
