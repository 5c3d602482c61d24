package kit

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Checklist verdicts: a failure refuses the cluster, a warning does not.
const (
	CheckPass CheckStatus = "pass"
	CheckWarn CheckStatus = "warn"
	CheckFail CheckStatus = "fail"
)

// CheckItem is one line of the connection checklist, with its evidence.
type CheckItem struct {
	Key      string      `json:"key"`
	Title    string      `json:"title"`
	Status   CheckStatus `json:"status"`
	Evidence string      `json:"evidence"`
	Details  []string    `json:"details,omitempty"`
}

// NodeInfo summarises a node for the checklist and the worker selection.
type NodeInfo struct {
	Name         string   `json:"name"`
	Roles        []string `json:"roles"`
	Ready        bool     `json:"ready"`
	CPU          string   `json:"cpu"`
	Memory       string   `json:"memory"`
	Kubelet      string   `json:"kubelet_version"`
	OSImage      string   `json:"os_image"`
	Schedulable  bool     `json:"schedulable"`
	ControlPlane bool     `json:"control_plane"`
	// BelowFloor names the preflight floor's failed checks with their evidence ("" when
	// the node meets it).
	BelowFloor string `json:"below_floor,omitempty"`
}

// NodeSummary reads a node's roles, readiness and allocatable resources.
func NodeSummary(n *corev1.Node) NodeInfo {
	ni := NodeInfo{Name: n.Name, Kubelet: n.Status.NodeInfo.KubeletVersion, OSImage: n.Status.NodeInfo.OSImage, Schedulable: !n.Spec.Unschedulable}
	ni.Roles = NodeRoles(n)
	for _, r := range ni.Roles {
		if r == "control-plane" {
			ni.ControlPlane = true
		}
	}
	for _, cd := range n.Status.Conditions {
		if cd.Type == corev1.NodeReady {
			ni.Ready = cd.Status == corev1.ConditionTrue
		}
	}
	ni.CPU = n.Status.Allocatable.Cpu().String()
	ni.Memory = HumanBytes(n.Status.Allocatable.Memory())
	return ni
}

// CheckStatus is the verdict of one line of the connection checklist.
type CheckStatus string

// NodeRoles reads the roles of a node from its labels: control-plane and/or worker.
func NodeRoles(n *corev1.Node) []string {
	var roles []string
	cp := false
	for k := range n.Labels {
		if k == "node-role.kubernetes.io/control-plane" || k == "node-role.kubernetes.io/master" {
			cp = true
		}
	}
	if cp {
		roles = append(roles, "control-plane")
	}
	// A node is a worker when it says so, or when it is not a control plane, or when a
	// control plane runs workloads (no NoSchedule taint of its role).
	_, worker := n.Labels["node-role.kubernetes.io/worker"]
	if worker || !cp || !hasControlPlaneTaint(n) {
		roles = append(roles, "worker")
	}
	sort.Strings(roles)
	return roles
}

// HumanBytes renders a memory quantity in GiB or MiB.
func HumanBytes(q *resource.Quantity) string {
	b := q.Value()
	if b >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	}
	return fmt.Sprintf("%d MiB", b>>20)
}

func hasControlPlaneTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if (t.Key == "node-role.kubernetes.io/control-plane" || t.Key == "node-role.kubernetes.io/master") && t.Effect == corev1.TaintEffectNoSchedule {
			return true
		}
	}
	return false
}
