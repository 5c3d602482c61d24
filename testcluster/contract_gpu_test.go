package testcluster_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"runr.dev/console/ops/gpu"
)

const (
	upDevicePlugin = "nvidia-device-plugin 0.20.0 (NVIDIA/k8s-device-plugin, tag v0.20.0: DP = deployments/helm/nvidia-device-plugin) with node-feature-discovery 0.19.0"
	upGPUOperator  = "gpu-operator v26.7.0 (NVIDIA/gpu-operator, tag v26.7.0: GO = deployments/gpu-operator) with node-feature-discovery 0.19.0"
)

func init() { contractFacts = append(contractFacts, gpuFacts...) }

// nfdWorkloads checks node-feature-discovery's workloads of a release (fullname
// <release>-node-feature-discovery): the master and gc Deployments and the worker
// DaemonSet, their pods' labels, which the console's waits and the simulated cluster
// select on, and the worker's toleration of the GPU nodes' taint.
func nfdWorkloads(r *rendering, release string) error {
	m, err := r.rendered()
	if err != nil {
		return err
	}
	fn := release + "-node-feature-discovery"
	for _, w := range []struct{ kind, name, role string }{
		{"Deployment", fn + "-master", "master"}, {"Deployment", fn + "-gc", "gc"}, {"DaemonSet", fn + "-worker", "worker"},
	} {
		pt, err := m.podTemplate(w.kind, w.name)
		if err != nil {
			return fmt.Errorf("%s %s: %w", w.kind, w.name, err)
		}
		if l := pt.Labels; l["app.kubernetes.io/name"] != "node-feature-discovery" || l["app.kubernetes.io/instance"] != release || l["role"] != w.role {
			return fmt.Errorf("%s %s pod labels %v", w.kind, w.name, l)
		}
		if w.role == "worker" && !tolerates(pt.Spec.Tolerations, gpu.GPUResource) {
			return fmt.Errorf("the NFD worker must tolerate the GPU nodes' taint %s: %v", gpu.GPUResource, pt.Spec.Tolerations)
		}
	}
	return nil
}

