package e2e

import (
	"context"
	"strings"
	"testing"

	"runr.dev/console/store"
)

// The Tracing tab: the backend's status, what is in effect and why, the retention and the
// regions of the cluster sharing the backend; a mode the console does not know is refused
// beside the field and changes nothing; Off and On are saved and applied by a job shown
// live; Remove turns tracing off after a confirmation.
func TestTracingTab(t *testing.T) {
	c := startConsole(t)
	cl := cluster(t)
	ctx := context.Background()
	token := c.run("token", "create", "--email", ownerEmail, "--name", "e2e", "--scopes", "*")
	// The first region is the one shown; the other shares its cluster.
	var id string
	for _, name := range []string{"e2e-tr", "e2e-tr-other"} {
		var created struct{ Data struct{ ID string } }
		if st := api(t, c, token, "POST", "/api/knative-regions", map[string]any{"name": name, "kubeconfig": string(cl.Kubeconfig()), "redis_mode": "none"}, &created); st != 201 {
			t.Fatalf("create region %s: %d", name, st)
		}
		if id == "" {
			id = created.Data.ID
		}
	}
	mode := func() store.TracingMode {
		t.Helper()
		r, err := c.Store.RegionByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return r.TracingMode
	}

	b := newBrowser(t, c.URL)
	b.login(ownerEmail, ownerPassword)
	b.open("/regions/"+id, "[data-testid=tab-tracing]")
	b.click("[data-testid=tab-tracing]")
	b.visible("[data-testid=tracing-tab]", shortWait)
	if got := b.attr("[data-testid=tracing-status] [data-state]", "data-state"); got != "not_installed" {
		b.fatalf("tracing status %q before Serving, want not_installed", got)
	}
	if got := b.text("[data-testid=tracing-in-effect]"); got != "on, the console's default" {
		b.fatalf("in effect: %q", got)
	}
	if got := b.text("[data-testid=tracing-retention]"); !strings.HasPrefix(got, "72 hours, decided by e2e-tr ") {
		b.fatalf("retention: %q", got)
	}
	// The cluster's other region has tracing on but no Serving: it does not use the backend.
	if got := b.text("[data-testid=tracing-sharing]"); got != "No other region of this cluster uses it." {
		b.fatalf("sharing: %q", got)
	}
	if b.count("[data-testid=tracing-waits]") != 1 {
		b.fatalf("tracing on without Serving must say that it waits for Serving")
	}

	// A mode the console does not know: refused beside the field, nothing changed.
	b.eval(`(() => { const o = document.createElement("option"); o.value = "sometimes"; o.textContent = "Sometimes";
		const s = document.querySelector("#f-mode"); s.appendChild(o); s.value = "sometimes"; return true })()`, nil)
	b.setValue("#f-retention_hours", "9000")
	b.submit("[data-testid=save-tracing]")
	b.visible("[data-testid=error-mode]", shortWait)
	b.expectDescribedBy("#f-mode", "err-mode")
	b.expectDescribedBy("#f-retention_hours", "err-retention_hours")
	if b.value("#f-retention_hours") != "9000" {
		b.fatalf("the refused retention is not kept in the form: %q", b.value("#f-retention_hours"))
	}
	if r, err := c.Store.RegionByID(ctx, id); err != nil || r.TracingMode != store.TracingDefault || r.TracingRetentionHours != 0 {
		t.Fatalf("a refused form changed the region: %v %+v", err, r)
	}
	b.setValue("#f-retention_hours", "")

	// Off: saved, applied by a job shown live; nothing to remove.
	b.setValue("#f-mode", "off")
	b.submit("[data-testid=save-tracing]")
	b.expectFlash("Tracing saved")
	b.expectJobSucceeds("Tracing of e2e-tr: off")
	if m := mode(); m != store.TracingOff {
		t.Fatalf("tracing mode after Off: %q", m)
	}
	b.waitFor("the tab to show tracing off", func() bool {
		return b.text("[data-testid=tracing-in-effect]") == "off, this region's own setting" && b.count("[data-testid=action-remove-tracing]") == 0
	}, shortWait)

	// On, then Remove after a confirmation that is first declined.
	b.setValue("#f-mode", "on")
	b.setValue("#f-retention_hours", "96")
	b.submit("[data-testid=save-tracing]")
	b.expectJobSucceeds("Tracing of e2e-tr: on")
	if r, err := c.Store.RegionByID(ctx, id); err != nil || r.TracingMode != store.TracingOn || r.TracingRetentionHours != 96 {
		t.Fatalf("tracing after On with 96 h: %v %+v", err, r)
	}
	b.waitFor("the tab to show the region's retention", func() bool {
		return strings.HasPrefix(b.text("[data-testid=tracing-retention]"), "96 hours, decided by e2e-tr ") && b.value("#f-retention_hours") == "96"
	}, shortWait)
	b.visible("[data-testid=action-remove-tracing]", shortWait)
	b.accept.Store(false)
	b.click("[data-testid=action-remove-tracing]")
	b.waitFor("the confirmation", func() bool { return len(b.dialogsSeen()) > 0 }, shortWait)
	if m := mode(); m != store.TracingOn {
		t.Fatalf("a declined Remove changed the mode to %q", m)
	}
	b.accept.Store(true)
	b.click("[data-testid=action-remove-tracing]")
	b.expectFlash("Tracing is off for this region")
	if m := mode(); m != store.TracingOff {
		t.Fatalf("tracing mode after Remove: %q", m)
	}
	b.shot("tracing")
}
