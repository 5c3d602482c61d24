package testcluster_test

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"runr.dev/console/ops"
)

const (
	upDevicePlugin = "nvidia-device-plugin 0.20.0 (NVIDIA/k8s-device-plugin, tag v0.20.0: DP = deployments/helm/nvidia-device-plugin) with node-feature-discovery 0.19.0"
	upGPUOperator  = "gpu-operator v26.7.0 (NVIDIA/gpu-operator, tag v26.7.0: GO = deployments/gpu-operator) with node-feature-discovery 0.19.0"
)

func init() { contractFacts = append(contractFacts, gpuFacts...) }

// nfdWorker checks node-feature-discovery's worker DaemonSet of a release: its name and
// its pods' labels, which the console's wait and the simulated cluster select on.
func nfdWorker(r *rendering, release string) error {
	m, err := r.rendered()
	if err != nil {
		return err
	}
	name := release + "-node-feature-discovery-worker"
	pt, err := m.podTemplate("DaemonSet", name)
	if err != nil {
		return fmt.Errorf("DaemonSet %s: %w (have %v)", name, err, m.names())
	}
	if l := pt.Labels; l["app.kubernetes.io/name"] != "node-feature-discovery" || l["role"] != "worker" {
		return fmt.Errorf("NFD worker pod labels %v", l)
	}
	if !tolerates(pt.Spec.Tolerations, ops.GPUResource) {
		return fmt.Errorf("the NFD worker must tolerate the GPU nodes' taint %s: %v", ops.GPUResource, pt.Spec.Tolerations)
	}
	return nil
}

func tolerates(ts []corev1.Toleration, key string) bool {
	return slices.ContainsFunc(ts, func(t corev1.Toleration) bool { return t.Key == key && t.Effect == corev1.TaintEffectNoSchedule })
}

var gpuFacts = []fact{
	{id: "gpu-numbering", chart: "*", cases: []string{"gpu-operator", "nvidia-device-plugin"}, upstream: upDevicePlugin + "; " + upGPUOperator,
		source: "DP/Chart.yaml; GO/Chart.yaml (the release workflow sets version and appVersion to the tag); helm.ngc.nvidia.com/nvidia and nvidia.github.io/k8s-device-plugin indexes",
		text:   "nvidia-device-plugin is numbered without v (0.20.0); gpu-operator with it (v26.7.0); both depend on node-feature-discovery 0.19.0 (the device plugin under the alias nfd, enabled by gfd.enabled; the operator by nfd.enabled)",
		check: func(r *rendering) error {
			if r.cv.Version != r.vc.Chart.Version {
				return fmt.Errorf("version %s, the console pins %s", r.cv.Version, r.vc.Chart.Version)
			}
			for _, d := range r.chart.Metadata.Dependencies {
				if (d.Name == "node-feature-discovery" || d.Alias == "nfd") && d.Version == "0.19.0" {
					return nil
				}
			}
			var deps []string
			for _, d := range r.chart.Metadata.Dependencies {
				deps = append(deps, d.Name+" "+d.Version+" alias "+d.Alias)
			}
			return fmt.Errorf("no node-feature-discovery 0.19.0 dependency: %v", deps)
		}},
	{id: "dp-workloads", chart: "nvidia-device-plugin", upstream: upDevicePlugin,
		source: "DP/templates/daemonset-device-plugin.yml, daemonset-gfd.yml, _helpers.tpl (fullname, templateLabels), DP/values.yaml (affinity, tolerations)",
		text:   "DaemonSets nvidia-device-plugin and nvidia-device-plugin-gpu-feature-discovery (the release name holds the chart's), both with pod labels app.kubernetes.io/name=nvidia-device-plugin, app.kubernetes.io/instance=<release>; their affinity requires feature.node.kubernetes.io/pci-10de.present=true (or the CPU vendor NVIDIA, or nvidia.com/gpu.present=true); they tolerate nvidia.com/gpu; gfd.enabled brings NFD's worker DaemonSet <release>-node-feature-discovery-worker (pods app.kubernetes.io/name=node-feature-discovery, role=worker)",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			for _, name := range []string{ops.DevicePluginRelease, ops.DevicePluginRelease + "-gpu-feature-discovery"} {
				pt, err := m.podTemplate("DaemonSet", name)
				if err != nil {
					return fmt.Errorf("DaemonSet %s: %w (have %v)", name, err, m.names())
				}
				if pt.Labels["app.kubernetes.io/name"] != "nvidia-device-plugin" || pt.Labels["app.kubernetes.io/instance"] != r.vc.Release {
					return fmt.Errorf("%s pod labels %v", name, pt.Labels)
				}
				aff := pt.Spec.Affinity
				if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil ||
					!strings.Contains(fmt.Sprint(aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution), ops.NFDNvidiaLabel) {
					return fmt.Errorf("%s must require %s", name, ops.NFDNvidiaLabel)
				}
				if !tolerates(pt.Spec.Tolerations, ops.GPUResource) {
					return fmt.Errorf("%s must tolerate %s", name, ops.GPUResource)
				}
			}
			return nfdWorker(r, r.vc.Release)
		}},
	{id: "gpuop-workloads", chart: "gpu-operator", upstream: upGPUOperator,
		source: "GO/templates/operator.yaml, clusterpolicy.yaml, GO/crds/nvidia.com_clusterpolicies.yaml, GO/values.yaml (nfd, clusterPolicy.deployCR)",
		text:   "Deployment gpu-operator (pods app=gpu-operator, app.kubernetes.io/component=gpu-operator); clusterPolicy.deployCR creates the cluster-scoped ClusterPolicy cluster-policy (nvidia.com/v1) whose status.state is ignored, ready or notReady (CRD clusterpolicies.nvidia.com in crds/, status subresource); the operator makes the operands (driver, toolkit, device plugin, GFD) itself; nfd.enabled brings NFD's worker DaemonSet <release>-node-feature-discovery-worker",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			pt, err := m.podTemplate("Deployment", "gpu-operator")
			if err != nil {
				return fmt.Errorf("Deployment gpu-operator: %w", err)
			}
			if pt.Labels["app"] != "gpu-operator" {
				return fmt.Errorf("operator pod labels %v", pt.Labels)
			}
			if cp := m.find("ClusterPolicy", ops.ClusterPolicyName); cp == nil || cp.GetAPIVersion() != "nvidia.com/v1" {
				return fmt.Errorf("ClusterPolicy %s (nvidia.com/v1) missing from %v", ops.ClusterPolicyName, m.names())
			}
			found := false
			for _, crd := range r.chart.CRDObjects() {
				if strings.Contains(string(crd.File.Data), "name: clusterpolicies.nvidia.com") && strings.Contains(string(crd.File.Data), "notReady") {
					found = true
				}
			}
			if !found {
				return fmt.Errorf("the chart's crds/ must hold clusterpolicies.nvidia.com with status.state ready|notReady")
			}
			return nfdWorker(r, r.vc.Release)
		}},
}
