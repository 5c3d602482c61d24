package isolation

import (
	"slices"
	"sort"

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

// ArchLabel is the node label of a node's architecture (amd64, arm64, s390x, ppc64le).
const ArchLabel = "kubernetes.io/arch"

// HypervisorArches are the architectures each hypervisor's shim is installed on, as
// kata-deploy 3.32.0's values.yaml says (shims.<name>.supportedArches): the chart gives a
// pod of another architecture no SHIMS_<ARCH> for it, and a pod given none installs
// kata-deploy's built-in list of its architecture (binary/src/config.rs).
var HypervisorArches = map[string][]string{
	"qemu": {"amd64", "arm64", "s390x", "ppc64le"}, "clh": {"amd64"}, "fc": {"amd64"}, "dragonball": {"amd64"},
}

// HypervisorsOn lists the hypervisors of hs that run on an architecture, sorted.
func HypervisorsOn(hs []string, arch string) []string {
	var out []string
	for _, h := range hs {
		if slices.Contains(HypervisorArches[h], arch) {
			out = append(out, h)
		}
	}
	sort.Strings(out)
	return out
}

// kataArchsOf lists the architectures at least one of the hypervisors runs on, sorted.
func kataArchsOf(hs []string) []string {
	var out []string
	for _, h := range hs {
		for _, a := range HypervisorArches[h] {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	sort.Strings(out)
	return out
}

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
	"dragonball": "[hypervisor.dragonball]\ndefault_vcpus = 1\ndefault_memory = 256\n[runtime]\nstatic_sandbox_resource_mgmt = false\n[agent.kata]\nenable_tracing = false\n",
}

// KataValues are kata-deploy's values: the picked hypervisors only, each with RunR's
// drop-in, on the nodes labelled eligible, with a RuntimeClass per hypervisor. distribution
// is k8s, k3s or rke2 (where containerd's configuration lives). Per architecture the pods
// get what they install explicitly: the default shim of an architecture is set only when
// a pick runs there (else the chart reads none), the pods are kept to the one
// architecture the picks run on when there is one (a pod elsewhere would get no
// SHIMS_<ARCH> and install kata-deploy's whole built-in list), and the RuntimeClass of a
// hypervisor of one architecture schedules on that architecture only.
func KataValues(hypervisors []string, distribution string) map[string]any {
	shims := map[string]any{"disableAll": true}
	hs := append([]string{}, hypervisors...)
	sort.Strings(hs)
	for _, h := range hs {
		shim := map[string]any{"enabled": true, "dropIn": kataDropIns[h]}
		if archs := HypervisorArches[h]; len(archs) == 1 {
			shim["runtimeClass"] = map[string]any{"nodeSelector": map[string]any{ArchLabel: archs[0]}}
		}
		shims[h] = shim
	}
	defaults := map[string]any{}
	for _, arch := range []string{"amd64", "arm64"} {
		on := HypervisorsOn(hs, arch)
		switch {
		case slices.Contains(on, "qemu"):
			defaults[arch] = "qemu"
		case len(on) > 0:
			defaults[arch] = on[0]
		}
	}
	nodeSelector := map[string]any{KataEligibleLabel: "eligible"}
	if archs := kataArchsOf(hs); len(archs) == 1 {
		nodeSelector[ArchLabel] = archs[0]
	}
	return map[string]any{
		"k8sDistribution": distribution,
		"nodeSelector":    nodeSelector,
		"shims":           shims,
		"defaultShim":     defaults,
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
			// Finished installer Jobs go after a minute; the chart's 0 keeps them, and a
			// second install or removal of a shim on the same node would wait for ever.
			"nodeInstallerJob": map[string]any{"ttl": 60},
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
