package nodes

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The Workers tab says which kubelet versions run where, which distribution the versions
// show, whether the console upgrades it (k3s, rke2) and, when not, why (and how it is
// done instead).
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
		ours  bool
	}{
		{"kubeadm", []corev1.Node{node("a", "v1.36.3", nil), node("b", "v1.36.3", nil)}, "kubernetes", "run kubeadm upgrade", false, false},
		{"k3s", []corev1.Node{node("a", "v1.35.2+k3s1", nil)}, "k3s", "upgrades k3s node by node through Rancher's system-upgrade-controller", false, true},
		{"rke2", []corev1.Node{node("a", "v1.35.2+rke2r1", nil)}, "rke2", "upgrades rke2 node by node", false, true},
		{"eks", []corev1.Node{node("a", "v1.34.4-eks-a1b2c3", nil)}, "eks", "Amazon EKS manages", false, false},
		{"gke", []corev1.Node{node("a", "v1.34.4-gke.1200", nil)}, "gke", "Google Kubernetes Engine", false, false},
		{"aks", []corev1.Node{node("a", "v1.34.4", map[string]string{"kubernetes.azure.com/cluster": "mc_rg"})}, "aks", "Azure Kubernetes Service", false, false},
		{"mixed", []corev1.Node{node("a", "v1.35.1", nil), node("b", "v1.36.3", nil), node("c", "v1.36.3", nil)}, "kubernetes", "run 2 kubelet versions", true, false},
	} {
		u := clusterUpgrades(tc.nodes)
		if u.Distribution != tc.dist || !strings.Contains(u.Why, tc.why) || u.Mixed() != tc.mixed || u.Upgradable != tc.ours {
			t.Errorf("%s: %+v", tc.name, u)
		}
	}
	u := clusterUpgrades([]corev1.Node{node("c", "v1.35.1", nil), node("b", "v1.36.3", nil), node("a", "v1.36.3", nil)})
	if len(u.Versions) != 2 || u.Versions[0].Version != "v1.36.3" || strings.Join(u.Versions[0].Nodes, ",") != "a,b" || u.Versions[1].Nodes[0] != "c" {
		t.Fatalf("versions %+v", u.Versions)
	}
}

// An upgrade's target is refused with the reason: not k3s or rke2, not a release of the
// cluster's distribution, a downgrade, no newer release, or a skipped minor version.
func TestCheckUpgradeTarget(t *testing.T) {
	node := func(name, version string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: version}}}
	}
	k3s := clusterUpgrades([]corev1.Node{node("a", "v1.34.1+k3s1"), node("b", "v1.34.1+k3s1"), node("c", "v1.33.5+k3s1")})
	for target, want := range map[string]string{
		"v1.34.2+k3s1":   "",
		"v1.34.1+k3s2":   "",
		"v1.34.1+k3s1":   "",
		"":               "Give the release to upgrade to, such as v1.34.2+k3s1.",
		"v1.34.2":        `"v1.34.2" is not a k3s release`,
		"v1.34.2+rke2r1": `"v1.34.2+rke2r1" is not a k3s release`,
		"v1.34.0+k3s1":   "v1.34.0+k3s1 is older than v1.34.1+k3s1 on a, b: the console does not downgrade.",
		"v1.35.0+k3s1":   "Upgrade one minor version at a time: the oldest node runs 1.33, so the next is a 1.34 release.",
	} {
		if got := CheckUpgradeTarget(k3s, target); want == "" && got != "" || want != "" && !strings.Contains(got, want) {
			t.Errorf("%q: %q, want %q", target, got, want)
		}
	}
	if got := CheckUpgradeTarget(clusterUpgrades([]corev1.Node{node("a", "v1.34.1+k3s1")}), "v1.34.1+k3s1"); got != "Every node runs v1.34.1+k3s1 already." {
		t.Errorf("the same release: %q", got)
	}
	if got := CheckUpgradeTarget(clusterUpgrades([]corev1.Node{node("a", "v1.36.3")}), "v1.37.0"); !strings.HasPrefix(got, "The console upgrades k3s and rke2 clusters only") {
		t.Errorf("kubeadm: %q", got)
	}
	if got := CheckUpgradeTarget(clusterUpgrades([]corev1.Node{node("a", "v1.34.1+rke2r1")}), "v1.34.2+rke2r1"); got != "" {
		t.Errorf("rke2: %q", got)
	}
}
