package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"runr.dev/console/config"
	"runr.dev/console/ops"
	"runr.dev/console/ops/registry"
	"runr.dev/console/ops/tenancy"
	"runr.dev/console/perm"
	"runr.dev/console/store"
	"runr.dev/console/web"
	"runr.dev/console/web/webtest"
)

// tenancyDigest is digest plus what the Tenancy module adds: tenants, owners and modes of
// regions, assignments, and the tenants of users, projects and jobs.
func tenancyDigest(t testing.TB, st *store.Store) string {
	t.Helper()
	var d string
	err := st.DB.Get(&d, `SELECT md5(concat_ws('|',
		(SELECT string_agg(x::text, ',' ORDER BY x.id) FROM tenants x),
		(SELECT string_agg(r.id || coalesce(r.tenant_id, '-') || r.region_mode, ',' ORDER BY r.id) FROM regions r),
		(SELECT string_agg(a::text, ',' ORDER BY a.region_id, a.tenant_id) FROM region_assignments a),
		(SELECT string_agg(u.id || coalesce(u.tenant_id, '-'), ',' ORDER BY u.id) FROM users u),
		(SELECT string_agg(p.id || coalesce(p.tenant_id, '-'), ',' ORDER BY p.id) FROM projects p),
		(SELECT string_agg(j.id || coalesce(j.tenant_id, '-'), ',' ORDER BY j.id) FROM jobs j)))`)
	if err != nil {
		t.Fatal(err)
	}
	return digest(t, st) + d
}

// tenantWorld is a console with the Tenancy module on and two tenants, acme (A) and
// globex (B), each with an owner, a region of its own, a project, a job and a setup; and
// the platform with an owner, a region assigned to A (shared-eu) and one assigned to
// nobody (platform-us).
type tenantWorld struct {
	e                        *webtest.Env
	a, b                     *store.Tenant
	ownerA, ownerB, platform *store.User
	memberA                  *store.User
	tokA, tokB, tokPlatform  string
	assigned, unassigned     *store.Region
	regionA, regionB         *store.Region
	projectA, projectB       *store.Project
	projectOnAssigned        *store.Project
	jobA, jobB               *store.Job
	setupB                   *store.RegistrySetup
	tokenOfB                 *store.APIToken
	inA, inB, platformCtx    context.Context
	// namesOfB are what A must never read: B's region, project and user, and the
	// platform region not assigned to A.
	namesOfB []string
}

func newTenantWorld(t *testing.T) *tenantWorld { return newTenantWorldWith(t, false) }

// newTenantWorldWith is newTenantWorld with the Billing module on or off (on, assigning a
// platform region is an offer).
func newTenantWorldWith(t *testing.T, billing bool) *tenantWorld {
	t.Helper()
	e := webtest.New(t, func(c *config.Config) { c.Tenancy, c.Billing = true, billing })
	ctx := context.Background()
	w := &tenantWorld{e: e, platformCtx: ctx}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	var err error
	w.a, err = e.Store.CreateTenant(ctx, "acme")
	must(err)
	w.b, err = e.Store.CreateTenant(ctx, "globex")
	must(err)
	w.inA, w.inB = store.WithTenant(ctx, w.a.ID), store.WithTenant(ctx, w.b.ID)
	user := func(c context.Context, email, role string) (*store.User, string) {
		u, err := e.Store.CreateUser(c, email, "", role, "password-of-"+role)
		must(err)
		_, tok, err := e.Store.CreateAPIToken(c, u.ID, "test", []string{"*"}, nil)
		must(err)
		return u, tok
	}
	w.ownerA, w.tokA = user(w.inA, "owner@acme.test", "owner")
	w.memberA, _ = user(w.inA, "member@acme.test", "member")
	user(w.inA, "viewer@acme.test", "viewer")
	w.ownerB, w.tokB = user(w.inB, "owner@globex.test", "owner")
	w.platform, w.tokPlatform = user(ctx, "root@platform.test", "owner")
	w.tokenOfB, _, err = e.Store.CreateAPIToken(w.inB, w.ownerB.ID, "b-ci", []string{"*"}, nil)
	must(err)

	region := func(c context.Context, name string) *store.Region {
		r := &store.Region{Name: name, Kubeconfig: "not a kubeconfig"}
		must(e.Store.CreateRegion(c, r))
		return r
	}
	w.assigned = region(ctx, "shared-eu")
	w.unassigned = region(ctx, "platform-us")
	w.regionA = region(w.inA, "acme-own")
	w.regionB = region(w.inB, "globex-own")
	must(e.Store.SaveAssignment(ctx, &store.Assignment{RegionID: w.assigned.ID, TenantID: w.a.ID, CPU: 2, MemoryGiB: 4}, true,
		func(*store.Region, []store.Assignment, *store.Assignment) error { return nil }))
	project := func(c context.Context, name string, r *store.Region) *store.Project {
		p := &store.Project{Name: name, RegionID: &r.ID, Image: "ghcr.io/acme/app:1", CPUm: 100, MemoryMi: 128}
		must(e.Store.CreateProject(c, p))
		return p
	}
	w.projectA = project(w.inA, "acme-shop", w.regionA)
	w.projectOnAssigned = project(w.inA, "acme-on-shared", w.assigned)
	w.projectB = project(w.inB, "globex-secret-app", w.regionB)
	job := func(c context.Context, r *store.Region) *store.Job {
		j := &store.Job{Kind: registry.KindTest, Title: "Test on " + r.Name, RegionID: &r.ID, Status: store.JobFailed}
		must(e.Store.CreateJob(c, j, []store.JobStep{{Name: "test", Title: "Test"}}, ""))
		must(e.Store.FinishJob(ctx, j.ID, store.JobFailed, "failed on purpose"))
		return j
	}
	w.jobA = job(w.inA, w.regionA)
	w.jobB = job(w.inB, w.regionB)
	w.setupB, err = e.Store.CreateSetup(w.inB, w.jobB.ID, w.ownerB.Email)
	must(err)
	w.namesOfB = []string{"globex-own", "globex-secret-app", "owner@globex.test", "platform-us"}
	return w
}

