package nodes

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The Workers tab says which kubelet versions run where, which distribution the versions
// show, and why the console does not upgrade it (and how it is done instead).
func TestClusterUpgrades(t *testing.T) {
	node := func(name, version string, labels map[string]string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: version}}}
	}
	for _, tc := range []struct {
		name  string
		nodes []corev1.Node
		dist  string
		why   string
		mixed bool
	}{
		{"kubeadm", []corev1.Node{node("a", "v1.36.3", nil), node("b", "v1.36.3", nil)}, "kubernetes", "run kubeadm upgrade", false},
		{"k3s", []corev1.Node{node("a", "v1.35.2+k3s1", nil)}, "k3s", "system-upgrade-controller", false},
		{"rke2", []corev1.Node{node("a", "v1.35.2+rke2r1", nil)}, "rke2", "For rke2", false},
		{"eks", []corev1.Node{node("a", "v1.34.4-eks-a1b2c3", nil)}, "eks", "Amazon EKS manages", false},
		{"gke", []corev1.Node{node("a", "v1.34.4-gke.1200", nil)}, "gke", "Google Kubernetes Engine", false},
		{"aks", []corev1.Node{node("a", "v1.34.4", map[string]string{"kubernetes.azure.com/cluster": "mc_rg"})}, "aks", "Azure Kubernetes Service", false},
		{"mixed", []corev1.Node{node("a", "v1.35.1", nil), node("b", "v1.36.3", nil), node("c", "v1.36.3", nil)}, "kubernetes", "run 2 kubelet versions", true},
	} {
		u := clusterUpgrades(tc.nodes)
		if u.Distribution != tc.dist || !strings.Contains(u.Why, tc.why) || u.Mixed() != tc.mixed {
			t.Errorf("%s: %+v", tc.name, u)
		}
	}
	u := clusterUpgrades([]corev1.Node{node("c", "v1.35.1", nil), node("b", "v1.36.3", nil), node("a", "v1.36.3", nil)})
	if len(u.Versions) != 2 || u.Versions[0].Version != "v1.36.3" || strings.Join(u.Versions[0].Nodes, ",") != "a,b" || u.Versions[1].Nodes[0] != "c" {
		t.Fatalf("versions %+v", u.Versions)
	}
}
