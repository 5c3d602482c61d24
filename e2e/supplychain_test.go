package e2e

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"runr.dev/console/supplychain/sigtest"
)

// The Supply chain tab: a wrong key is refused beside its field and kept in the form; a
// key, the gate's requirements and a data location are saved; the admission policy is
// applied by a job shown live, and its state is shown.
func TestSupplyChainTab(t *testing.T) {
	c := startConsole(t)
	cl := cluster(t)
	token := c.run("token", "create", "--email", ownerEmail, "--name", "e2e", "--scopes", "*")
	var created struct{ Data struct{ ID string } }
	if st := api(t, c, token, "POST", "/api/knative-regions", map[string]any{"name": "e2e-sc", "kubeconfig": string(cl.Kubeconfig()), "redis_mode": "none"}, &created); st != 201 {
		t.Fatalf("create region: %d", st)
	}
	id := created.Data.ID
	key := sigtest.NewKey(t)

	b := newBrowser(t, c.URL)
	b.login(ownerEmail, ownerPassword)
	b.open("/regions/"+id, "[data-testid=tab-supply-chain]")
	b.click("[data-testid=tab-supply-chain]")
	b.visible("[data-testid=supply-chain-tab]", shortWait)
	// The selection follows the body htmx swapped in (the tabs come out of band).
	b.waitFor("the clicked tab to be the selected one", func() bool {
		return b.attr("[data-testid=tab-supply-chain]", "aria-selected") == "true" && b.attr("[data-testid=tab-general]", "aria-selected") == "false"
	}, shortWait)
	if n := b.count(`[role=tab][aria-selected=true]`); n != 1 {
		b.fatalf("%d tabs selected", n)
	}
	if !strings.Contains(b.text("[data-testid=system-images]"), "ghcr.io/brf-tech/runr/**") {
		b.fatalf("the tab names RunR's system images")
	}

	// A wrong key: refused beside the field, the text kept.
	b.setValue("#f-public_keys", "not a key")
	b.setValue("#f-data_location", "eu-central")
	b.submit("[data-testid=save-supply-chain]")
	b.visible("#err-public_keys", shortWait)
	if b.value("#f-public_keys") != "not a key" || b.value("#f-data_location") != "eu-central" {
		b.fatalf("the form keeps what was typed: %q %q", b.value("#f-public_keys"), b.value("#f-data_location"))
	}
	b.expectDescribedBy("#f-public_keys", "err-public_keys")

	// A real key, the gate's requirements, a data location and the admission policy.
	b.setValue("#f-public_keys", key.PublicPEM)
	b.setValue("#f-admission_images", "registry.example.com/acme/**")
	b.do(shortWait, "tick the options", chromedp.Click(chromedp.CSS("input[name=require_sbom]")), chromedp.Click(chromedp.CSS("[data-testid=admission-enabled]")))
	b.setValue("#f-fail_severity", "high")
	b.submit("[data-testid=save-supply-chain]")
	b.waitJS("the admission job to succeed", `document.querySelector("[data-testid=job-status][data-status=succeeded]")`, installWait)
	b.open("/regions/"+id+"?tab=supply-chain", "[data-testid=supply-chain-tab]")
	if b.text("[data-testid=admission-status]") != "ready" || b.count("[data-testid=key-id]") != 1 || b.value("#f-data_location") != "eu-central" ||
		b.value("#f-fail_severity") != "high" {
		b.fatalf("after saving: status %q, %d key(s), location %q, severity %q", b.text("[data-testid=admission-status]"),
			b.count("[data-testid=key-id]"), b.value("#f-data_location"), b.value("#f-fail_severity"))
	}
	b.shot("supply-chain")
}