// fillFor fills a route's path with the objects a caller aims at: region is the region
// of the region routes; the other objects are tenant B's.
func (w *tenantWorld) fillFor(r web.Route, region string) string {
	path := r.Path
	repl := map[string]string{":tab": "general", ":node": "node-1", ":tenant_id": w.b.ID, ":tenant": w.b.ID}
	switch {
	case strings.HasPrefix(path, "/regions/setups/"), strings.HasPrefix(path, "/api/registry-setup/"):
		repl[":token"] = w.setupB.Token
	case strings.Contains(path, "regions/:id"):
		repl[":id"] = region
	case strings.HasPrefix(path, "/projects/"), strings.HasPrefix(path, "/api/projects/"):
		repl[":id"] = w.projectB.ID
	case strings.HasPrefix(path, "/jobs/"), strings.HasPrefix(path, "/api/jobs/"), strings.HasPrefix(path, "/ws/jobs/"):
		repl[":id"] = w.jobB.ID
	case strings.HasPrefix(path, "/users/"), strings.HasPrefix(path, "/api/users/"):
		repl[":id"] = w.ownerB.ID
	case strings.HasPrefix(path, "/tokens/"), strings.HasPrefix(path, "/api/tokens/"):
		repl[":id"] = w.tokenOfB.ID
	case strings.HasPrefix(path, "/tenants/"), strings.HasPrefix(path, "/api/tenants/"):
		repl[":id"] = w.b.ID
	}
	switch {
	case strings.HasSuffix(path, "/knative/:action"):
		repl[":action"] = "install-serving"
	case strings.HasSuffix(path, "/redis/:action"):
		repl[":action"] = "delete"
	case strings.HasSuffix(path, "/migration/:action"):
		repl[":action"] = "rollback"
	case strings.HasSuffix(path, "/nodes/:node/:action"):
		repl[":action"] = "cordon"
	case strings.HasSuffix(path, "/projects/:id/:action"):
		repl[":action"] = "deploy"
	}
	return paramRe.ReplaceAllStringFunc(path, func(p string) string {
		if v, ok := repl[p]; ok {
			return v
		}
		return "x"
	})
}

// ghost is an id no object has.
const ghost = "01NOTANID0000000000000000"

// ghostPath fills a route with ids no object has (the other parameters as fillFor).
func (w *tenantWorld) ghostPath(r web.Route) string {
	path := w.fillFor(r, ghost)
	for _, id := range []string{w.regionB.ID, w.unassigned.ID, w.projectB.ID, w.jobB.ID, w.ownerB.ID, w.tokenOfB.ID, w.setupB.Token} {
		path = strings.ReplaceAll(path, id, ghost)
	}
	return path
}

var requestIDRe = regexp.MustCompile(`request id [^ ).]+`)

// scrub makes two answers comparable: the ids of B's objects and the request ids go.
func scrub(body string, w *tenantWorld) string {
	for _, id := range []string{w.regionB.ID, w.unassigned.ID, w.projectB.ID, w.jobB.ID, w.ownerB.ID, w.tokenOfB.ID, w.setupB.Token, w.b.ID} {
		body = strings.ReplaceAll(body, id, ghost)
	}
	return requestIDRe.ReplaceAllString(body, "request id")
}

// call sends a request with a bearer token; non-GET requests carry "{}".
func (w *tenantWorld) call(method, path, tok string) (int, string) {
	body := ""
	if method != http.MethodGet {
		body = "{}"
	}
	return w.e.Raw(method, path, tok, body)
}

// walked are the routes the matrix sends requests to: every route of the table but the
// public, agent and anonymous ones, sign-out and the sockets (TestTenantSockets).
func walked(s *web.Server) []web.Route {
	var out []web.Route
	for _, r := range s.Routes() {
		if r.Public || r.Agent || r.WebSocket || r.Perm == web.Anonymous || r.Path == "/logout" {
			continue
		}
		out = append(out, r)
	}
	return out
}

// TestTenantMatrix: tenant A's owner, through every route of the table, never sees or
// changes tenant B's objects (404, not 403: for A they do not exist; a route A may not
// use at all answers 403 whatever its object), never sees a platform region not assigned
// to it (404), and never changes the platform region assigned to it (403: it sees its
// summary only). Every refusal changes nothing. Platform users change platform regions;
// tenant-owned regions are their tenant's to change.
func TestTenantMatrix(t *testing.T) { tenantMatrix(t, newTenantWorld(t)) }