// nfdPrune checks node-feature-discovery's post-delete hook Job <fullname>-prune: it runs
// nfd-master -prune as its own ServiceAccount, which may patch the nodes.
func nfdPrune(r *rendering) error {
	m, err := r.rendered()
	if err != nil {
		return err
	}
	fn := r.vc.Release + "-node-feature-discovery"
	var job *batchv1.Job
	for _, h := range m.hooks {
		if h.GetKind() != "Job" || h.GetName() != fn+"-prune" {
			continue
		}
		job = &batchv1.Job{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(h.Object, job); err != nil {
			return err
		}
	}
	if job == nil {
		return fmt.Errorf("no hook Job %s-prune (have %v)", fn, m.names())
	}
	if a := job.Annotations; a["helm.sh/hook"] != "post-delete" || a["helm.sh/hook-delete-policy"] != "before-hook-creation,hook-succeeded" {
		return fmt.Errorf("Job %s hook annotations %v", job.Name, a)
	}
	spec := job.Spec.Template.Spec
	if len(spec.Containers) != 1 || !slices.Equal(spec.Containers[0].Command, []string{"nfd-master"}) || !slices.Contains(spec.Containers[0].Args, "-prune") {
		return fmt.Errorf("Job %s must run nfd-master -prune: %+v", job.Name, spec.Containers)
	}
	if job.Spec.Template.Labels["role"] != "prune" || spec.ServiceAccountName != fn+"-prune" {
		return fmt.Errorf("Job %s pod labels %v, ServiceAccount %q", job.Name, job.Spec.Template.Labels, spec.ServiceAccountName)
	}
	var role rbacv1.ClusterRole
	if h := hookNamed(m, "ClusterRole", fn+"-prune"); h == nil || runtime.DefaultUnstructuredConverter.FromUnstructured(h.Object, &role) != nil {
		return fmt.Errorf("no hook ClusterRole %s-prune", fn)
	}
	for _, rule := range role.Rules {
		if slices.Contains(rule.Resources, "nodes") && slices.Contains(rule.Verbs, "patch") {
			if hookNamed(m, "ServiceAccount", fn+"-prune") == nil || hookNamed(m, "ClusterRoleBinding", fn+"-prune") == nil {
				return fmt.Errorf("the prune Job's ServiceAccount and ClusterRoleBinding must be hooks too")
			}
			return nil
		}
	}
	return fmt.Errorf("ClusterRole %s-prune may not patch nodes: %+v", fn, role.Rules)
}

func hookNamed(m *manifest, kind, name string) *unstructured.Unstructured {
	for _, h := range m.hooks {
		if h.GetKind() == kind && h.GetName() == name {
			return h
		}
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
		source: "DP/templates/daemonset-device-plugin.yml, daemonset-gfd.yml, daemonset-mps-control-daemon.yml, _helpers.tpl (fullname, templateLabels, selectorLabels), DP/values.yaml (affinity, tolerations); NFD 0.19.0 templates/master.yaml, nfd-gc.yaml, worker.yaml, _helpers.tpl",
		text:   "DaemonSets nvidia-device-plugin, nvidia-device-plugin-gpu-feature-discovery and (whenever devicePlugin.enabled, as by default) nvidia-device-plugin-mps-control-daemon (nodeSelector nvidia.com/mps.capable=true), all three with the one selector and pod labels app.kubernetes.io/name=nvidia-device-plugin, app.kubernetes.io/instance=<release> (a pod is told apart by its controller, not its labels); their affinity requires feature.node.kubernetes.io/pci-10de.present=true (or the CPU vendor NVIDIA, or nvidia.com/gpu.present=true); they tolerate nvidia.com/gpu; gfd.enabled brings node-feature-discovery: Deployments <release>-node-feature-discovery-master and -gc, DaemonSet -worker (pods app.kubernetes.io/name=node-feature-discovery, app.kubernetes.io/instance=<release>, role=master, gc, worker)",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			want := map[string]string{"app.kubernetes.io/name": "nvidia-device-plugin", "app.kubernetes.io/instance": r.vc.Release}
			for _, name := range []string{gpu.DevicePluginRelease, gpu.DevicePluginRelease + "-gpu-feature-discovery", gpu.DevicePluginRelease + "-mps-control-daemon"} {
				var ds appsv1.DaemonSet
				if err := m.typed("DaemonSet", name, &ds); err != nil {
					return fmt.Errorf("DaemonSet %s: %w", name, err)
				}
				pt := &ds.Spec.Template
				if ds.Spec.Selector == nil || !maps.Equal(ds.Spec.Selector.MatchLabels, want) || pt.Labels["app.kubernetes.io/name"] != "nvidia-device-plugin" || pt.Labels["app.kubernetes.io/instance"] != r.vc.Release {
					return fmt.Errorf("%s selector %v, pod labels %v", name, ds.Spec.Selector, pt.Labels)
				}
				aff := pt.Spec.Affinity
				if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil ||
					!strings.Contains(fmt.Sprint(aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution), gpu.NFDNvidiaLabel) {
					return fmt.Errorf("%s must require %s", name, gpu.NFDNvidiaLabel)
				}
				if !tolerates(pt.Spec.Tolerations, gpu.GPUResource) {
					return fmt.Errorf("%s must tolerate %s", name, gpu.GPUResource)
				}
				if strings.HasSuffix(name, "-mps-control-daemon") && pt.Spec.NodeSelector["nvidia.com/mps.capable"] != "true" {
					return fmt.Errorf("%s must select nodes nvidia.com/mps.capable=true: %v", name, pt.Spec.NodeSelector)
				}
			}
			return nfdWorkloads(r, r.vc.Release)
		}},
	{id: "nfd-prune", chart: "*", cases: []string{"gpu-operator", "nvidia-device-plugin"}, upstream: upDevicePlugin + "; " + upGPUOperator,
		source: "NFD 0.19.0 templates/post-delete-job.yaml, values.yaml (postDeleteCleanup: true); cmd/nfd-master/main.go (-prune), pkg/nfd-master/nfd-master.go (prune)",
		text:   "node-feature-discovery's labels are written by nfd-master, and helm uninstall runs the post-delete hook Job <release>-node-feature-discovery-prune (postDeleteCleanup, true by default; hook-delete-policy before-hook-creation,hook-succeeded; pods role=prune) whose nfd-master -prune removes from every node the labels and annotations nfd-master wrote, as ServiceAccount <fullname>-prune with ClusterRole <fullname>-prune (nodes get/patch/update/list), all hooks",
		check:  nfdPrune},
	{id: "gpuop-workloads", chart: "gpu-operator", upstream: upGPUOperator,
		source: "GO/templates/operator.yaml, clusterpolicy.yaml, GO/crds/nvidia.com_clusterpolicies.yaml, GO/values.yaml (nfd, node-feature-discovery, clusterPolicy.deployCR); GO/charts/node-feature-discovery/templates/master.yaml, nfd-gc.yaml, worker.yaml",
		text:   "Deployment gpu-operator (pods app=gpu-operator, app.kubernetes.io/component=gpu-operator); clusterPolicy.deployCR creates the cluster-scoped ClusterPolicy cluster-policy (nvidia.com/v1) whose status.state is ignored, ready or notReady (CRD clusterpolicies.nvidia.com in crds/, status subresource); the operator makes the operands (driver, toolkit, device plugin, GFD) itself; nfd.enabled brings node-feature-discovery: Deployments <release>-node-feature-discovery-master and -gc, DaemonSet -worker (pods app.kubernetes.io/name=node-feature-discovery, app.kubernetes.io/instance=<release>, role=master, gc, worker; gc and worker run as the master's ServiceAccount node-feature-discovery)",
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
			if cp := m.find("ClusterPolicy", gpu.ClusterPolicyName); cp == nil || cp.GetAPIVersion() != "nvidia.com/v1" {
				return fmt.Errorf("ClusterPolicy %s (nvidia.com/v1) missing from %v", gpu.ClusterPolicyName, m.names())
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
			if err := nfdWorkloads(r, r.vc.Release); err != nil {
				return err
			}
			fn := r.vc.Release + "-node-feature-discovery"
			for kind, name := range map[string]string{"Deployment": fn + "-gc", "DaemonSet": fn + "-worker"} {
				if pt, _ := m.podTemplate(kind, name); pt.Spec.ServiceAccountName != "node-feature-discovery" {
					return fmt.Errorf("%s %s runs as %q, not the master's ServiceAccount node-feature-discovery", kind, name, pt.Spec.ServiceAccountName)
				}
			}
			if m.find("ServiceAccount", "node-feature-discovery") == nil {
				return fmt.Errorf("no ServiceAccount node-feature-discovery (have %v)", m.names())
			}
			return nil
		}},
}
