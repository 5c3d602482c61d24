package runtimes

import (
	"bytes"
	"context"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"runr.dev/console/ops/isolation"
	"runr.dev/console/store"
	"runr.dev/console/views"
)

// TestKataInstallNeedsANode: with no node that can run Kata the Install button is
// disabled and says why; one candidate node (KVM not probed yet) enables it.
func TestKataInstallNeedsANode(t *testing.T) {
	// blocked reports whether the tab says no node can run Kata, and whether its Install
	// button is disabled.
	blocked := func(nodes []isolation.SandboxNode) (reason, disabled bool) {
		d := views.IsolationData{RegionID: "r1"}
		fillIsolation(&d, &store.Region{ID: "r1"}, nodes)
		var b bytes.Buffer
		if err := views.IsolationTab(views.Page{Can: views.Permissions{SandboxManage: true}}, d).Render(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		doc, err := goquery.NewDocumentFromReader(&b)
		if err != nil {
			t.Fatal(err)
		}
		install := doc.Find(`[data-testid="install-kata"]`)
		if install.Length() != 1 {
			t.Fatalf("the tab has %d Install Kata buttons", install.Length())
		}
		_, disabled = install.Attr("disabled")
		return doc.Find(`[data-testid="kata-no-node"]`).Length() > 0, disabled
	}
	noKVM := isolation.SandboxNode{Name: "n1", Runtime: "containerd", Arch: "amd64", KVM: "false", KataReason: "no /dev/kvm", KataHypervisors: []string{"qemu"}}
	if reason, disabled := blocked([]isolation.SandboxNode{noKVM}); !reason || !disabled {
		t.Fatalf("no eligible node: the Install button must be disabled (%v) with its reason (%v)", disabled, reason)
	}
	unprobed := noKVM
	unprobed.Name, unprobed.KVM = "n2", ""
	if reason, disabled := blocked([]isolation.SandboxNode{noKVM, unprobed}); reason || disabled {
		t.Fatal("a node not probed yet may run Kata: the Install button stays enabled")
	}
}
