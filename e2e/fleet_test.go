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
	// The filter's links load a new page: read the rows once it is parsed whole (a row
	// read mid-parse may lack its cells).
	rows := func() []string {
		var out []string
		b.eval(`document.readyState === "loading" ? [] : Array.from(document.querySelectorAll("[data-testid=region-row]")).map(r => r.dataset.region + "=" + r.querySelector("[data-testid=region-health]").dataset.health)`, &out)
		return out
	}
	b.waitFor("the health column", func() bool { return strings.Join(rows(), " ") == "a-fine=ok b-down=down c-slow=degraded" }, shortWait)
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

// TestFleetOverviewFollowsLive: the regions page opens with the fleet at a glance (regions
// by health, what needs attention with the reason in words, the jobs running now), and
// follows the fleet without a reload: a status check that finds a cluster down and a job
// that starts and ends reach the overview and the list over the page's socket (issue 34:
// the list said all was well while a cluster was down, until a reload).
func TestFleetOverviewFollowsLive(t *testing.T) {
	c := startConsole(t)
	ctx := context.Background()
	ok := store.HealthLayer{State: store.HealthOK, Reason: "fine", CheckedAt: time.Now()}
	healthy := store.Health{API: ok, Components: ok, External: ok}
	var ids []string
	for _, name := range []string{"eu-1", "eu-2"} {
		reg := &store.Region{Name: name, Kubeconfig: "not a kubeconfig", RedisMode: store.RedisNone}
		if err := c.Store.CreateRegion(ctx, reg); err != nil {
			t.Fatal(err)
		}
		if err := c.Store.SaveCheck(ctx, reg.ID, store.CheckUpdate{CheckedAt: time.Now(), Health: healthy}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, reg.ID)
	}
	b := newBrowser(t, c.URL)
	b.login(ownerEmail, ownerPassword)
	b.open("/regions", "[data-testid=fleet-overview]")
	count := func(state string) string { return b.attr("[data-testid=fleet-count-"+state+"]", "data-count") }
	if count("ok") != "2" || count("down") != "0" {
		b.fatalf("the overview counts ok=%s down=%s, want 2 and 0", count("ok"), count("down"))
	}
	if b.count("[data-testid=fleet-attention-none]") != 1 || b.count("[data-testid=fleet-running-none]") != 1 {
		b.fatalf("the overview must say that nothing needs attention and nothing runs")
	}
	b.mark()

	// eu-2's cluster stops answering: its check reaches the open page.
	down := healthy
	down.API = store.HealthLayer{State: store.HealthDown, Reason: "no answer within 10s", CheckedAt: time.Now()}
	if err := c.Store.SaveCheck(ctx, ids[1], store.CheckUpdate{CheckedAt: time.Now(), Health: down}); err != nil {
		t.Fatal(err)
	}
	b.waitFor("eu-2 down in the overview and the list", func() bool {
		return count("down") == "1" && count("ok") == "1" &&
			b.attr("[data-region=eu-2] [data-testid=region-health]", "data-health") == "down"
	}, shortWait)
	if got := b.text("[data-testid=fleet-attention][data-region=eu-2]"); !strings.Contains(got, "Cluster API: no answer within 10s") {
		b.fatalf("what needs attention must say why in words: %q", got)
	}

	// A job starts on eu-1 and ends: the overview shows it running, then not.
	jobID := store.NewID()
	if _, err := c.Store.DB.ExecContext(ctx, `INSERT INTO jobs (id, kind, title, region_id, status, lease_owner, lease_until, started_at)
		VALUES ($1, 'apply-settings', 'Apply the settings of eu-1', $2, 'running', 'e2e-test', now() + interval '1 hour', now())`, jobID, ids[0]); err != nil {
		t.Fatal(err)
	}
	b.waitFor("the running job in the overview", func() bool { return b.count(`[data-testid=fleet-running][data-job-id="`+jobID+`"]`) == 1 }, shortWait)
	b.shot("fleet-overview")
	if err := c.Store.FinishJob(ctx, jobID, store.JobSucceeded, ""); err != nil {
		t.Fatal(err)
	}
	b.waitFor("the job gone from the overview", func() bool { return b.count("[data-testid=fleet-running-none]") == 1 }, shortWait)
	if !b.marked() {
		b.fatalf("the page must follow the fleet without a reload")
	}
}