// TestTenantMatrixBilling is the matrix with the Billing module's routes too.
func TestTenantMatrixBilling(t *testing.T) { tenantMatrix(t, newTenantWorldWith(t, true)) }

func tenantMatrix(t *testing.T, w *tenantWorld) {
	e := w.e
	permsA := perm.OfUser(w.ownerA, nil)
	routes := walked(e.S)
	n := 0
	for _, r := range routes {
		lacks := !hasAll(permsA, need(r, true))
		access, isRegion := web.RegionAccessOf(r)
		aims := []struct {
			what   string
			region string
			want   int
		}{{"tenant B's objects", w.regionB.ID, 404}, {"an unassigned platform region", w.unassigned.ID, 404}}
		if isRegion {
			want := 403
			if access == tenancy.RegionSummary {
				want = 200
			}
			aims = append(aims, struct {
				what   string
				region string
				want   int
			}{"the platform region assigned to A", w.assigned.ID, want})
		} else if !strings.Contains(r.Path, ":") {
			continue // no object in the path: the lists are checked below
		} else {
			aims = aims[:1]
		}
		for _, aim := range aims {
			want := aim.want
			if lacks {
				want = 403
			}
			path := w.fillFor(r, aim.region)
			before := tenancyDigest(t, e.Store)
			got, body := w.call(r.Method, path, w.tokA)
			n++
			if want == 404 {
				// Another tenant's object answers as one that does not exist: the same
				// status (404, or a refusal of the input that any id gets) and the same words.
				ghost, ghostBody := w.call(r.Method, w.ghostPath(r), w.tokA)
				if got != ghost || got < 400 || scrub(body, w) != scrub(ghostBody, w) {
					t.Errorf("%s %s as A's owner on %s: %d %.200s; an object that does not exist: %d %.200s",
						r.Method, r.Path, aim.what, got, body, ghost, ghostBody)
				}
			} else if got != want {
				t.Errorf("%s %s as A's owner on %s: %d, want %d: %.200s", r.Method, r.Path, aim.what, got, want, body)
			}
			if got >= 300 || r.Method != http.MethodGet {
				if after := tenancyDigest(t, e.Store); after != before && got >= 300 {
					t.Errorf("%s %s as A's owner on %s: refused (%d) but something changed", r.Method, r.Path, aim.what, got)
				}
			}
			for _, name := range w.namesOfB {
				if strings.Contains(body, name) {
					t.Errorf("%s %s as A's owner on %s: the answer names %s", r.Method, r.Path, aim.what, name)
				}
			}
		}
	}
	t.Logf("%d requests of tenant A", n)
}

// TestRegionChecksAreNotChanges: the registry and Redis tests pass the region's details
// gate, not region.mutable (the spec exempts them); setting the Redis is a change.
func TestRegionChecksAreNotChanges(t *testing.T) {
	for path, want := range map[string]tenancy.RegionAccess{
		"/api/knative-regions/:id/test-registry": tenancy.RegionDetails,
		"/api/knative-regions/:id/test-redis":    tenancy.RegionDetails,
		"/api/knative-regions/:id/redis":         tenancy.RegionChange,
		"/api/knative-regions/:id/registry":      tenancy.RegionChange,
	} {
		if got, ok := web.RegionAccessOf(web.Route{Method: http.MethodPost, Path: path}); !ok || got != want {
			t.Errorf("POST %s: access %v, want %v", path, got, want)
		}
	}
}

// TestTenantMatrixChanges: what each side may change. Tenant A's owner changes its own
// region through every region route (never refused by the walls or region.mutable); the
// platform's owner changes a platform region through every region route and is refused
// (403) on a tenant-owned one; refusals change nothing. Each request gets a region of
// its own, so that a removal does not hide the next route.
func TestTenantMatrixChanges(t *testing.T) {
	w := newTenantWorld(t)
	e := w.e
	for _, r := range walked(e.S) {
		access, isRegion := web.RegionAccessOf(r)
		if !isRegion {
			continue
		}
		fresh := func(c context.Context) *store.Region {
			reg := &store.Region{Name: "r-" + strings.ToLower(store.NewID()[18:]), Kubeconfig: "not a kubeconfig"}
			if err := e.Store.CreateRegion(c, reg); err != nil {
				t.Fatal(err)
			}
			return reg
		}
		permsA := perm.OfUser(w.ownerA, nil)
		if hasAll(permsA, need(r, true)) {
			got, body := w.call(r.Method, w.fillFor(r, fresh(w.inA).ID), w.tokA)
			if got == 403 || got == 401 || got >= 500 && got != 502 { // 502: the handler reached for the (absent) cluster
				t.Errorf("%s %s as A's owner on its own region: %d: %.200s", r.Method, r.Path, got, body)
			}
		}
		got, body := w.call(r.Method, w.fillFor(r, fresh(w.platformCtx).ID), w.tokPlatform)
		if got == 403 || got == 401 || got >= 500 && got != 502 { // 502: the handler reached for the (absent) cluster
			t.Errorf("%s %s as the platform's owner on a platform region: %d: %.200s", r.Method, r.Path, got, body)
		}
		own := fresh(w.inB)
		before := tenancyDigest(t, e.Store)
		got, body = w.call(r.Method, w.fillFor(r, own.ID), w.tokPlatform)
		switch {
		case access == tenancy.RegionChange && got != 403:
			t.Errorf("%s %s as the platform's owner on B's region: %d, want 403: %.200s", r.Method, r.Path, got, body)
		case access != tenancy.RegionChange && (got == 403 || got == 404) && !strings.Contains(r.Path, ":node") && !strings.Contains(r.Path, ":tenant"):
			t.Errorf("%s %s as the platform's owner reads B's region: %d: %.200s", r.Method, r.Path, got, body)
		}
		if got >= 400 && tenancyDigest(t, e.Store) != before {
			t.Errorf("%s %s as the platform's owner on B's region: refused but something changed", r.Method, r.Path)
		}
	}
}

