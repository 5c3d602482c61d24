package isolation

import (
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestKataValuesPerArchitecture: kata-deploy gets explicitly what each architecture
// installs (issue 31, defect 5).
func TestKataValuesPerArchitecture(t *testing.T) {
	shim := func(v map[string]any, name string) map[string]any {
		return v["shims"].(map[string]any)[name].(map[string]any)
	}
	archOf := func(m map[string]any) any {
		rc, _ := m["runtimeClass"].(map[string]any)
		sel, _ := rc["nodeSelector"].(map[string]any)
		return sel[ArchLabel]
	}

	// Only amd64 hypervisors: the pods stay on amd64 and no arm64 default is set (the chart
	// would not read it).
	v := KataValues([]string{"fc", "dragonball"}, "k3s")
	if sel := v["nodeSelector"].(map[string]any); sel[ArchLabel] != "amd64" || sel[KataEligibleLabel] != "eligible" {
		t.Fatalf("nodeSelector %v", sel)
	}
	if d := v["defaultShim"].(map[string]any); !maps.Equal(d, map[string]any{"amd64": "dragonball"}) {
		t.Fatalf("defaultShim %v", d)
	}
	for _, h := range []string{"fc", "dragonball"} {
		if a := archOf(shim(v, h)); a != "amd64" {
			t.Fatalf("RuntimeClass kata-%s on %v", h, a)
		}
	}

	// QEMU runs everywhere: no architecture for the pods; Cloud Hypervisor's class stays on
	// amd64, QEMU's goes anywhere.
	v = KataValues([]string{"qemu", "clh"}, "k8s")
	if sel := v["nodeSelector"].(map[string]any); len(sel) != 1 {
		t.Fatalf("nodeSelector %v", sel)
	}
	if d := v["defaultShim"].(map[string]any); !maps.Equal(d, map[string]any{"amd64": "qemu", "arm64": "qemu"}) {
		t.Fatalf("defaultShim %v", d)
	}
	if a := archOf(shim(v, "clh")); a != "amd64" {
		t.Fatalf("kata-clh on %v", a)
	}
	if _, ok := shim(v, "qemu")["runtimeClass"]; ok {
		t.Fatal("kata-qemu must not be pinned to an architecture")
	}
}

// TestKataEligibilityByArchitecture: an arm64 node is eligible for QEMU only, and a pick
// set that runs on none of the nodes' architectures is refused with the reason.
func TestKataEligibilityByArchitecture(t *testing.T) {
	node := func(name, arch string) SandboxNode {
		return sandboxNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{ArchLabel: arch, KVMLabel: "true"}},
			Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{ContainerRuntimeVersion: "containerd://2.1.4", Architecture: arch}}})
	}
	arm := node("arm-1", "arm64")
	if !arm.KataEligible || arm.Arch != "arm64" || strings.Join(arm.KataHypervisors, ",") != "qemu" {
		t.Fatalf("arm64 node: %+v", arm)
	}
	if ok, why := kataEligibleWith(arm, []string{"fc", "dragonball"}); ok || !strings.Contains(why, "runs on arm64") || !strings.Contains(why, "qemu does") {
		t.Fatalf("arm64 with Firecracker and Dragonball: %v %q", ok, why)
	}
	if ok, _ := kataEligibleWith(arm, []string{"qemu", "fc"}); !ok {
		t.Fatal("arm64 with QEMU among the picks is eligible")
	}
	if rv := node("rv-1", "riscv64"); rv.KataEligible || !strings.Contains(rv.KataReason, "riscv64") {
		t.Fatalf("riscv64 node: %+v", rv)
	}

	err := kataPicksRunnable([]string{"qemu", "clh"}, map[string][]string{"arm64": {"arm-1"}})
	if err == nil || !strings.Contains(err.Error(), "clh runs on amd64 only") || !strings.Contains(err.Error(), "arm64 (arm-1)") {
		t.Fatalf("Cloud Hypervisor on an arm64-only cluster: %v", err)
	}
	if err := kataPicksRunnable([]string{"qemu", "clh"}, map[string][]string{"arm64": {"arm-1"}, "amd64": {"worker-1"}}); err != nil {
		t.Fatalf("a mixed cluster runs both: %v", err)
	}
}
