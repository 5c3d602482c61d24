package e2e

import (
	"strings"
	"testing"

	"runr.dev/console/store"
)

// Flow 3: a StorageClass that never binds. The setup fails live with an error that
// names the object and the next action; the step 2 form comes back with the failed
// attempt's settings, and a retry with StorageClass standard succeeds.
func TestFailingInstall(t *testing.T) {
	cl := cluster(t)
	c := startConsole(t) // RUNR_STORAGE_TEST_TIMEOUT=4s
	b := newBrowser(t, c.URL)
	b.login(ownerEmail, ownerPassword)

	b.open("/regions/new", "[data-testid=step1-form]")
	b.typeInto("#f-name", "e2e-broken")
	b.setValue("#f-kubeconfig", string(cl.Kubeconfig()))
	b.click("[data-testid=check-connection]")
	b.visible("[data-testid=step2-form]", shortWait)
	b.setValue("#f-storage_class", "broken")
	b.submit("[data-testid=save-next]")
	b.waitJS("the setup page", `location.pathname.startsWith("/regions/setups/") && document.querySelector("[data-testid=job]")`, shortWait)
	b.watchJob()
	b.mark()

	// The storage test waits, named, then fails: the page says so without a reload.
	b.waitJS("the job to fail", `document.querySelector("[data-testid=job-status][data-status=failed]")`, installWait)
	if !b.marked() {
		t.Fatal("the failure must arrive without a reload")
	}
	var waits string
	b.eval(`window.__e2e.waits.join("\n")`, &waits)
	if !strings.Contains(waits, "waiting for PVC runr-registry/storage-test to bind (4 s)") {
		t.Fatalf("the storage test must name its wait live; it named:\n%s", waits)
	}
	b.visible("[data-testid=job-error]", shortWait)
	msg := b.text("[data-testid=job-error]")
	for _, want := range []string{"PVC runr-registry/storage-test", "4 s", "choose another StorageClass"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("the error must name the object and the next action (%q): %q", want, msg)
		}
	}
	if st := b.attr("[data-testid=job-step][data-step=storage]", "data-status"); st != "failed" {
		t.Fatalf("the storage step: %s, want failed", st)
	}
	if got := b.text("[data-testid=job-step][data-step=storage] [data-testid=step-message]"); !strings.Contains(got, "PVC runr-registry/storage-test") {
		t.Fatalf("the failed step must carry the message: %q", got)
	}
	if n := b.count(`[data-testid=job-step][data-step=zot][data-status=pending]`); n != 1 {
		t.Fatal("the steps after the failure stay pending")
	}
	var progress string
	b.eval(`document.querySelector("[data-testid=job-progress]").getAttribute("aria-valuenow")`, &progress)
	if progress == "100" || progress == "" {
		t.Fatalf("the progress of a failed setup: %q", progress)
	}
	b.expectWizardStates("done", "failed", "pending", "pending", "pending", "pending", "pending")
	if !strings.Contains(b.text("[data-testid=job-log]"), "Job failed: ") {
		t.Fatal("the log must end with the failure")
	}

	// The step 2 form comes back under the job, live, with the failed attempt's choice.
	b.visible("#setup-retry [data-testid=step2-form]", shortWait)
	if !b.marked() {
		t.Fatal("the retry form must arrive without a reload")
	}
	if got := b.value("#f-storage_class"); got != "broken" {
		t.Fatalf("the retry form must keep the failed attempt's StorageClass, got %q", got)
	}
	if got := b.text("[data-testid=save-next]"); got != "Retry with these settings" {
		t.Fatalf("the retry button says %q", got)
	}
	b.checkLabels("retry form")
	b.shot("failed")

	// A reload shows the same failure and the same form.
	b.do(shortWait, "reload", reload())
	b.visible("#setup-retry [data-testid=step2-form]", shortWait)
	if b.count("#setup-retry [data-testid=step2-form]") != 1 || !strings.Contains(b.text("[data-testid=job-error]"), "choose another StorageClass") {
		t.Fatal("after a reload: the same failure and one retry form")
	}

	// The regions list offers the setup left halfway; it leads back to the same form.
	b.open("/regions", "[data-testid=pending-setups]")
	if got := b.text("[data-testid=pending-setups]"); !strings.Contains(got, "e2e-broken") {
		t.Fatalf("the regions list must offer the failed setup: %q", got)
	}
	b.submit(`[data-testid=pending-setups] a`)
	b.visible("#setup-retry [data-testid=step2-form]", shortWait)

	// Retry with StorageClass standard: the same job goes on and succeeds.
	b.setValue("#f-storage_class", "standard")
	b.watchBusy("[data-testid=save-next]", "")
	b.submit("[data-testid=save-next]")
	b.expectBusy("Retry with these settings")
	b.visible("[data-testid=job]", shortWait)
	b.watchJob()
	b.mark()
	b.waitJS("the retried setup to succeed", `document.querySelector("[data-testid=job-status][data-status=succeeded]") || document.querySelector("[data-testid=job-status][data-status=failed]")`, installWait)
	if st := b.attr("[data-testid=job-status]", "data-status"); st != "succeeded" {
		b.fatalf("the retry %s: %s", st, b.text("[data-testid=job-error]"))
	}
	b.visible("[data-testid=job-next]", shortWait)
	if b.count("[data-testid=job-error]") != 0 {
		t.Fatal("a succeeded retry shows no error")
	}
	if b.count("#setup-retry form") != 0 {
		t.Fatal("a succeeded setup offers no retry form")
	}
	if got := b.text("[data-testid=job-step][data-step=storage] [data-testid=step-message]"); !strings.Contains(got, "standard") {
		t.Fatalf("the storage step after the retry: %q", got)
	}
	b.expectWizardStates("done", "done", "pending", "pending", "pending", "pending", "pending")
	if r, err := c.Store.RegionByName(t.Context(), "e2e-broken"); err != nil || r.RegistryStatus != store.ComponentReady {
		t.Fatalf("the region after the retry: %v %+v", err, r)
	}
	b.checkFeel("setup-retried")
	b.shot("final")
}
