package store_test

import (
	"context"
	"errors"
	"testing"

	"runr.dev/console/store"
	"runr.dev/console/store/storetest"
)

// TestTenantWalls: in a tenant's walls a statement sees and changes that tenant's rows
// only, whatever its WHERE says (the row-level security of migration 00009), rows
// written there are the tenant's, platform regions assigned to it are read-only, and the
// platform (no tenant) sees every row.
func TestTenantWalls(t *testing.T) {
	st := storetest.New(t)
	ctx := context.Background()
	a, err := st.CreateTenant(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.CreateTenant(ctx, "globex")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateTenant(ctx, "ACME"); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("duplicate tenant name: %v", err)
	}
	inA, inB := store.WithTenant(ctx, a.ID), store.WithTenant(ctx, b.ID)

	platform := &store.Region{Name: "shared-eu", Kubeconfig: "kc-platform"}
	if err := st.CreateRegion(ctx, platform); err != nil {
		t.Fatal(err)
	}
	other := &store.Region{Name: "platform-us", Kubeconfig: "kc-us"}
	if err := st.CreateRegion(ctx, other); err != nil {
		t.Fatal(err)
	}
	ownA := &store.Region{Name: "acme-own", Kubeconfig: "kc-a"}
	if err := st.CreateRegion(inA, ownA); err != nil {
		t.Fatal(err)
	}
	if ownA.Tenant() != a.ID || platform.Tenant() != "" {
		t.Fatalf("owners: %q %q", ownA.Tenant(), platform.Tenant())
	}
	ownB := &store.Region{Name: "globex-own", Kubeconfig: "kc-b"}
	if err := st.CreateRegion(inB, ownB); err != nil {
		t.Fatal(err)
	}
	// A tenant cannot write a region of another tenant's, or the platform's.
	if err := st.CreateRegion(inA, &store.Region{Name: "sneaky", Kubeconfig: "x", TenantID: &b.ID}); err == nil {
		t.Fatal("tenant A created a region of tenant B")
	}
	if err := st.SaveAssignment(ctx, &store.Assignment{RegionID: platform.ID, TenantID: a.ID, CPU: 2, MemoryGiB: 4}, true,
		func(*store.Region, []store.Assignment, *store.Assignment) error { return nil }); err != nil {
		t.Fatal(err)
	}
	// A tenant-owned region is never assigned.
	err = st.SaveAssignment(ctx, &store.Assignment{RegionID: ownB.ID, TenantID: a.ID}, true,
		func(*store.Region, []store.Assignment, *store.Assignment) error { return nil })
	if err == nil {
		t.Fatal("a tenant-owned region was assigned")
	}

	names := func(c context.Context) map[string]bool {
		t.Helper()
		// No WHERE at all: the walls alone decide.
		var ns []string
		if err := st.DB.SelectContext(context.Background(), &ns, `SELECT name FROM regions`); err != nil {
			t.Fatal(err)
		}
		rs, err := st.ListRegions(c, store.RegionFilter{}, false)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, r := range rs {
			out[r.Name] = true
		}
		return out
	}
	if got := names(inA); len(got) != 2 || !got["acme-own"] || !got["shared-eu"] {
		t.Fatalf("tenant A sees %v, want its own region and the assigned one", got)
	}
	if got := names(inB); len(got) != 1 || !got["globex-own"] {
		t.Fatalf("tenant B sees %v", got)
	}
	if got := names(ctx); len(got) != 4 {
		t.Fatalf("the platform sees %v", got)
	}
	if _, err := st.RegionByID(inA, ownB.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("tenant A reads tenant B's region: %v", err)
	}
	// The assigned platform region is read-only in A's walls: an update changes no row.
	if err := st.SetRegionStatus(inA, platform.ID, store.RegionMaintenance); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("tenant A changed a platform region: %v", err)
	}
	if err := st.DeleteRegion(inA, platform.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("tenant A deleted a platform region: %v", err)
	}
	if err := st.SetRegionStatus(inA, ownA.ID, store.RegionMaintenance); err != nil {
		t.Fatalf("tenant A changes its own region: %v", err)
	}
	if r, _ := st.RegionByID(ctx, platform.ID); r.Status != store.RegionActive {
		t.Fatal("the platform region changed")
	}

	// Users: a user created in A's walls is A's; the owner rules count A's owners.
	ua, err := st.CreateUser(inA, "owner@acme.test", "", "owner", "password-acme")
	if err != nil {
		t.Fatal(err)
	}
	if ua.Tenant() != a.ID {
		t.Fatalf("user's tenant %q", ua.Tenant())
	}
	if _, err := st.CreateUser(ctx, "root@platform.test", "", "owner", "password-root"); err != nil {
		t.Fatal(err)
	}
	if n, _ := st.CountUsers(inA, "owner"); n != 1 {
		t.Fatalf("A's owners: %d", n)
	}
	if n, _ := st.CountUsers(ctx, ""); n != 1 {
		t.Fatalf("platform users: %d (tenant users are not the platform's)", n)
	}
	if n, _ := st.CountUsers(inB, ""); n != 0 {
		t.Fatalf("B's users: %d", n)
	}
	if err := st.ChangeUserRole(inA, nil, ua.ID, "admin"); err == nil {
		t.Fatal("A's last owner was demoted")
	}
	if _, err := st.CircleUserByID(ctx, ua.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a tenant user is in the platform's circle: %v", err)
	}

	// Projects and jobs written in A's walls are A's, invisible to B.
	p := &store.Project{Name: "shop", RegionID: &platform.ID, Image: "img"}
	if err := st.CreateProject(inA, p); err != nil {
		t.Fatal(err)
	}
	if p.TenantID == nil || *p.TenantID != a.ID {
		t.Fatal("the project is not A's")
	}
	if _, err := st.ProjectByID(inB, p.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("B reads A's project: %v", err)
	}
	if ps, _ := st.ListProjects(inB, ""); len(ps) != 0 {
		t.Fatalf("B lists %d projects", len(ps))
	}
	j := &store.Job{Kind: "k", Title: "t", RegionID: &platform.ID}
	if err := st.CreateJob(inA, j, []store.JobStep{{Name: "s", Title: "S"}}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := st.JobByID(inB, j.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("B reads A's job: %v", err)
	}
	if steps, _ := st.JobSteps(inB, j.ID); len(steps) != 0 {
		t.Fatal("B reads A's job steps")
	}
	if _, err := st.JobByID(inA, j.ID); err != nil {
		t.Fatal(err)
	}
	// A job on a tenant-owned region is its tenant's, whoever queued it.
	jb := &store.Job{Kind: "k", Title: "t", RegionID: &ownB.ID}
	if err := st.CreateJob(ctx, jb, nil, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := st.JobByID(inB, jb.ID); err != nil {
		t.Fatalf("B does not see the job on its region: %v", err)
	}
	// The project count of a region in A's walls is A's own.
	if err := st.CreateProject(ctx, &store.Project{Name: "platform-app", RegionID: &platform.ID, Image: "img"}); err != nil {
		t.Fatal(err)
	}
	if r, _ := st.RegionByID(inA, platform.ID); r.ProjectCount != 1 {
		t.Fatalf("A's project count on the shared region: %d", r.ProjectCount)
	}
	if r, _ := st.RegionByID(ctx, platform.ID); r.ProjectCount != 2 {
		t.Fatalf("the platform's count: %d", r.ProjectCount)
	}
	// Tenants and settings are the platform's to change.
	if err := st.RenameTenant(inA, a.ID, "acme2"); err == nil {
		t.Fatal("A renamed itself")
	}
	if got, _ := st.TenantByID(ctx, a.ID); got.Name != "acme" {
		t.Fatalf("tenant name %q", got.Name)
	}
	if err := st.SetSetting(inA, "base_domain", "evil.example.com"); err == nil {
		t.Fatal("A changed a platform setting")
	}
	if ts, _ := st.ListTenants(inA); len(ts) != 1 || ts[0].ID != a.ID {
		t.Fatalf("A sees tenants %v", ts)
	}
	// Tokens of B's users are not A's to see.
	ub, _ := st.CreateUser(inB, "owner@globex.test", "", "owner", "password-globex")
	if _, _, err := st.CreateAPIToken(inB, ub.ID, "ci", []string{"*"}, nil); err != nil {
		t.Fatal(err)
	}
	if ts, _ := st.ListAPITokens(inA, ub.ID); len(ts) != 0 {
		t.Fatal("A lists B's tokens")
	}
	// A tenant with regions or projects is not removed; removing a region removes its assignments.
	var inUse *store.TenantInUseError
	if err := st.DeleteTenant(ctx, a.ID); !errors.As(err, &inUse) {
		t.Fatalf("delete a tenant with regions: %v", err)
	}
	if err := st.DeleteProject(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	if as, _ := st.RegionAssignments(ctx, platform.ID); len(as) != 1 {
		t.Fatal("assignment missing")
	}
	if err := st.DeleteProject(ctx, mustProject(t, st, "platform-app").ID); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteRegion(ctx, platform.ID); err != nil {
		t.Fatal(err)
	}
	if as, _ := st.TenantAssignments(ctx, a.ID); len(as) != 0 {
		t.Fatal("the removed region's assignment stayed")
	}
	if err := st.DeleteRegion(inA, ownA.ID); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteTenant(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.UserByID(ctx, ua.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatal("the removed tenant's user stayed")
	}
}

func mustProject(t *testing.T, st *store.Store, name string) *store.Project {
	t.Helper()
	ps, err := st.ListProjects(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	for i := range ps {
		if ps[i].Name == name {
			return &ps[i]
		}
	}
	t.Fatalf("no project %s", name)
	return nil
}
