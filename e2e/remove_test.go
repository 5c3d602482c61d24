package e2e

import (
	"context"
	"strings"
	"testing"

	"runr.dev/console/ops/knative"
)

// TestRemovingARegionThatSharesItsCluster: step 1 of the wizard names the regions a cluster
// hosts already and what a new one shares with them; the removal page of a region whose
// cluster hosts another region says so; the teardown chosen there keeps what the other region uses
// (Knative), says it in the job's first step, and the record goes (issue 34, item 2).
func TestRemovingARegionThatSharesItsCluster(t *testing.T) {
	cl := cluster(t)
	c := startConsole(t)
	ctx := context.Background()
	token := c.run("token", "create", "--email", ownerEmail, "--name", "e2e", "--scopes", "*")
	ids := map[string]string{}
	for _, name := range []string{"e2e-one", "e2e-two"} {
		var created struct {
			Data struct{ ID string }
			Jobs map[string]string
		}
		if st := api(t, c, token, "POST", "/api/knative-regions", map[string]any{"name": name, "kubeconfig": string(cl.Kubeconfig()), "redis_mode": "none"}, &created); st != 201 {
			t.Fatalf("create region %s: %d", name, st)
		}
		for _, j := range created.Jobs {
			waitAPIJob(t, c, token, j, installWait)
		}
		var ans struct {
			JobID string `json:"job_id"`
		}
		if st := api(t, c, token, "POST", "/api/knative-regions/"+created.Data.ID+"/install-knative", nil, &ans); st != 202 {
			t.Fatalf("install Knative on %s: %d", name, st)
		}
		waitAPIJob(t, c, token, ans.JobID, installWait)
		ids[name] = created.Data.ID
	}

	b := newBrowser(t, c.URL)
	b.login(ownerEmail, ownerPassword)
	// Step 1 of a third region on the cluster says what it would share.
	b.open("/regions/new", "[data-testid=step1-form]")
	b.typeInto("#f-name", "e2e-three")
	b.setValue("#f-kubeconfig", string(cl.Kubeconfig()))
	b.click("[data-testid=check-connection]")
	b.visible("[data-testid=checklist] [data-testid=check][data-key=neighbours]", installWait)
	// Once the check passed, the checklist is folded under step 1's summary: read its text.
	var got string
	b.eval(`document.querySelector("[data-testid=check][data-key=neighbours]").textContent`, &got)
	if !strings.Contains(got, "already hosts region e2e-one, e2e-two") ||
		!strings.Contains(got, "Knative Serving, tracing and runr-agent are shared") {
		b.fatalf("step 1 does not name the cluster's regions and what is shared: %q", got)
	}
	b.open("/regions/"+ids["e2e-two"]+"/remove", "[data-testid=remove-confirm]")
	if got := b.text("[data-testid=remove-shared]"); !strings.Contains(got, "This cluster also hosts e2e-one") || !strings.Contains(got, "keeps them") {
		b.fatalf("the removal page does not say that e2e-one shares the cluster: %q", got)
	}
	b.choose("[data-testid=remove-teardown]")
	b.fill("#f-confirm_name", "e2e-two")
	b.shot("remove-shared")
	b.click("[data-testid=confirm-remove]")
	b.waitJS("the teardown job to succeed", `document.querySelector("[data-testid=job-status][data-status=succeeded]")`, installWait)
	var steps []string
	b.eval(`Array.from(document.querySelectorAll("[data-testid=job-step]")).map(s => s.dataset.step)`, &steps)
	if len(steps) == 0 || steps[0] != "kept" || strings.Contains(strings.Join(steps, " "), "knative") {
		b.fatalf("the teardown's steps: %v; want the kept note first and no Knative step", steps)
	}
	var job string
	b.eval(`document.querySelector("[data-testid=job]").textContent`, &job)
	if !strings.Contains(job, "Kept for e2e-one on the same cluster") {
		b.fatalf("the job does not say what it kept for e2e-one:\n%s", job)
	}
	b.shot("remove-shared-job")
	if _, err := cl.APIExtGet(ctx, knative.ServingCRD); err != nil {
		t.Fatalf("Knative went with e2e-two although e2e-one uses it: %v", err)
	}
	if _, err := c.Store.RegionByID(ctx, ids["e2e-two"]); err == nil {
		t.Fatal("e2e-two's record must be gone")
	}
	if r, err := c.Store.RegionByID(ctx, ids["e2e-one"]); err != nil || r.ServingStatus != "ready" {
		t.Fatalf("e2e-one after e2e-two's teardown: %v %+v", err, r)
	}
}