// TestTenantLists: lists, searches, counts and pages show a tenant's user its own
// regions, projects, jobs and users and the platform regions assigned to it (as a
// summary), nothing else; the platform sees every region with its owner.
func TestTenantLists(t *testing.T) {
	w := newTenantWorld(t)
	e := w.e
	var regions struct {
		Data []map[string]any
		Meta struct{ Total int }
	}
	if got := e.JSON("GET", "/api/knative-regions", w.tokA, nil, &regions); got != 200 {
		t.Fatalf("list regions: %d", got)
	}
	seen := map[string]map[string]any{}
	for _, r := range regions.Data {
		seen[r["name"].(string)] = r
	}
	if len(seen) != 2 || seen["acme-own"] == nil || seen["shared-eu"] == nil || regions.Meta.Total != 2 {
		t.Fatalf("A lists %v (total %d)", seen, regions.Meta.Total)
	}
	sum := seen["shared-eu"]
	if sum["owner"] != "platform" || sum["region_mode"] != "managed" || sum["project_count"].(float64) != 1 {
		t.Fatalf("summary of the assigned region: %v", sum)
	}
	for _, detail := range []string{"cluster_server", "k8s_version", "components", "health", "serving_status", "nodes", "kubeconfig"} {
		if _, ok := sum[detail]; ok {
			t.Errorf("the summary of a platform region has %s", detail)
		}
	}
	quota := sum["quota"].(map[string]any)["quota"].(map[string]any)
	if quota["cpu"].(float64) != 2 || quota["memory_gib"].(float64) != 4 {
		t.Fatalf("quota in the summary: %v", quota)
	}
	// The GPU summary is part of it (the spec: name, mode, own project count, GPU summary).
	if gpu, ok := sum["gpu"].(map[string]any); !ok || gpu["status"] != "not_installed" || gpu["total"].(float64) != 0 {
		t.Fatalf("the GPU summary of the assigned region: %v", sum["gpu"])
	}
	if seen["acme-own"]["owner"] != "tenant" || seen["acme-own"]["serving_status"] == nil {
		t.Fatalf("own region: %v", seen["acme-own"])
	}
	for _, path := range []string{"/api/knative-regions?q=globex", "/api/knative-regions?q=platform-us", "/api/projects", "/api/jobs", "/api/users", "/api/tokens"} {
		got, body := e.Raw("GET", path, w.tokA, "")
		if got != 200 {
			t.Errorf("%s: %d", path, got)
		}
		for _, name := range append(w.namesOfB, w.jobB.ID, w.projectB.ID, w.ownerB.ID, "root@platform.test") {
			if strings.Contains(body, name) {
				t.Errorf("%s as A names %s", path, name)
			}
		}
	}
	var users struct{ Data []store.User }
	e.JSON("GET", "/api/users", w.tokA, nil, &users)
	if len(users.Data) != 3 {
		t.Errorf("A's users: %d, want its owner, member and viewer", len(users.Data))
	}
	// The pages of a signed-in user of A.
	b := e.NewBrowser()
	b.Login(w.ownerA.Email, "password-of-owner")
	for _, path := range []string{"/regions", "/regions?q=globex", "/projects", "/jobs", "/users", "/tokens", "/regions/" + w.assigned.ID} {
		resp, body := b.Get(path)
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d", path, resp.StatusCode)
		}
		for _, name := range append(w.namesOfB, "root@platform.test") {
			if strings.Contains(body, name) {
				t.Errorf("page %s as A names %s", path, name)
			}
		}
	}
	_, body := b.Get("/regions")
	if !strings.Contains(body, `data-testid="assigned-region" data-region="shared-eu"`) || !strings.Contains(body, `data-region="acme-own"`) {
		t.Error("A's region list lacks its own or its assigned region")
	}
	if strings.Contains(body, `href="/tenants"`) {
		t.Error("a tenant's user is offered the Tenants page")
	}
	_, body = b.Get("/regions/" + w.assigned.ID)
	if !strings.Contains(body, `data-testid="quota-bar"`) || strings.Contains(body, "not a kubeconfig") || strings.Contains(body, `data-testid="tab-`) {
		t.Error("the assigned region's page is not a summary")
	}
	// The platform sees every region with its owner.
	pb := e.NewBrowser()
	pb.Login(w.platform.Email, "password-of-owner")
	_, body = pb.Get("/regions")
	for _, name := range []string{"acme-own", "globex-own", "shared-eu", "platform-us"} {
		if !strings.Contains(body, `data-region="`+name+`"`) {
			t.Errorf("the platform's list lacks %s", name)
		}
	}
	if !strings.Contains(body, ">globex<") {
		t.Error("the platform's list does not name the owner of globex-own")
	}
	var all struct{ Data []map[string]any }
	e.JSON("GET", "/api/users", w.tokPlatform, nil, &all)
	if len(all.Data) != 1 {
		t.Errorf("the platform's users: %d, want its own only", len(all.Data))
	}
}

