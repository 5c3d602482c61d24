package isolation

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/kube"
)

// Labels the sandbox runtimes put on the nodes they run on: kata-deploy's own, the gVisor
// installer's and runtime-class-manager's (the shim's name, "provisioned").
const (
	KataRuntimeLabel = "katacontainers.io/kata-runtime"
	shimProvisioned  = "provisioned"
)

// SandboxNode is a node as the Isolation tab shows it: its container runtime, whether it
// has /dev/kvm, which sandbox runtimes run on it, and whether Kata may go there (with why
// not).
type SandboxNode struct {
	Name string `json:"name"`
	// Runtime is containerd, cri-o, docker or what the node reports; Flavor k3s or rke2.
	Runtime        string `json:"runtime"`
	RuntimeVersion string `json:"runtime_version"`
	Flavor         string `json:"flavor,omitempty"`
	// Arch is the node's architecture (label kubernetes.io/arch: amd64, arm64, ...).
	Arch string `json:"arch"`
	// KVM is "true" or "false" as the probe found it, "" when not probed yet.
	KVM       string   `json:"kvm"`
	Installed []string `json:"installed"`
	// KataEligible says whether Kata may go on the node with some hypervisor; which ones
	// run on its architecture is KataHypervisors.
	KataEligible    bool     `json:"kata_eligible"`
	KataReason      string   `json:"kata_reason,omitempty"`
	KataHypervisors []string `json:"kata_hypervisors"`
	// Containerd says whether the node's runtime is containerd (gVisor and the WebAssembly
	// shims need it).
	Containerd bool `json:"containerd"`
}

// sandboxNode reads a node's sandbox readiness from its status and labels.
func sandboxNode(n *corev1.Node) SandboxNode {
	rt, ver, _ := strings.Cut(n.Status.NodeInfo.ContainerRuntimeVersion, "://")
	arch := n.Labels[ArchLabel]
	if arch == "" {
		arch = n.Status.NodeInfo.Architecture
	}
	sn := SandboxNode{Name: n.Name, Runtime: rt, RuntimeVersion: ver, Arch: arch, KVM: n.Labels[KVMLabel], Installed: []string{},
		KataHypervisors: HypervisorsOn(Hypervisors, arch)}
	kubelet := n.Status.NodeInfo.KubeletVersion
	switch {
	case strings.Contains(kubelet, "+k3s") || strings.Contains(ver, "-k3s"):
		sn.Flavor = "k3s"
	case strings.Contains(kubelet, "+rke2"):
		sn.Flavor = "rke2"
	}
	sn.Containerd = rt == "containerd"
	switch {
	case rt != "containerd" && rt != "cri-o":
		sn.KataReason = fmt.Sprintf("Kata needs containerd or CRI-O; this node runs %s", orUnknown(rt))
	case arch == "":
		sn.KataReason = "the node reports no architecture (label " + ArchLabel + ")"
	case len(sn.KataHypervisors) == 0:
		sn.KataReason = fmt.Sprintf("none of the hypervisors (%s) runs on %s", strings.Join(Hypervisors, ", "), arch)
	case sn.KVM == "":
		sn.KataReason = "/dev/kvm not probed yet"
	case sn.KVM != "true":
		sn.KataReason = "no /dev/kvm on this node"
	default:
		sn.KataEligible = true
	}
	if n.Labels[KataRuntimeLabel] == "true" {
		sn.Installed = append(sn.Installed, "kata")
	}
	if n.Labels[GVisorLabel] == "true" {
		sn.Installed = append(sn.Installed, "gvisor")
	}
	for _, sh := range WasmShims {
		if n.Labels[sh.Name] == shimProvisioned {
			sn.Installed = append(sn.Installed, "wasm")
			break
		}
	}
	return sn
}

// kataEligibleWith reports whether Kata with the picked hypervisors goes on a node: it is
// eligible and one of them runs on its architecture; else why not.
func kataEligibleWith(n SandboxNode, picks []string) (bool, string) {
	if !n.KataEligible {
		return false, n.KataReason
	}
	if len(HypervisorsOn(picks, n.Arch)) == 0 {
		return false, fmt.Sprintf("none of the picked hypervisors (%s) runs on %s; %s does", strings.Join(sortedCopy(picks), ", "), n.Arch, strings.Join(n.KataHypervisors, ", "))
	}
	return true, ""
}

// KataCandidate reports whether a node may be eligible for Kata once probed: containerd
// or CRI-O, an architecture with a hypervisor, and /dev/kvm found or not looked for yet.
func KataCandidate(n SandboxNode) bool {
	return n.KataEligible || n.KVM == "" && (n.Runtime == "containerd" || n.Runtime == "cri-o") && len(n.KataHypervisors) > 0
}

// KataNodesFor lists the nodes that can run a hypervisor: eligible for Kata, or not probed
// yet, on an architecture it runs on.
func KataNodesFor(nodes []SandboxNode, hypervisor string) []string {
	var out []string
	for _, n := range nodes {
		if KataCandidate(n) && slices.Contains(n.KataHypervisors, hypervisor) {
			out = append(out, n.Name)
		}
	}
	return out
}

func sortedCopy(xs []string) []string {
	out := append([]string{}, xs...)
	sort.Strings(out)
	return out
}

func orUnknown(s string) string {
	if s == "" {
		return "an unknown runtime"
	}
	return s
}

// SandboxNodes reads the sandbox readiness of every node of a cluster, by name.
func SandboxNodes(ctx context.Context, c *kube.Cluster) ([]SandboxNode, error) {
	nodes, err := c.Clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list the nodes: %w", err)
	}
	out := make([]SandboxNode, len(nodes.Items))
	for i := range nodes.Items {
		out[i] = sandboxNode(&nodes.Items[i])
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out, nil
}
