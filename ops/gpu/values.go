package gpu

import (
	"runr.dev/console/helm"
	"runr.dev/console/ops/kit"
	"runr.dev/console/store"
)

// NVIDIA's charts: the GPU operator (drivers, container toolkit, device plugin, GPU
// feature discovery, DCGM exporter) and, for nodes whose drivers are installed already,
// the device plugin with GPU feature discovery.
var (
	ChartGPUOperator  = helm.ChartRef{Repo: "https://helm.ngc.nvidia.com/nvidia", Name: "gpu-operator", Version: "v26.7.0"}
	ChartDevicePlugin = helm.ChartRef{Repo: "https://nvidia.github.io/k8s-device-plugin", Name: "nvidia-device-plugin", Version: "0.20.0"}
)

// GPU names on the cluster and on its nodes.
const (
	GPUNamespace        = "runr-gpu"
	GPUOperatorRelease  = "gpu-operator"
	DevicePluginRelease = "nvidia-device-plugin"
	// GPUResource is the extended resource a device plugin advertises.
	GPUResource = "nvidia.com/gpu"
	// NFDNvidiaLabel is node-feature-discovery's label of a node with an NVIDIA PCI device.
	NFDNvidiaLabel = "feature.node.kubernetes.io/pci-10de.present"
	// nfdLabelPrefix starts every label node-feature-discovery puts on a node it scanned.
	nfdLabelPrefix = "feature.node.kubernetes.io/"
	// GPU feature discovery's labels.
	GPUProductLabel = "nvidia.com/gpu.product"
	GPUMemoryLabel  = "nvidia.com/gpu.memory"
	GPUPresentLabel = "nvidia.com/gpu.present"
	// ClusterPolicyName is the GPU operator's ClusterPolicy the chart creates.
	ClusterPolicyName = "cluster-policy"
	// ModelStorageClaim is the volume of model weights in a region's project namespace,
	// mounted read-only at ModelStoragePath by the GPU projects that ask for it.
	ModelStorageClaim = "runr-models"
	ModelStoragePath  = "/models"
)

// GPUModes are the ways GPU support is installed.
var GPUModes = []string{store.GPUModeOperator, store.GPUModeDevicePlugin}

// gpuRelease is the Helm release of a GPU mode.
func gpuRelease(mode string) kit.Release {
	if mode == store.GPUModeOperator {
		return kit.Release{Namespace: GPUNamespace, Name: GPUOperatorRelease, Chart: ChartGPUOperator, Values: GPUOperatorValues()}
	}
	return kit.Release{Namespace: GPUNamespace, Name: DevicePluginRelease, Chart: ChartDevicePlugin, Values: DevicePluginValues()}
}

// GPUOperatorValues are the GPU operator's values: its drivers and container toolkit on
// the GPU nodes, the ClusterPolicy created by the chart, node-feature-discovery with it.
func GPUOperatorValues() map[string]any {
	return map[string]any{
		"nfd":           map[string]any{"enabled": true},
		"driver":        map[string]any{"enabled": true},
		"toolkit":       map[string]any{"enabled": true},
		"clusterPolicy": map[string]any{"deployCR": true},
	}
}

// DevicePluginValues are the device plugin chart's values: GPU feature discovery on (it
// brings node-feature-discovery, which finds the GPU nodes the plugin is scheduled on).
func DevicePluginValues() map[string]any {
	return map[string]any{"gfd": map[string]any{"enabled": true}}
}