// TestTenantSockets: a job's socket of another tenant closes as not found, and the
// banners a tenant's socket receives name none of another tenant's regions.
func TestTenantSockets(t *testing.T) {
	w := newTenantWorld(t)
	e := w.e
	e.Run()
	base := strings.Replace(e.Listen(), "http://", "ws://", 1)
	dial := func(path, tok string) *websocket.Conn {
		t.Helper()
		h := http.Header{}
		h.Set("Authorization", "Bearer "+tok)
		conn, _, err := websocket.DefaultDialer.Dial(base+path, h)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return conn
	}
	conn := dial("/ws/jobs/"+w.jobB.ID+"?format=json", w.tokA)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := conn.ReadMessage(); !websocket.IsCloseError(err, 4404) {
		t.Fatalf("A's socket on B's job: %v, want close 4404", err)
	}
	conn.Close()
	conn = dial("/ws/jobs/"+w.jobA.ID+"?format=json", w.tokA)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, msg, err := conn.ReadMessage(); err != nil || !strings.Contains(string(msg), w.jobA.ID) && len(msg) == 0 {
		t.Fatalf("A's socket on its job: %v %s", err, msg)
	}
	conn.Close()
	banners := dial("/ws/banners", w.tokA)
	defer banners.Close()
	if err := e.Store.UpdateMove(context.Background(), w.regionB.ID, store.MoveUpdate{Status: store.Ptr(store.MigrationDNSCheck)}); err != nil {
		t.Fatal(err)
	}
	if err := e.Store.UpdateMove(context.Background(), w.regionA.ID, store.MoveUpdate{Status: store.Ptr(store.MigrationDNSCheck)}); err != nil {
		t.Fatal(err)
	}
	_ = banners.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, msg, err := banners.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(msg), "acme-own") || strings.Contains(string(msg), "globex-own") {
		t.Fatalf("A's banners: %s", msg)
	}
}

