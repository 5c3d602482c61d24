package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"runr.dev/console/config"
	"runr.dev/console/store"
	"runr.dev/console/testcluster"
)

// TestCLITenants: `runr tenants` drives the Tenants page through the API: create, rename,
// users with a generated password, an assignment with quotas (a shared region: the quotas
// are not held against a cluster's capacity), a quota changed and a refused one that
// changes nothing, unassign and delete; without the Tenancy module the
// command says so.
func TestCLITenants(t *testing.T) {
	e := consoleForCLI(t, func(c *config.Config) { c.Tenancy = true })
	ctx := context.Background()
	region := &store.Region{Name: "shared-eu", Kubeconfig: "not a kubeconfig", RedisMode: store.RedisNone, Mode: store.RegionShared}
	if err := e.Store.CreateRegion(ctx, region); err != nil {
		t.Fatal(err)
	}

	mustCLI(t, "tenants", "create", "Acme")
	mustCLI(t, "tenants", "rename", "Acme", "Acme Corp")
	var listed []store.Tenant
	if err := json.Unmarshal([]byte(mustCLI(t, "tenants", "list", "-o", "json")), &listed); err != nil || len(listed) != 1 || listed[0].Name != "Acme Corp" {
		t.Fatalf("tenants list: %v %+v", err, listed)
	}
	tenantID := listed[0].ID

	password := strings.TrimSpace(mustCLI(t, "tenants", "add-user", "Acme Corp", "--email", "ops@acme.test", "--role", "admin"))
	u, err := e.Store.UserByEmail(store.WithTenant(ctx, tenantID), "ops@acme.test")
	if err != nil || u.Role != "admin" || len(password) < 12 {
		t.Fatalf("the tenant's user: %v %+v, generated password %q", err, u, password)
	}
	if out := mustCLI(t, "tenants", "users", "Acme Corp"); !strings.Contains(out, "ops@acme.test") || !strings.Contains(out, "admin") {
		t.Fatalf("tenants users: %s", out)
	}

	mustCLI(t, "tenants", "assign", "Acme Corp", "shared-eu", "--cpu", "4", "--memory-gib", "8")
	assignment := func() store.Assignment {
		t.Helper()
		as, err := e.Store.TenantAssignments(ctx, tenantID)
		if err != nil || len(as) != 1 {
			t.Fatalf("the tenant's assignments: %v %+v", err, as)
		}
		return as[0]
	}
	if a := assignment(); a.RegionID != region.ID || a.CPU != 4 || a.MemoryGiB != 8 {
		t.Fatalf("the assignment: %+v", a)
	}
	mustCLI(t, "tenants", "quota", "Acme Corp", "shared-eu", "--cpu", "6")
	if a := assignment(); a.CPU != 6 || a.MemoryGiB != 8 {
		t.Fatalf("a CPU quota changed, memory kept: %+v", a)
	}
	if _, _, err := cli(t, "", "tenants", "quota", "Acme Corp", "shared-eu", "--memory-gib=-1"); err == nil || !strings.Contains(err.Error(), "memory_gib") {
		t.Fatalf("a negative memory quota: %v", err)
	}
	if a := assignment(); a.CPU != 6 || a.MemoryGiB != 8 {
		t.Fatalf("the refused quota changed the assignment: %+v", a)
	}
	if out := mustCLI(t, "tenants", "show", "Acme Corp"); !strings.Contains(out, "shared-eu") || !strings.Contains(out, "6") {
		t.Fatalf("tenants show: %s", out)
	}

	mustCLI(t, "tenants", "unassign", "Acme Corp", "shared-eu")
	if as, err := e.Store.TenantAssignments(ctx, tenantID); err != nil || len(as) != 0 {
		t.Fatalf("after unassign: %v %+v", err, as)
	}
	if _, _, err := cli(t, "", "tenants", "show", "Globex"); err == nil || !strings.Contains(err.Error(), `no tenant is named "Globex"`) {
		t.Fatalf("an unknown tenant: %v", err)
	}
	mustCLI(t, "tenants", "rm", "Acme Corp")
	if ts, err := e.Store.ListTenants(ctx); err != nil || len(ts) != 0 {
		t.Fatalf("after rm: %v %+v", err, ts)
	}

	// Without the module there are no tenants to manage.
	consoleForCLI(t)
	if _, _, err := cli(t, "", "tenants", "list"); err == nil || !strings.Contains(err.Error(), "Tenancy module is off") {
		t.Fatalf("tenants without the module: %v", err)
	}
}

// TestCLISkupper: `runr regions skupper show` reads the cluster (no Skupper v2 here: what
// is missing), and `site` is refused with the API's reason, queueing nothing.
func TestCLISkupper(t *testing.T) {
	e := consoleForCLI(t)
	ctx := context.Background()
	cl := testcluster.New(t, testcluster.Options{})
	r := &store.Region{Name: "eu-5", Kubeconfig: string(cl.Kubeconfig()), RedisMode: store.RedisNone}
	if err := e.Store.CreateRegion(ctx, r); err != nil {
		t.Fatal(err)
	}
	out := mustCLI(t, "regions", "skupper", "show", "eu-5")
	if !strings.Contains(out, "not installed") || !strings.Contains(out, "missing") || !strings.Contains(out, "not_installed") {
		t.Fatalf("skupper show: %s", out)
	}
	if _, _, err := cli(t, "", "regions", "skupper", "site", "eu-5"); err == nil || !strings.Contains(err.Error(), "does not run Skupper v2") {
		t.Fatalf("a site on a cluster without Skupper: %v", err)
	}
	if jobs, err := e.Store.ListJobs(ctx, r.ID, 10); err != nil || len(jobs) != 0 {
		t.Fatalf("the refused site queued jobs: %v %+v", err, jobs)
	}
}
