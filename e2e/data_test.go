package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"runr.dev/console/testcluster"
)

// waitAPIJob polls GET /api/jobs/{id} until the job finishes and fails unless it
// succeeded.
func waitAPIJob(t *testing.T, c *console, token, id string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		var j struct {
			Data struct{ Status, Error, Kind string }
		}
		api(t, c, token, "GET", "/api/jobs/"+id, nil, &j)
		switch j.Data.Status {
		case "succeeded":
			return
		case "failed", "cancelled":
			t.Fatalf("job %s %s: %s", j.Data.Kind, j.Data.Status, j.Data.Error)
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatalf("job %s did not finish within %s", id, d)
}

// TestDataServicesTab installs KV from the Data services tab with its live job, binds a
// project from the projects page, sees removal refused while bound and the confirmation
// that says the data goes, and checks what a Viewer sees.
func TestDataServicesTab(t *testing.T) {
	cl := cluster(t)
	c := startConsole(t)
	ctx := context.Background()
	if err := c.Store.SetSetting(ctx, "base_domain", "example.test"); err != nil {
		t.Fatal(err)
	}
	token := c.run("token", "create", "--email", ownerEmail, "--name", "e2e", "--scopes", "*")
	var created struct {
		Data struct{ ID string }
		Jobs map[string]string
	}
	if st := api(t, c, token, "POST", "/api/knative-regions", map[string]any{"name": "e2e-data", "kubeconfig": string(cl.Kubeconfig()), "redis_mode": "managed"}, &created); st != 201 {
		t.Fatalf("create region: %d", st)
	}
	id := created.Data.ID
	for _, j := range created.Jobs {
		waitAPIJob(t, c, token, j, installWait)
	}
	var ans struct {
		JobID string `json:"job_id"`
	}
	if st := api(t, c, token, "POST", "/api/knative-regions/"+id+"/install-knative", nil, &ans); st != 202 {
		t.Fatalf("install Knative: %d", st)
	}
	waitAPIJob(t, c, token, ans.JobID, installWait)
	deadline := time.Now().Add(installWait)
	for {
		r, err := c.Store.RegionByID(ctx, id)
		if err == nil && r.RedisStatus == "ready" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the managed Redis did not become ready")
		}
		time.Sleep(300 * time.Millisecond)
	}
	var proj struct{ Data struct{ ID string } }
	if st := api(t, c, token, "POST", "/api/projects", map[string]any{"name": "shop", "region_id": id, "image": "ghcr.io/acme/shop:1"}, &proj); st != 201 {
		t.Fatalf("create project: %d", st)
	}

	b := newBrowser(t, c.URL)
	b.login(ownerEmail, ownerPassword)
	b.open("/regions/"+id+"?tab=data", "[data-testid=data-tab]")
	if b.count("[data-testid=tab-data]") != 1 {
		t.Fatal("the owner sees the Data services tab")
	}
	if b.count("[data-testid=skupper-absent]") != 1 {
		t.Fatal("the tab says the cluster does not run Skupper")
	}
	b.checkLabels("data services tab")
	b.click("[data-testid=install-kv]")
	b.expectJobSucceeds("Install kv on e2e-data")
	b.open("/regions/"+id+"?tab=data", "[data-testid=data-tab]")
	if got := b.text("[data-testid=data-service-kv] [data-testid=data-status]"); !strings.Contains(got, "ready") {
		t.Fatalf("kv after its install: %q", got)
	}
	b.expectDestructiveConfirms("data services tab")
	if q := b.attr("[data-testid=data-service-kv] form[data-confirm]", "data-confirm"); !strings.Contains(q, "deleted") {
		t.Fatalf("the removal's confirmation must say the data is deleted: %q", q)
	}

	// The object store on an external S3 endpoint (a real SeaweedFS server): a bad
	// endpoint and a missing key are refused beside their fields, with what was typed kept
	// (but never the secret); the right settings install it, and nothing runs in the cluster.
	weed, err := testcluster.StartSeaweedFS(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(weed.Stop)
	b.choose("[data-testid=object-mode] input[value=external]")
	b.setValue("#f-endpoint", "ftp://store.example.test")
	b.setValue("#f-access_key_id", weed.AccessKey)
	b.click("[data-testid=install-object]")
	b.visible("[data-testid=error-endpoint]", shortWait)
	b.expectDescribedBy("#f-endpoint", "err-endpoint")
	if b.count("[data-testid=error-secret_access_key]") != 1 || b.value("#f-endpoint") != "ftp://store.example.test" || b.value("#f-access_key_id") != weed.AccessKey {
		t.Fatal("the refused settings are kept beside their errors")
	}
	b.choose("[data-testid=object-mode] input[value=external]")
	b.setValue("#f-endpoint", weed.URL)
	b.setValue("#f-secret_access_key", weed.SecretKey)
	b.click("[data-testid=install-object]")
	b.expectJobSucceeds("Install object on e2e-data")
	b.open("/regions/"+id+"?tab=data", "[data-testid=data-external]")
	if got := b.text("[data-testid=data-external]"); !strings.Contains(got, weed.URL) || !strings.Contains(got, "runr-<project>") || strings.Contains(b.text("body"), weed.SecretKey) {
		t.Fatalf("the external object store: %q", got)
	}

	// The projects page binds it; the binding shows its settings' names only.
	b.open("/projects", "[data-testid=bind-form]")
	b.submit("[data-testid=bind]")
	b.expectJobSucceeds("Bind shop to kv of e2e-data")
	b.open("/projects", "[data-testid=project-binding]")
	if got := b.text("[data-testid=project-binding]"); !strings.Contains(got, "REDIS_PASSWORD") || !strings.Contains(got, "kv") {
		t.Fatalf("the project's binding: %q", got)
	}
	b.open("/regions/"+id+"?tab=data", "[data-testid=data-binding]")
	if b.count("[data-testid=data-service-kv] [data-testid=data-remove-blocked]") != 1 || b.count("[data-testid=action-remove-kv]") != 0 {
		t.Fatal("removal is not offered while a project binds the service")
	}
	b.shot("data-services")

	// A Viewer sees no Data services tab and nothing that changes anything.
	b.close()
	v := newBrowser(t, c.URL)
	v.login(viewerEmail, viewerPass)
	v.open("/regions/"+id, "[data-testid=region-name]")
	if v.count("[data-testid=tab-data]") != 0 {
		t.Fatal("the Viewer lacks regions.data_services.manage: no Data services tab")
	}
	v.open("/projects", "[data-testid=project-binding]")
	v.expectNoChanges("projects with bindings")
}
