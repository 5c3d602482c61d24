package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"runr.dev/console/store"
)

// TestFleetHealthColumn: the regions list says each region's health at a glance with
// its reason on hover, shows only what needs attention on request, and sorts the worst
// first (issue 34: the list said all was well while a cluster was down).
func TestFleetHealthColumn(t *testing.T) {
	c := startConsole(t)
	ctx := context.Background()
	layer := func(s store.HealthState, why string) store.HealthLayer {
		return store.HealthLayer{State: s, Reason: why, CheckedAt: time.Now()}
	}
	for _, r := range []struct {
		name string
		h    store.Health
	}{
		{"a-fine", store.Health{API: layer(store.HealthOK, "answered in 12ms"), Components: layer(store.HealthOK, "all ready"), External: layer(store.HealthOK, "resolves")}},
		{"b-down", store.Health{API: layer(store.HealthDown, "no answer within 10s")}},
		{"c-slow", store.Health{API: layer(store.HealthOK, "answered in 9ms"), Components: layer(store.HealthDegraded, "runr-agent: has not reported for 5m0s"), External: layer(store.HealthOK, "resolves")}},
	} {
		reg := &store.Region{Name: r.name, Kubeconfig: "not a kubeconfig", RedisMode: store.RedisNone}
		if err := c.Store.CreateRegion(ctx, reg); err != nil {
			t.Fatal(err)
		}
		if err := c.Store.SaveCheck(ctx, reg.ID, store.CheckUpdate{CheckedAt: time.Now(), Health: r.h}); err != nil {
			t.Fatal(err)
		}
	}
	b := newBrowser(t, c.URL)
	b.login(ownerEmail, ownerPassword)
	b.open("/regions", "[data-testid=regions-table]")
	rows := func() []string {
		var out []string
		b.eval(`Array.from(document.querySelectorAll("[data-testid=region-row]")).map(r => r.dataset.region + "=" + r.querySelector("[data-testid=region-health]").dataset.health)`, &out)
		return out
	}
	if got := strings.Join(rows(), " "); got != "a-fine=ok b-down=down c-slow=degraded" {
		b.fatalf("health column: %s", got)
	}
	if got := b.attr("[data-region=b-down] [data-testid=region-health]", "title"); got != "Cluster API: no answer within 10s" {
		b.fatalf("the reason on hover: %q", got)
	}
	b.click("[data-testid=health-filter-attention]")
	b.waitFor("the list of what needs attention", func() bool { return strings.Join(rows(), " ") == "b-down=down c-slow=degraded" }, shortWait)
	if b.attr("[data-testid=health-filter-attention]", "aria-current") != "page" {
		b.fatalf("the filter in use is marked")
	}
	b.click("[data-testid=health-filter-all]")
	b.waitFor("every region again", func() bool { return len(rows()) == 3 }, shortWait)
	b.click("[data-testid=sort-health]")
	b.waitFor("the worst first", func() bool { return strings.Join(rows(), " ") == "b-down=down c-slow=degraded a-fine=ok" }, shortWait)
	b.shot("fleet-health")

	// The Jobs page is in the menu, marked when open.
	b.click(`nav[aria-label=Main] a[href="/jobs"]`)
	// The address changes as the navigation starts: wait for the new page's menu.
	b.waitFor("the Jobs page with its menu entry marked", func() bool {
		return b.path() == "/jobs" && b.attr(`nav[aria-label=Main] a[href="/jobs"]`, "aria-current") == "page"
	}, shortWait)
}
