package ops

import (
	"slices"
	"sort"
	"strings"

	"runr.dev/console/helm"
)

// The sandbox runtimes' charts: kata-deploy (kata-containers, published to OCI only) and
// SpinKube's runtime-class-manager, the maintained installer of WebAssembly shims (KWasm's
// operator is archived and points to it).
var (
	ChartKataDeploy          = helm.ChartRef{Repo: "oci://ghcr.io/kata-containers/kata-deploy-charts", Name: "kata-deploy", Version: "3.32.0"}
	ChartRuntimeClassManager = helm.ChartRef{Repo: "oci://ghcr.io/spinframework/charts", Name: "runtime-class-manager", Version: "0.2.0"}
)

// Sandbox names on the cluster.
const (
	SandboxNamespace = "runr-sandbox"
	KataRelease      = "kata-deploy"
	WasmRelease      = "runtime-class-manager"
	// KataEligibleLabel marks the nodes kata-deploy may install on (containerd or CRI-O,
	// and /dev/kvm): the console sets it, kata-deploy's nodeSelector reads it.
	KataEligibleLabel = "runr.dev/kata"
	// KVMLabel is what the KVM probe found on a node: "true" or "false".
	KVMLabel = "runr.dev/kvm"
	// WasmLabel marks the nodes the WebAssembly shims are installed on.
	WasmLabel = "runr.dev/wasm"
	// GVisorLabel marks the nodes the gVisor installer registered runsc on.
	GVisorLabel = "runr.dev/gvisor"
)

// Hypervisors are the Kata hypervisors an administrator picks from, by kata-deploy's
// shim name.
var Hypervisors = []string{"qemu", "clh", "fc", "dragonball"}

// KataRuntimeClass is the RuntimeClass kata-deploy creates for a hypervisor (its handler
// has the same name).
func KataRuntimeClass(hypervisor string) string { return "kata-" + hypervisor }

// kataDropIns are RunR's Kata configuration per hypervisor (kata-deploy writes each as
// the shim's config.d/50-user-overrides.toml): guests boot without systemd and with a
// small base; Dragonball guests get 1 vCPU plus the pod's CPU limits.
var kataDropIns = map[string]string{
	"qemu":       "[hypervisor.qemu]\ndefault_vcpus = 1\ndefault_memory = 256\n[agent.kata]\nenable_tracing = false\n",
	"clh":        "[hypervisor.clh]\ndefault_vcpus = 1\ndefault_memory = 256\n[agent.kata]\nenable_tracing = false\n",
	"fc":         "[hypervisor.firecracker]\ndefault_vcpus = 1\ndefault_memory = 256\n[agent.kata]\nenable_tracing = false\n",
	"dragonball": "[hypervisor.dragonball]\ndefault_vcpus = 1\ndefault_memory = 256\nstatic_sandbox_resource_mgmt = false\n[agent.kata]\nenable_tracing = false\n",
}

// KataValues are kata-deploy's values: the picked hypervisors only, each with RunR's
// drop-in, on the nodes labelled eligible, with a RuntimeClass per hypervisor. distribution
// is k8s, k3s or rke2 (where containerd's configuration lives).
func KataValues(hypervisors []string, distribution string) map[string]any {
	shims := map[string]any{"disableAll": true}
	hs := append([]string{}, hypervisors...)
	sort.Strings(hs)
	for _, h := range hs {
		shims[h] = map[string]any{"enabled": true, "dropIn": kataDropIns[h]}
	}
	def := "qemu"
	if len(hs) > 0 && !slices.Contains(hs, "qemu") {
		def = hs[0]
	}
	return map[string]any{
		"k8sDistribution": distribution,
		"nodeSelector":    map[string]any{KataEligibleLabel: "eligible"},
		"shims":           shims,
		"defaultShim":     map[string]any{"amd64": def, "arm64": def},
		"runtimeClasses":  map[string]any{"enabled": true, "createDefault": false},
	}
}

// WasmValues are runtime-class-manager's values: its images at the chart's version, not
// "latest".
func WasmValues() map[string]any {
	tag := "v" + ChartRuntimeClassManager.Version
	return map[string]any{
		"image": map[string]any{"tag": tag},
		"rcm": map[string]any{
			"shimDownloaderImage": map[string]any{"tag": tag},
			"nodeInstallerImage":  map[string]any{"tag": tag},
		},
	}
}

// WasmShim is a WebAssembly shim the console installs through runtime-class-manager.
type WasmShim struct {
	Name, RuntimeClass, Handler string
	// Downloads are the shim's release archives per architecture, with their sha256.
	Downloads map[string][2]string
}

// WasmShims are the shims of the WebAssembly support: Spin (SpinKube's) and wasmtime
// (runwasi's), as runtime-class-manager's samples of v0.2.0 name them.
var WasmShims = []WasmShim{
	{Name: "spin-v2", RuntimeClass: "wasmtime-spin-v2", Handler: "spin-v2", Downloads: map[string][2]string{
		"x86_64":  {"https://github.com/spinframework/containerd-shim-spin/releases/download/v0.23.0/containerd-shim-spin-v2-linux-x86_64.tar.gz", "eec8df96fa3a4fe5dbc57ffb706461692c055299dd6d22dff9444863a2a12281"},
		"aarch64": {"https://github.com/spinframework/containerd-shim-spin/releases/download/v0.23.0/containerd-shim-spin-v2-linux-aarch64.tar.gz", "a923f08d91c110d2cda29fbc380273e6d0a97aa0bab455c55f613c8d5a8bfbe4"},
	}},
}

// ShimObject is the Shim resource of runtime-class-manager for a shim, on the nodes
// labelled WasmLabel.
func ShimObject(sh WasmShim) map[string]any {
	var platforms []any
	archs := make([]string, 0, len(sh.Downloads))
	for a := range sh.Downloads {
		archs = append(archs, a)
	}
	sort.Strings(archs)
	for _, a := range archs {
		d := sh.Downloads[a]
		platforms = append(platforms, map[string]any{"os": "linux", "arch": a, "location": d[0], "sha256": d[1]})
	}
	return map[string]any{
		"apiVersion": "runtime.spinkube.dev/v1alpha1", "kind": "Shim",
		"metadata": map[string]any{"name": sh.Name, "labels": map[string]any{"app.kubernetes.io/managed-by": "runr"}},
		"spec": map[string]any{
			"nodeSelector":             map[string]any{WasmLabel: "true"},
			"fetchStrategy":            map[string]any{"platforms": platforms},
			"containerdRuntimeOptions": map[string]any{"SystemdCgroup": "true"},
			"runtimeClass":             map[string]any{"name": sh.RuntimeClass, "handler": sh.Handler},
			"rolloutStrategy":          map[string]any{"type": "recreate"},
		},
	}
}

// distributionOf names a cluster's Kubernetes distribution from its kubelets' version
// ("v1.33.4+k3s1"): k3s, rke2, else k8s.
func distributionOf(kubeletVersions []string) string {
	for _, v := range kubeletVersions {
		switch {
		case strings.Contains(v, "+k3s"):
			return "k3s"
		case strings.Contains(v, "+rke2"):
			return "rke2"
		}
	}
	return "k8s"
}
