package runtimes

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"runr.dev/console/ops/isolation"
	"runr.dev/console/store"
	"runr.dev/console/views"
)

// TestKataInstallNeedsANode: with no node that can run Kata the Install button is
// disabled and says why; one candidate node (KVM not probed yet) enables it.
func TestKataInstallNeedsANode(t *testing.T) {
	render := func(nodes []isolation.SandboxNode) string {
		d := views.IsolationData{RegionID: "r1"}
		fillIsolation(&d, &store.Region{ID: "r1"}, nodes)
		var b bytes.Buffer
		if err := views.IsolationTab(views.Page{Can: views.Permissions{SandboxManage: true}}, d).Render(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	noKVM := isolation.SandboxNode{Name: "n1", Runtime: "containerd", Arch: "amd64", KVM: "false", KataReason: "no /dev/kvm", KataHypervisors: []string{"qemu"}}
	html := render([]isolation.SandboxNode{noKVM})
	if !strings.Contains(html, `data-testid="kata-no-node"`) || !strings.Contains(html, `data-testid="install-kata" disabled`) {
		t.Fatalf("no eligible node: the Install button must be disabled with its reason:\n%s", html)
	}
	unprobed := noKVM
	unprobed.Name, unprobed.KVM = "n2", ""
	html = render([]isolation.SandboxNode{noKVM, unprobed})
	if strings.Contains(html, `data-testid="kata-no-node"`) || strings.Contains(html, `data-testid="install-kata" disabled`) {
		t.Fatal("a node not probed yet may run Kata: the Install button stays enabled")
	}
}
