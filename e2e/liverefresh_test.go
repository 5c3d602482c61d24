package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"runr.dev/console/ops"
	"runr.dev/console/store"
)

// TestRegionLiveRefreshKeepsEditedForm: when the job a region tab shows ends, the tab
// is fetched again (views.JobActions) while the user may be filling in one of its forms.
// The form the user changed stays as it is (here the region status chosen and not sent
// yet); the other forms and the rest of the tab are refreshed.
//
// The job is the test's own, held running in the database (no console claims it while
// its lease lasts), so that it ends exactly when the test has chosen: after the choice.
func TestRegionLiveRefreshKeepsEditedForm(t *testing.T) {
	cl := cluster(t)
	c := startConsole(t)
	ctx := context.Background()
	token := c.run("token", "create", "--email", ownerEmail, "--name", "e2e", "--scopes", "*")
	const name = "e2e-live"
	var created struct {
		Data struct{ ID string }
		Jobs map[string]string
	}
	if st := api(t, c, token, "POST", "/api/knative-regions", map[string]any{"name": name, "kubeconfig": string(cl.Kubeconfig()), "redis_mode": "none"}, &created); st != 201 {
		t.Fatalf("create region: %d", st)
	}
	regionID := created.Data.ID
	for _, j := range created.Jobs {
		waitAPIJob(t, c, token, j, installWait)
	}
	r, err := c.Store.RegionByID(ctx, regionID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status == store.RegionMaintenance {
		t.Fatalf("the region must not be in maintenance yet: %s", r.Status)
	}

	// A job of the General tab, running and leased to no console.
	jobID := store.NewID()
	title := "Held by the test on " + name
	if _, err := c.Store.DB.ExecContext(ctx, `INSERT INTO jobs (id, kind, title, region_id, status, lease_owner, lease_until, started_at)
		VALUES ($1, $2, $3, $4, 'running', 'e2e-test', now() + interval '1 hour', now())`, jobID, ops.KindApplySettings, title, regionID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Store.DB.ExecContext(ctx, `INSERT INTO job_steps (job_id, idx, name, title) VALUES ($1, 0, 'hold', 'Wait for the test')`, jobID); err != nil {
		t.Fatal(err)
	}

	b := newBrowser(t, c.URL)
	b.login(ownerEmail, ownerPassword)
	panel := fmt.Sprintf(`[data-testid=job][data-job-id=%q]`, jobID)
	// The General tab is kept until the console hears of the new job: open it until it
	// shows the job.
	deadline := time.Now().Add(shortWait)
	for {
		b.open("/regions/"+regionID, "[data-testid=status-form]")
		if b.count(panel) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the General tab does not show the test's job")
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The job's socket is connected once a step change reaches the page.
	if _, err := c.Store.SetStep(ctx, jobID, 0, store.StepRunning, "", ""); err != nil {
		t.Fatal(err)
	}
	b.waitJS("the step running on the page", `document.querySelector('`+panel+` [data-testid=job-step][data-status=running]')`, shortWait)

	// The user chooses maintenance and has not sent it yet; the settings form is not touched.
	b.mark()
	b.eval(`document.querySelector("[data-testid=settings-form]").dataset.e2eOld = "1";
		document.querySelector("[data-testid=dns-instruction]").dataset.e2eOld = "1"`, nil)
	b.choose(`[data-testid=status-form] input[name=region_status][value=maintenance]`)

	// The job ends: the tab is fetched again.
	if _, err := c.Store.SetStep(ctx, jobID, 0, store.StepDone, "", ""); err != nil {
		t.Fatal(err)
	}
	if err := c.Store.FinishJob(ctx, jobID, store.JobSucceeded, ""); err != nil {
		t.Fatal(err)
	}
	b.waitJS("the General tab fetched again", `(function(){
		var d = document.querySelector("[data-testid=dns-instruction]");
		return d && !d.dataset.e2eOld && document.querySelector("[data-testid=job-status][data-status=succeeded]");
	})()`, shortWait)
	if !b.marked() {
		t.Fatal("the tab must be refreshed in place, without a page load")
	}
	if b.count(`[data-testid=settings-form][data-e2e-old]`) != 0 {
		t.Fatal("a form the user did not touch must be refreshed with the tab")
	}
	var sent string
	b.eval(`new FormData(document.querySelector("[data-testid=status-form]")).get("region_status")`, &sent)
	if sent != "maintenance" {
		t.Fatalf("after the live refresh the status form sends %q: the user's choice (maintenance) must stay", sent)
	}

	// Sent, the choice is the one the console receives.
	b.submit("[data-testid=save-status]")
	b.expectFlash("Region status set to maintenance.")
	if got := b.text("[data-testid=region-status]"); got != "maintenance" {
		t.Fatalf("the region's status badge: %q, want maintenance", got)
	}
	b.shot("live-refresh")
}