// TestRegionModeOnlyFromPlatformAdministrators: region_mode from a tenant's user (its
// owner included) or a platform member is ignored, the region keeping its mode; a
// platform administrator sets it, and a wrong mode from one is a 422 with the field.
func TestRegionModeOnlyFromPlatformAdministrators(t *testing.T) {
	w := newTenantWorld(t)
	e := w.e
	_, adminTok := e.User("admin")
	mode := func(id string) store.RegionMode {
		r, err := e.Store.RegionByID(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		return r.Mode
	}
	if got := e.JSON("PUT", "/api/knative-regions/"+w.regionA.ID, w.tokA, map[string]any{"region_mode": "shared"}, nil); got != 200 {
		t.Fatalf("A's owner updates its region: %d", got)
	}
	if mode(w.regionA.ID) != store.RegionManaged {
		t.Fatal("region_mode from a tenant's owner was not ignored")
	}
	if got := e.JSON("PUT", "/api/knative-regions/"+w.regionA.ID, w.tokA, map[string]any{"region_mode": "bogus"}, nil); got != 200 {
		t.Fatalf("a wrong region_mode from a tenant's owner is ignored too: %d", got)
	}
	var out struct{ Fields map[string]string }
	before := tenancyDigest(t, e.Store)
	if got := e.JSON("PUT", "/api/knative-regions/"+w.assigned.ID, adminTok, map[string]any{"region_mode": "bogus"}, &out); got != 422 || out.Fields["region_mode"] == "" {
		t.Fatalf("a wrong mode from a platform admin: %d %v", got, out.Fields)
	}
	if tenancyDigest(t, e.Store) != before {
		t.Fatal("the refused mode changed something")
	}
	var answer struct{ Data map[string]any }
	if got := e.JSON("PUT", "/api/knative-regions/"+w.assigned.ID, adminTok, map[string]any{"region_mode": "shared"}, &answer); got != 200 {
		t.Fatalf("a platform admin sets the mode: %d", got)
	}
	if mode(w.assigned.ID) != store.RegionShared || answer.Data["region_mode"] != "shared" {
		t.Fatalf("mode %s, answer %v", mode(w.assigned.ID), answer.Data["region_mode"])
	}
	// A platform member has no regions.manage: the route is refused before the field.
	_, memberTok := e.User("member")
	if got := e.JSON("PUT", "/api/knative-regions/"+w.assigned.ID, memberTok, map[string]any{"region_mode": "managed"}, nil); got != 403 || mode(w.assigned.ID) != store.RegionShared {
		t.Fatalf("a platform member: %d, mode %s", got, mode(w.assigned.ID))
	}
	// The General tab shows the mode; the form is the platform administrators'.
	pb := e.NewBrowser()
	pb.Login(w.platform.Email, "password-of-owner")
	_, body := pb.Get("/regions/" + w.assigned.ID + "?tab=general")
	if !strings.Contains(body, `data-testid="region-mode"`) || !strings.Contains(body, `data-testid="mode-form"`) {
		t.Fatal("the General tab lacks the mode or its form for a platform owner")
	}
	resp, _ := pb.PostForm("/regions/"+w.assigned.ID+"/mode", url.Values{"region_mode": {"managed"}}, true)
	if resp.StatusCode != http.StatusSeeOther || mode(w.assigned.ID) != store.RegionManaged {
		t.Fatalf("the mode form: %d, mode %s", resp.StatusCode, mode(w.assigned.ID))
	}
	ab := e.NewBrowser()
	ab.Login(w.ownerA.Email, "password-of-owner")
	_, body = ab.Get("/regions/" + w.regionA.ID + "?tab=general")
	if !strings.Contains(body, `data-testid="region-mode"`) || strings.Contains(body, `data-testid="mode-form"`) {
		t.Fatal("a tenant's owner must see the mode, without the form")
	}
	// The wizard's first step offers the mode to platform administrators only.
	if _, body = pb.Get("/regions/new"); !strings.Contains(body, `data-testid="wizard-region-mode"`) {
		t.Fatal("the wizard does not offer the mode to a platform owner")
	}
	if _, body = ab.Get("/regions/new"); strings.Contains(body, `data-testid="wizard-region-mode"`) {
		t.Fatal("the wizard offers the mode to a tenant's owner")
	}
}

// TestExistingMonitoringOnlyPlatformAndTenantOwners: a Prometheus or Loki of a region's
// own is set by platform users and by tenant owners for their own regions; a tenant's
// admin is refused (403) and nothing changes.
func TestExistingMonitoringOnlyPlatformAndTenantOwners(t *testing.T) {
	w := newTenantWorld(t)
	e := w.e
	adminA := store.WithTenant(context.Background(), w.a.ID)
	u, err := e.Store.CreateUser(adminA, "admin@acme.test", "", "admin", "password-of-admin")
	if err != nil {
		t.Fatal(err)
	}
	_, tokAdminA, err := e.Store.CreateAPIToken(adminA, u.ID, "t", []string{"*"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	body := map[string]any{"prometheus_url": "http://prometheus.monitoring.svc:9090"}
	before := tenancyDigest(t, e.Store)
	if got := e.JSON("PUT", "/api/knative-regions/"+w.regionA.ID+"/monitoring", tokAdminA, body, nil); got != 403 {
		t.Fatalf("a tenant's admin sets existing monitoring: %d", got)
	}
	if tenancyDigest(t, e.Store) != before {
		t.Fatal("the refusal changed something")
	}
	// Going back to RunR's own is not setting an existing one.
	if got := e.JSON("PUT", "/api/knative-regions/"+w.regionA.ID+"/monitoring", tokAdminA, map[string]any{"prometheus_url": nil}, nil); got != 200 {
		t.Fatalf("a tenant's admin clears monitoring: %d", got)
	}
	if got := e.JSON("PUT", "/api/knative-regions/"+w.regionA.ID+"/monitoring", w.tokA, body, nil); got != 200 {
		t.Fatalf("a tenant's owner on its own region: %d", got)
	}
	if r, _ := e.Store.RegionByID(context.Background(), w.regionA.ID); r.Monitoring.V.PrometheusURL == "" {
		t.Fatal("the owner's monitoring was not saved")
	}
	if got := e.JSON("PUT", "/api/knative-regions/"+w.unassigned.ID+"/monitoring", w.tokPlatform, body, nil); got != 200 {
		t.Fatalf("the platform on its region: %d", got)
	}
}

// TestTenantAPI: the tenants, their users and the assignments through the API, with
// their validation (422 with field errors, never a 500) and their refusals.
func TestTenantAPI(t *testing.T) {
	w := newTenantWorld(t)
	e := w.e
	tok := w.tokPlatform
	var created struct{ Data store.Tenant }
	if got := e.JSON("POST", "/api/tenants", tok, map[string]string{"name": "initech"}, &created); got != 201 {
		t.Fatalf("create tenant: %d", got)
	}
	var bad struct{ Fields map[string]string }
	for _, body := range []any{map[string]string{"name": ""}, map[string]string{"name": "ACME"}, map[string]string{"name": strings.Repeat("x", 64)}, map[string]any{"name": 5}, "[1]"} {
		before := tenancyDigest(t, e.Store)
		if got := e.JSON("POST", "/api/tenants", tok, body, &bad); got != 422 {
			t.Errorf("create tenant %v: %d, want 422", body, got)
		}
		if tenancyDigest(t, e.Store) != before {
			t.Errorf("create tenant %v: refused but something changed", body)
		}
	}
	id := created.Data.ID
	if got := e.JSON("PUT", "/api/tenants/"+id, tok, map[string]string{"name": "initrode"}, nil); got != 200 {
		t.Fatalf("rename: %d", got)
	}
	var user struct {
		Data     store.User
		Password string
	}
	if got := e.JSON("POST", "/api/tenants/"+id+"/users", tok, map[string]string{"email": "boss@initrode.test", "role": "owner"}, &user); got != 201 || user.Password == "" {
		t.Fatalf("first owner: %d", got)
	}
	var list struct{ Data []map[string]any }
	if got := e.JSON("GET", "/api/tenants/"+id+"/users", tok, nil, &list); got != 200 || len(list.Data) != 1 || list.Data[0]["email"] != "boss@initrode.test" {
		t.Fatalf("tenant users: %d %v", got, list.Data)
	}
	for _, body := range []map[string]string{{"email": "nope", "role": "owner"}, {"email": "x@initrode.test", "role": "king"},
		{"email": "owner@acme.test", "role": "viewer"}, {"email": "y@initrode.test", "role": "viewer", "password": "short"}} {
		before := tenancyDigest(t, e.Store)
		if got := e.JSON("POST", "/api/tenants/"+id+"/users", tok, body, &bad); got != 422 || len(bad.Fields) == 0 {
			t.Errorf("tenant user %v: %d %v, want 422 with fields", body, got, bad.Fields)
		}
		if tenancyDigest(t, e.Store) != before {
			t.Errorf("tenant user %v: refused but something changed", body)
		}
	}
	// The new owner signs in to its tenant and invites a user there.
	b := e.NewBrowser()
	b.Login("boss@initrode.test", user.Password)
	_, page := b.Get("/users")
	if !strings.Contains(page, "boss@initrode.test") || strings.Contains(page, "owner@acme.test") || !strings.Contains(page, "initrode") {
		t.Fatal("the tenant owner's Users page")
	}
	// A platform admin may not make a tenant's owner (only owners make owners).
	_, adminTok := e.User("admin")
	if got := e.JSON("POST", "/api/tenants/"+id+"/users", adminTok, map[string]string{"email": "o2@initrode.test", "role": "owner"}, nil); got != 403 {
		t.Errorf("platform admin makes a tenant owner: %d", got)
	}
	// A tenant with regions or projects stays; an empty one goes with its users.
	before := tenancyDigest(t, e.Store)
	if got := e.JSON("DELETE", "/api/tenants/"+w.a.ID, tok, nil, nil); got != 422 || tenancyDigest(t, e.Store) != before {
		t.Fatalf("delete a tenant with regions: %d", got)
	}
	if got := e.JSON("DELETE", "/api/tenants/"+id, tok, nil, nil); got != 204 {
		t.Fatalf("delete: %d", got)
	}
	if _, err := e.Store.UserByEmail(context.Background(), "boss@initrode.test"); err == nil {
		t.Fatal("the removed tenant's user stayed")
	}
	if got := e.JSON("GET", "/api/tenants/"+id, tok, nil, nil); got != 404 {
		t.Fatalf("removed tenant: %d", got)
	}
	// Assignments: a tenant-owned region is never assigned; unknown tenants, negative and
	// non-numeric quotas are field errors; nothing changes.
	for _, tc := range []struct {
		region string
		body   string
		want   int
	}{
		{w.regionB.ID, `{"tenant_id": "` + w.a.ID + `", "cpu": 1}`, 403},
		{w.unassigned.ID, `{"tenant_id": "nope", "cpu": 1, "memory_gib": 1}`, 422},
		{w.unassigned.ID, `{"tenant_id": "` + w.a.ID + `", "cpu": -1, "memory_gib": 1}`, 422},
		{w.unassigned.ID, `{"tenant_id": "` + w.a.ID + `", "cpu": "two"}`, 422},
		{w.unassigned.ID, `{"cpu": 1, "memory_gib": 1}`, 422},
		{w.assigned.ID, `{"tenant_id": "` + w.a.ID + `", "cpu": 1, "memory_gib": 1}`, 422},
	} {
		before := tenancyDigest(t, e.Store)
		if got, body := e.Raw("POST", "/api/knative-regions/"+tc.region+"/assignments", tok, tc.body); got != tc.want {
			t.Errorf("assign %s: %d, want %d: %s", tc.body, got, tc.want, body)
		}
		if tenancyDigest(t, e.Store) != before {
			t.Errorf("assign %s: refused but something changed", tc.body)
		}
	}
	// A shared region takes quotas without looking at its cluster (not enforced).
	if got := e.JSON("PUT", "/api/knative-regions/"+w.unassigned.ID, tok, map[string]string{"region_mode": "shared"}, nil); got != 200 {
		t.Fatal(got)
	}
	var a struct{ Data store.Assignment }
	if got := e.JSON("POST", "/api/knative-regions/"+w.unassigned.ID+"/assignments", tok, map[string]any{"tenant_id": w.b.ID, "cpu": 64}, &a); got != 201 || a.Data.CPU != 64 {
		t.Fatalf("assign a shared region: %d %+v", got, a.Data)
	}
	var as struct{ Data []store.Assignment }
	if got := e.JSON("GET", "/api/knative-regions/"+w.unassigned.ID+"/assignments", tok, nil, &as); got != 200 || len(as.Data) != 1 || as.Data[0].TenantName != "globex" {
		t.Fatalf("assignments: %d %+v", got, as.Data)
	}
	if got := e.JSON("PUT", "/api/knative-regions/"+w.unassigned.ID+"/assignments/"+w.b.ID, tok, map[string]any{"memory_gib": 8}, &a); got != 200 || a.Data.CPU != 64 || a.Data.MemoryGiB != 8 {
		t.Fatalf("change: %d %+v", got, a.Data)
	}
	// B now sees the region, as a summary.
	if got := e.JSON("GET", "/api/knative-regions/"+w.unassigned.ID, w.tokB, nil, nil); got != 200 {
		t.Fatalf("B reads its assigned region: %d", got)
	}
	if got := e.JSON("DELETE", "/api/knative-regions/"+w.unassigned.ID+"/assignments/"+w.b.ID, tok, nil, nil); got != 204 {
		t.Fatalf("unassign: %d", got)
	}
	if got := e.JSON("GET", "/api/knative-regions/"+w.unassigned.ID, w.tokB, nil, nil); got != 404 {
		t.Fatalf("B after the unassignment: %d", got)
	}
	// Removing a region removes its assignments.
	if err := e.Store.DeleteProject(context.Background(), w.projectOnAssigned.ID); err != nil {
		t.Fatal(err)
	}
	if got := e.JSON("DELETE", "/api/knative-regions/"+w.assigned.ID, tok, nil, nil); got != 204 {
		t.Fatalf("remove the assigned region: %d", got)
	}
	if as, _ := e.Store.TenantAssignments(context.Background(), w.a.ID); len(as) != 0 {
		t.Fatal("the removed region's assignment stayed")
	}
}

// TestTenantsOff: with the Tenancy module off, its routes do not exist, a tenant's user
// cannot sign in or use a token, and the API shows no owner or mode.
func TestTenantsOff(t *testing.T) {
	w := newTenantWorld(t)
	// The same database, the module off.
	cfg := *w.e.Cfg
	cfg.Tenancy = false
	offOnWorld := webtest.NewOn(t, w.e.Store, &cfg)
	if got, _ := offOnWorld.Raw("GET", "/api/tenants", w.tokPlatform, ""); got != 404 {
		t.Errorf("/api/tenants with the module off: %d", got)
	}
	if got, _ := offOnWorld.Raw("GET", "/api/knative-regions", w.tokA, ""); got != 401 {
		t.Errorf("a tenant's token with the module off: %d", got)
	}
	b := offOnWorld.NewBrowser()
	b.Get("/login")
	resp, _ := b.PostForm("/login", url.Values{"email": {w.ownerA.Email}, "password": {"password-of-owner"}}, true)
	if resp.StatusCode == http.StatusSeeOther {
		t.Error("a tenant's user signed in with the module off")
	}
	got, body := offOnWorld.Raw("GET", "/api/knative-regions/"+w.assigned.ID, w.tokPlatform, "")
	var out struct{ Data map[string]any }
	_ = json.Unmarshal([]byte(body), &out)
	if got != 200 || out.Data["region_mode"] != nil || out.Data["owner"] != nil {
		t.Errorf("region with the module off: %d %v", got, out.Data)
	}
}

// TestTenantJobsStayInWalls: a tenant's user starts no job that names no region but a
// region setup (which creates the tenant's own region): a job without a region runs
// outside every wall. Reconcile, which acts on every region, is the platform's: the
// tenant is refused its dry run and its job (403), and nothing changes; the platform's
// owner runs both.
func TestTenantJobsStayInWalls(t *testing.T) {
	w := newTenantWorld(t)
	e := w.e
	for _, path := range []string{"/api/reconcile", "/api/reconcile?step=agent"} {
		if got, body := w.call(http.MethodGet, path, w.tokA); got != 403 || strings.Contains(body, "shared-eu") {
			t.Errorf("GET %s as A's owner: %d %.300s, want 403", path, got, body)
		}
	}
	for _, body := range []string{"{}", `{"step":"agent"}`, `{"region":"shared-eu"}`} {
		before := tenancyDigest(t, e.Store)
		got, answer := e.Raw(http.MethodPost, "/api/reconcile", w.tokA, body)
		if got != 403 || !strings.Contains(answer, "platform") {
			t.Errorf("POST /api/reconcile %s as A's owner: %d %.300s, want 403", body, got, answer)
		}
		if tenancyDigest(t, e.Store) != before {
			t.Errorf("POST /api/reconcile %s as A's owner changed something", body)
		}
	}
	// Every route without an object in its path, sent by A's owner: no job without a region.
	for _, r := range walked(e.S) {
		if r.Method == http.MethodGet || strings.Contains(r.Path, ":") {
			continue
		}
		w.call(r.Method, r.Path, w.tokA)
	}
	jobs, err := e.Store.ListJobs(w.inA, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	// A setup names no region until it creates one: it reads past the walls only for yes
	// or no answers (the name in use, a cluster of another owner; apitest's
	// TestTenancyQuotasAndAdmission refuses a tenant's region on another owner's cluster).
	for _, j := range jobs {
		if j.RegionID == nil && j.Kind != ops.KindRegistrySetup {
			t.Errorf("tenant A started job %s (%s) that names no region", j.Kind, j.Title)
		}
	}
	// The platform's owner: the dry run answers, the job is queued.
	if got, body := w.call(http.MethodGet, "/api/reconcile?step=agent", w.tokPlatform); got != 200 {
		t.Errorf("GET /api/reconcile as the platform's owner: %d %.300s", got, body)
	}
	if got, body := e.Raw(http.MethodPost, "/api/reconcile", w.tokPlatform, `{"step":"agent"}`); got != 202 {
		t.Errorf("POST /api/reconcile as the platform's owner: %d %.300s", got, body)
	}
}
