package apitest

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"runr.dev/console/config"
	"runr.dev/console/ops/preflight"
	"runr.dev/console/ops/reconcile"
	"runr.dev/console/ops/tenancy"
	"runr.dev/console/store"
	"runr.dev/console/testcluster"
	"runr.dev/console/web/webtest"
)

// tenantUser creates a user of a tenant and returns a token of theirs.
func tenantUser(t *testing.T, e *webtest.Env, tenantID, email, role string) string {
	t.Helper()
	ctx := store.WithTenant(context.Background(), tenantID)
	u, err := e.Store.CreateUser(ctx, email, "", role, "password-of-"+role)
	if err != nil {
		t.Fatal(err)
	}
	_, tok, err := e.Store.CreateAPIToken(ctx, u.ID, "test", []string{"*"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

type assignAnswer struct {
	Data   store.Assignment
	Fields map[string]string
	Free   tenancy.Quota
	Error  string
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

// TestTenancyQuotasAndAdmission: on a platform region of a simulated cluster, tenants'
// quotas add up to at most the capacity and the organisation ceiling (at it: accepted;
// over it: 422 with what is free, nothing changed); 0 is no limit and does not count; a
// quota left out is the ceiling or what is free, whichever is smaller. A tenant's
// deploys are admitted against its quota split into the always-on and FaaS budgets;
// platform users are not held to it. A tenant's user sees the region as a summary, and
// its capacity and kubeconfig answer 403. region_mode from a tenant's user is ignored,
// on a direct creation and on the wizard's first step; a tenant's own region is its own,
// and the status check covers it in its walls.
func TestTenancyQuotasAndAdmission(t *testing.T) {
	ctx := context.Background()
	c := testcluster.New(t, testcluster.Options{}) // cp-1 (tainted), worker-1 and worker-2 (8 CPU, 16 GiB)
	e := console(t, func(cfg *config.Config) {
		cfg.Tenancy = true
		cfg.QuotaCPU = 6 // the organisation ceiling: CPU only
	})
	_, tok := e.User("owner")
	if err := e.Store.SetSetting(ctx, "base_domain", "example.test"); err != nil {
		t.Fatal(err)
	}
	r := newRegion(t, e, tok, c, "shared-eu", map[string]any{"region_mode": "managed"})
	mustSucceed(t, action(t, e, tok, r.ID, "install-knative", nil))
	capa := wkGetCapacity(t, e, tok, r.ID)
	capMem := float64(capa.Total.MemoryMi) / 1024
	if float64(capa.Total.CPUm)/1000 <= 6 {
		t.Fatalf("the simulated capacity %+v must exceed the ceiling of 6 CPU", capa.Total)
	}

	mk := func(name string) *store.Tenant {
		tn, err := e.Store.CreateTenant(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return tn
	}
	a, b, cc := mk("acme"), mk("globex"), mk("initech")
	tokA := tenantUser(t, e, a.ID, "owner@acme.test", "owner")
	tokB := tenantUser(t, e, b.ID, "owner@globex.test", "owner")
	assign := func(body map[string]any) (int, assignAnswer) {
		t.Helper()
		var ans assignAnswer
		st := e.JSON("POST", "/api/knative-regions/"+r.ID+"/assignments", tok, body, &ans)
		return st, ans
	}
	if st, ans := assign(map[string]any{"tenant_id": a.ID, "cpu": 2, "memory_gib": 4}); st != 201 || ans.Data.CPU != 2 {
		t.Fatalf("assign A: %d %+v", st, ans)
	}
	// B leaves both out: CPU is the ceiling or what is free (6 − 2 = 4), whichever is
	// smaller; memory has no ceiling: what is free of the capacity.
	st, ans := assign(map[string]any{"tenant_id": b.ID})
	if st != 201 || !near(ans.Data.CPU, 4) || !near(ans.Data.MemoryGiB, capMem-4) {
		t.Fatalf("default quotas of B: %d %+v (capacity %v GiB)", st, ans, capMem)
	}
	// The sums are at the limits now: CPU at the ceiling, memory at the capacity.
	before := tenancyState(t, e)
	st, ans = assign(map[string]any{"tenant_id": cc.ID, "cpu": 0.5, "memory_gib": 0})
	if st != 422 || ans.Fields["cpu"] == "" || ans.Free.CPU != 0 || !strings.Contains(ans.Fields["cpu"], "Only 0 CPU is free") {
		t.Fatalf("over the ceiling: %d %+v", st, ans)
	}
	st, ans = assign(map[string]any{"tenant_id": cc.ID, "cpu": 0, "memory_gib": 0.25})
	if st != 422 || ans.Fields["memory_gib"] == "" || ans.Free.MemoryGiB > 1e-6 {
		t.Fatalf("over the capacity: %d %+v", st, ans)
	}
	st, ans = assign(map[string]any{"tenant_id": cc.ID})
	if st != 422 || ans.Fields["cpu"] == "" || ans.Fields["memory_gib"] == "" {
		t.Fatalf("a default with nothing free: %d %+v", st, ans)
	}
	if tenancyState(t, e) != before {
		t.Fatal("refused assignments changed something")
	}
	// 0 sets no limit and does not count.
	if st, ans := assign(map[string]any{"tenant_id": cc.ID, "cpu": 0, "memory_gib": 0}); st != 201 || ans.Data.CPU != 0 || ans.Data.MemoryGiB != 0 {
		t.Fatalf("quota 0: %d %+v", st, ans)
	}
	// A change above what is free is refused with the free amount; at it, accepted.
	var ch assignAnswer
	before = tenancyState(t, e)
	if st := e.JSON("PUT", "/api/knative-regions/"+r.ID+"/assignments/"+a.ID, tok, map[string]any{"cpu": 2.5}, &ch); st != 422 || !near(ch.Free.CPU, 2) {
		t.Fatalf("change over the ceiling: %d %+v", st, ch)
	}
	if tenancyState(t, e) != before {
		t.Fatal("a refused change changed something")
	}
	if st := e.JSON("PUT", "/api/knative-regions/"+r.ID+"/assignments/"+b.ID, tok, map[string]any{"cpu": 3}, &ch); st != 200 || ch.Data.CPU != 3 {
		t.Fatalf("B down to 3 CPU: %d %+v", st, ch)
	}
	if st := e.JSON("PUT", "/api/knative-regions/"+r.ID+"/assignments/"+a.ID, tok, map[string]any{"cpu": 3}, &ch); st != 200 || ch.Data.CPU != 3 || ch.Data.MemoryGiB != 4 {
		t.Fatalf("A up to the ceiling: %d %+v", st, ch)
	}

	// What A's owner sees of the platform region: a summary with its quota; its capacity
	// and kubeconfig are refused, and nothing changes.
	var sum struct{ Data map[string]any }
	if st := e.JSON("GET", "/api/knative-regions/"+r.ID, tokA, nil, &sum); st != 200 || sum.Data["owner"] != "platform" || sum.Data["cluster_server"] != nil {
		t.Fatalf("A's summary: %d %v", st, sum.Data)
	}
	before = tenancyState(t, e)
	for _, path := range []string{"/capacity", "/kubeconfig", "/nodes", "/sandbox", "/compatible-versions", "/migration-status"} {
		if st, body := e.Raw("GET", "/api/knative-regions/"+r.ID+path, tokA, ""); st != 403 || strings.Contains(body, "apiVersion") {
			t.Errorf("A reads %s of the platform region: %d", path, st)
		}
	}
	for _, call := range [][2]string{{"PUT", ""}, {"DELETE", ""}, {"POST", "/install-serving"}, {"PUT", "/overcommit"}, {"POST", "/check-status"}} {
		if st, _ := e.Raw(call[0], "/api/knative-regions/"+r.ID+call[1], tokA, `{"region_status": "maintenance", "faas_cpu_overcommit": 9}`); st != 403 {
			t.Errorf("A %s %s on the platform region: %d", call[0], call[1], st)
		}
	}
	if tenancyState(t, e) != before {
		t.Fatal("A's refused requests changed something")
	}

	// Admission: A's quota is 3 CPU and 4 GiB; the FaaS budget is 3 × 3 CPU less A's
	// always-on reservations. Platform users are not held to it.
	project := func(tk, name string, cpu, mem int, alwaysOn bool) string {
		t.Helper()
		var p struct{ Data store.Project }
		if st := e.JSON("POST", "/api/projects", tk, map[string]any{"name": name, "region_id": r.ID, "image": "ghcr.io/acme/" + name + ":1",
			"cpu_m": cpu, "memory_mi": mem, "always_on": alwaysOn}, &p); st != 201 {
			t.Fatalf("project %s: %d", name, st)
		}
		return p.Data.ID
	}
	deploy := func(tk, id string) *store.Job {
		t.Helper()
		var j struct {
			JobID string `json:"job_id"`
		}
		if st := e.JSON("POST", "/api/projects/"+id+"/deploy", tk, nil, &j); st != 202 {
			t.Fatalf("deploy: %d", st)
		}
		return e.WaitJob(j.JobID, 2*time.Minute)
	}
	big := project(tokA, "big", 3500, 256, true)
	if j := deploy(tokA, big); j.Status != store.JobFailed || !strings.Contains(j.Error, "tenant always-on budget is 3000m") {
		t.Fatalf("an always-on deploy over A's quota: %s %q", j.Status, j.Error)
	}
	ao := project(tokA, "api", 2500, 1024, true)
	mustSucceed(t, deploy(tokA, ao))
	// FaaS: 3000m × 3 − 2500m = 6500m.
	faas := project(tokA, "fn", 7000, 256, false)
	if j := deploy(tokA, faas); j.Status != store.JobFailed || !strings.Contains(j.Error, "tenant FaaS budget is 6500m") {
		t.Fatalf("a FaaS deploy over A's quota: %s %q", j.Status, j.Error)
	}
	fits := project(tokA, "fn-small", 6000, 256, false)
	mustSucceed(t, deploy(tokA, fits))
	memOver := project(tokA, "mem", 100, 4096, true)
	if j := deploy(tokA, memOver); j.Status != store.JobFailed || !strings.Contains(j.Error, "memory") {
		t.Fatalf("an always-on deploy over A's memory quota: %s %q", j.Status, j.Error)
	}
	// The platform's project of 4 CPU always-on passes: only the region capacity holds it.
	mustSucceed(t, deploy(tok, project(tok, "platform-app", 4000, 512, true)))
	// A's summary says what its running projects use of the quota.
	if st := e.JSON("GET", "/api/knative-regions/"+r.ID, tokA, nil, &sum); st != 200 {
		t.Fatal(st)
	}
	q := sum.Data["quota"].(map[string]any)
	if used := q["used"].(map[string]any); !near(used["cpu"].(float64), 8.5) || sum.Data["project_count"].(float64) != 5 {
		t.Fatalf("A's use: %v, %v projects", used, sum.Data["project_count"])
	}
	// Without its assignment a tenant's deploy is refused.
	if st := e.JSON("DELETE", "/api/knative-regions/"+r.ID+"/assignments/"+a.ID, tok, nil, nil); st != 204 {
		t.Fatal(st)
	}
	if err := e.Store.SetProjectState(ctx, fits, store.ProjectNone, "", ""); err != nil {
		t.Fatal(err)
	}
	var refused struct{ Fields map[string]string }
	if st := e.JSON("POST", "/api/projects/"+fits+"/deploy", tokA, nil, &refused); st != 422 || refused.Fields["region_id"] == "" {
		t.Fatalf("a deploy without the assignment: %d %+v", st, refused)
	}
	// A deploy already queued when the assignment went is refused by its checks.
	fp, err := e.Store.ProjectByID(ctx, fits)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Kube.Projects.DeployCheck(ctx, r, fp, false); err == nil || !strings.Contains(err.Error(), "no longer assigned") {
		t.Fatalf("the deploy check without the assignment: %v", err)
	}

	// A cluster serves one owner: a tenant's region on the platform's cluster is refused
	// beside the kubeconfig, directly and in the wizard, and nothing changes.
	cA := testcluster.New(t, testcluster.Options{Nodes: []testcluster.NodeSpec{{Name: "a-1", CPU: "4", Memory: "8Gi"}}})
	cB := testcluster.New(t, testcluster.Options{Nodes: []testcluster.NodeSpec{{Name: "b-1", CPU: "4", Memory: "8Gi"}}})
	refuseOtherOwner(t, e, tokA, c, "acme-there")

	// region_mode from a tenant's owner is ignored: its own region is managed, and its own.
	mine := newRegion(t, e, tokA, cA, "acme-own", map[string]any{"region_mode": "shared"})
	if mine.Mode != store.RegionManaged || mine.Tenant() != a.ID {
		t.Fatalf("A's own region: mode %s, tenant %q", mine.Mode, mine.Tenant())
	}
	if st := e.JSON("GET", "/api/knative-regions/"+mine.ID+"/capacity", tokA, nil, nil); st != 200 {
		t.Fatalf("A reads its own region's capacity: %d", st)
	}
	if st := e.JSON("GET", "/api/knative-regions/"+mine.ID, tokB, nil, nil); st != 404 {
		t.Fatalf("B reads A's region: %d", st)
	}
	// The wizard's first step too: B's setup creates B's region, managed.
	var setup setupAnswer
	refuseOtherOwner(t, e, tokB, cA, "globex-there")
	body := setupBody("globex-own", cB.Kubeconfig(), map[string]any{"registry_mode": "external", "external_address": "registry.example.com",
		"external_username": "bot", "external_password": "pw", "redis_mode": "none", "region_mode": "shared"})
	if st := e.JSON("POST", "/api/registry-setup/start", tokB, body, &setup); st != 202 {
		t.Fatalf("B's setup: %d %+v", st, setup)
	}
	mustSucceed(t, e.WaitJob(setup.JobID, 2*time.Minute))
	bs, err := e.Store.RegionByName(ctx, "globex-own")
	if err != nil || bs.Tenant() != b.ID || bs.Mode != store.RegionManaged {
		t.Fatalf("B's region from the wizard: %v tenant %q mode %s", err, bs.Tenant(), bs.Mode)
	}
	if st := e.JSON("GET", "/api/registry-setup/"+setup.SetupToken+"/status", tokA, nil, nil); st != 404 {
		t.Fatalf("A reads B's setup: %d", st)
	}
	if st := e.JSON("GET", "/api/jobs/"+setup.JobID, tokA, nil, nil); st != 404 {
		t.Fatalf("A reads B's job: %d", st)
	}
	// Nor does the platform put a region on a tenant's cluster, or move one there; nor does a
	// tenant move its region to the platform's cluster.
	refuseOtherOwner(t, e, tok, cB, "platform-there")
	for _, mv := range []struct {
		tok, region string
		to          *testcluster.Cluster
	}{{tokA, mine.ID, c}, {tok, r.ID, cA}} {
		before := tenancyState(t, e)
		var ans struct{ Fields map[string]string }
		st := e.JSON("POST", "/api/knative-regions/"+mv.region+"/migrate", mv.tok, map[string]any{"kubeconfig": string(mv.to.Kubeconfig())}, &ans)
		if st != 422 || ans.Fields["kubeconfig"] != preflight.OtherOwnerRefusal {
			t.Fatalf("a move to another owner's cluster: %d %+v", st, ans)
		}
		if tenancyState(t, e) != before {
			t.Fatal("a refused move changed something")
		}
	}
	// A platform administrator sets the mode on creation.
	shared := newRegion(t, e, tok, c, "shared-us", map[string]any{"region_mode": "shared"})
	if shared.Mode != store.RegionShared || shared.Tenant() != "" {
		t.Fatalf("platform region: mode %s tenant %q", shared.Mode, shared.Tenant())
	}

	// The status sweep checks the tenants' own regions in their walls.
	if err := e.Kube.Status.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{mine.ID, bs.ID} {
		got, err := e.Store.RegionByID(ctx, id)
		if err != nil || got.CheckedAt == nil || got.Health.V.API.State != store.HealthOK {
			t.Fatalf("the sweep of a tenant's region %s: %v %+v", id, err, got.Health.V.API)
		}
	}
	reconcileTenantRegion(t, e, tok, tokA, mine, cA)
}

// reconcileTenantRegion: a platform reconcile reaches a tenant's own region (in its
// tenant's walls): the dry run lists it, and the status block its tenant's maintenance
// put up, deleted from the cluster since, is applied again; a tenant's user may not
// run the reconcile.
func reconcileTenantRegion(t *testing.T, e *webtest.Env, platformTok, tenantTok string, r *store.Region, c *testcluster.Cluster) {
	t.Helper()
	ctx := context.Background()
	mustSucceed(t, action(t, e, tenantTok, r.ID, "install-knative", nil))
	var ans struct {
		JobID string `json:"job_id"`
	}
	if st := e.JSON("PUT", "/api/knative-regions/"+r.ID, tenantTok, map[string]any{"region_status": "maintenance"}, &ans); st != 200 || ans.JobID == "" {
		t.Fatalf("the tenant puts its region in maintenance: %d", st)
	}
	mustSucceed(t, e.WaitJob(ans.JobID, time.Minute))
	ir := schema.GroupVersionResource{Group: "traefik.io", Version: "v1alpha1", Resource: "ingressroutes"}
	block := "runr-region-block-" + r.Name
	if _, err := c.DynamicGet(ctx, ir, "knative-serving", block); err != nil {
		t.Fatalf("the tenant region's block after its maintenance: %v", err)
	}
	dyn, err := dynamic.NewForConfig(c.REST)
	if err != nil {
		t.Fatal(err)
	}
	if err := dyn.Resource(ir).Namespace("knative-serving").Delete(ctx, block, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	if st := e.JSON("POST", "/api/reconcile", tenantTok, map[string]any{"step": reconcile.StepStatusBlock}, nil); st != 403 {
		t.Fatalf("a tenant's user runs a reconcile: %d", st)
	}
	var plan struct{ Data []reconcile.Change }
	if st := e.JSON("GET", "/api/reconcile?step="+reconcile.StepStatusBlock, platformTok, nil, &plan); st != 200 {
		t.Fatalf("the dry run: %d", st)
	}
	found := false
	for _, ch := range plan.Data {
		if ch.Region == r.Name {
			found = true
			if ch.Result != reconcile.ResultChange {
				t.Fatalf("the tenant region's block in the dry run: %+v", ch)
			}
		}
	}
	if !found {
		t.Fatalf("the dry run leaves out the tenant's region: %+v", plan.Data)
	}
	if st := e.JSON("POST", "/api/reconcile", platformTok, map[string]any{"step": reconcile.StepStatusBlock}, &ans); st != 202 {
		t.Fatalf("reconcile: %d", st)
	}
	mustSucceed(t, e.WaitJob(ans.JobID, 2*time.Minute))
	if _, err := c.DynamicGet(ctx, ir, "knative-serving", block); err != nil {
		t.Fatalf("the reconcile did not apply the tenant region's block again: %v", err)
	}
}

// tenancyState fingerprints the regions, assignments and projects.
func tenancyState(t *testing.T, e *webtest.Env) string {
	t.Helper()
	var d string
	if err := e.Store.DB.Get(&d, `SELECT md5(concat_ws('|',
		(SELECT string_agg(a::text, ',' ORDER BY a.region_id, a.tenant_id) FROM region_assignments a),
		(SELECT string_agg(r.id || r.region_status || r.region_mode || r.faas_cpu_overcommit || r.serving_status, ',' ORDER BY r.id) FROM regions r),
		(SELECT string_agg(p.id || p.state, ',' ORDER BY p.id) FROM projects p),
		(SELECT count(*)::text FROM jobs)))`); err != nil {
		t.Fatal(err)
	}
	return d
}

// refuseOtherOwner checks that tok's user cannot put a region on c, which hosts another
// owner's region: a direct creation, the API's setup and the wizard's check answer 422
// beside the kubeconfig, and nothing changes.
func refuseOtherOwner(t *testing.T, e *webtest.Env, tok string, c *testcluster.Cluster, name string) {
	t.Helper()
	before := tenancyState(t, e)
	for _, call := range []struct {
		path string
		body map[string]any
	}{
		{"/api/knative-regions", map[string]any{"name": name, "kubeconfig": string(c.Kubeconfig()), "redis_mode": "none"}},
		{"/api/registry-setup/start", setupBody(name, c.Kubeconfig(), map[string]any{"redis_mode": "none"})},
		{"/api/knative-regions/check", map[string]any{"name": name, "kubeconfig": string(c.Kubeconfig())}},
	} {
		var ans struct{ Fields map[string]string }
		if st := e.JSON("POST", call.path, tok, call.body, &ans); st != 422 || ans.Fields["kubeconfig"] != preflight.OtherOwnerRefusal {
			t.Fatalf("POST %s for %s on another owner's cluster: %d %+v", call.path, name, st, ans)
		}
	}
	if tenancyState(t, e) != before {
		t.Fatalf("refused regions on another owner's cluster changed something")
	}
}
