package store_test

import (
	"context"
	"maps"
	"slices"
	"sort"
	"testing"
	"time"

	"runr.dev/console/store"
	"runr.dev/console/store/storetest"
)

// TestHealthAtAGlance: the worst layer decides with its reason; the list's health filter
// and sort (SQL) agree with Glance (Go) on every combination of layer states.
func TestHealthAtAGlance(t *testing.T) {
	layer := func(s store.HealthState) store.HealthLayer {
		return store.HealthLayer{State: s, Reason: "because " + string(s)}
	}
	g := store.Health{API: layer(store.HealthOK), Components: layer(store.HealthDegraded), External: layer(store.HealthDown)}.Glance()
	if g.State != store.HealthDown || g.Reason != "External path: because down" {
		t.Fatalf("worst layer: %+v", g)
	}
	if g := (store.Health{}).Glance(); g.State != store.HealthUnknown || g.Reason != "not checked yet" {
		t.Fatalf("never checked: %+v", g)
	}
	if g := (store.Health{API: layer(store.HealthDown), Components: layer(store.HealthDown)}).Glance(); g.Reason != "Cluster API: because down" {
		t.Fatalf("a tie goes to the lower layer: %+v", g)
	}

	st := storetest.New(t)
	ctx := context.Background()
	states := []store.HealthState{"", store.HealthOK, store.HealthUnknown, store.HealthDegraded, store.HealthDown}
	glance := map[string]store.HealthState{}
	rank := map[store.HealthState]int{store.HealthOK: 0, store.HealthUnknown: 1, store.HealthDegraded: 2, store.HealthDown: 3}
	var checks []store.RegionCheck
	n := 0
	for _, api := range states[1:] {
		for _, comp := range states {
			for _, ext := range states {
				r := &store.Region{Name: "r" + string(rune('a'+n/26)) + string(rune('a'+n%26)), Kubeconfig: "KC"}
				n++
				if err := st.CreateRegion(ctx, r); err != nil {
					t.Fatal(err)
				}
				h := store.Health{API: layer(api), Components: layer(comp), External: layer(ext)}
				glance[r.Name] = h.Glance().State
				checks = append(checks, store.RegionCheck{ID: r.ID, CheckUpdate: store.CheckUpdate{CheckedAt: time.Now(), Health: h}})
			}
		}
	}
	never := &store.Region{Name: "zz-never", Kubeconfig: "KC"}
	if err := st.CreateRegion(ctx, never); err != nil {
		t.Fatal(err)
	}
	glance[never.Name] = store.HealthUnknown
	if _, err := st.SaveChecks(ctx, checks); err != nil {
		t.Fatal(err)
	}
	for _, f := range store.HealthFilters {
		var want []string
		for name, s := range glance {
			if string(s) == f || (f == "attention" && rank[s] >= 2) {
				want = append(want, name)
			}
		}
		sort.Strings(want)
		pg, err := st.ListRegionPage(ctx, store.RegionFilter{Health: f}, true)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range pg.Regions {
			got = append(got, r.Name)
			if r.Health.V.Glance().State != glance[r.Name] {
				t.Fatalf("%s read back with another health", r.Name)
			}
		}
		if !slices.Equal(got, want) || pg.Total != len(want) {
			t.Fatalf("filter %s: %v (total %d), want %v", f, got, pg.Total, want)
		}
	}
	pg, err := st.ListRegionPage(ctx, store.RegionFilter{SortByHealth: true, Limit: 1000}, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(pg.Regions) != len(glance) {
		t.Fatalf("sorted: %d regions, want %d", len(pg.Regions), len(glance))
	}
	for i := 1; i < len(pg.Regions); i++ {
		a, b := pg.Regions[i-1], pg.Regions[i]
		ra, rb := rank[glance[a.Name]], rank[glance[b.Name]]
		if ra < rb || (ra == rb && a.Name > b.Name) {
			t.Fatalf("sorted by health: %s (%s) before %s (%s)", a.Name, glance[a.Name], b.Name, glance[b.Name])
		}
	}
	if pg, err := st.ListRegionPage(ctx, store.RegionFilter{Health: "broken"}, true); err != nil || len(pg.Regions) != 0 {
		t.Fatalf("an unknown filter matches nothing: %d, %v", len(pg.Regions), err)
	}
}

// TestFleetOverview: the regions counted per health state at a glance, the worst first
// among those that need attention, the queued and running jobs; a tenant counts its own
// regions and jobs only, not the platform region assigned to it.
func TestFleetOverview(t *testing.T) {
	st := storetest.New(t)
	ctx := context.Background()
	layer := func(s store.HealthState) store.HealthLayer { return store.HealthLayer{State: s, Reason: string(s)} }
	fine := store.Health{API: layer(store.HealthOK), Components: layer(store.HealthOK), External: layer(store.HealthOK)}
	regions := map[string]store.Health{
		"a-ok": fine, "b-ok": fine, "c-never": {},
		"d-degraded": {API: layer(store.HealthOK), Components: layer(store.HealthDegraded), External: layer(store.HealthOK)},
		"e-down":     {API: layer(store.HealthDown)},
		"f-down":     {API: layer(store.HealthOK), Components: layer(store.HealthOK), External: layer(store.HealthDown)},
	}
	ids := map[string]string{}
	for name, h := range regions {
		r := &store.Region{Name: name, Kubeconfig: "KC"}
		if err := st.CreateRegion(ctx, r); err != nil {
			t.Fatal(err)
		}
		ids[name] = r.ID
		if h.API.State != "" {
			if err := st.SaveCheck(ctx, r.ID, store.CheckUpdate{CheckedAt: time.Now(), Health: h}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, status := range []store.JobStatus{store.JobQueued, store.JobRunning, store.JobSucceeded, store.JobFailed} {
		if _, err := st.DB.ExecContext(ctx, `INSERT INTO jobs (id, kind, title, region_id, status, created_at) VALUES ($1, 'k', $2, $3, $4, now() - make_interval(mins => $5))`,
			store.NewID(), "job "+string(status), ids["a-ok"], status, 10-i); err != nil {
			t.Fatal(err)
		}
	}
	o, err := st.FleetOverview(ctx, "", 2)
	if err != nil {
		t.Fatal(err)
	}
	want := map[store.HealthState]int{store.HealthOK: 2, store.HealthUnknown: 1, store.HealthDegraded: 1, store.HealthDown: 2}
	if !maps.Equal(o.ByHealth, want) || o.Total() != 6 {
		t.Fatalf("by health: %v (total %d), want %v", o.ByHealth, o.Total(), want)
	}
	var names []string
	for _, r := range o.Attention {
		names = append(names, r.Name)
	}
	if !slices.Equal(names, []string{"e-down", "f-down"}) || o.AttentionTotal != 3 {
		t.Fatalf("attention: %v of %d, want the two down regions of 3", names, o.AttentionTotal)
	}
	if g := o.Attention[1].Health.V.Glance(); g.Reason != "External path: down" {
		t.Fatalf("an attention row carries its health: %+v", g)
	}
	if len(o.Running) != 2 || o.RunningTotal != 2 || o.Running[0].Title != "job queued" || o.Running[1].Title != "job running" {
		t.Fatalf("running jobs: %d of %d, %+v", len(o.Running), o.RunningTotal, o.Running)
	}

	// A tenant with a region of its own and the platform's a-ok assigned to it.
	tenant, err := st.CreateTenant(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	in := store.WithTenant(ctx, tenant.ID)
	own := &store.Region{Name: "acme-own", Kubeconfig: "KC"}
	if err := st.CreateRegion(in, own); err != nil {
		t.Fatal(err)
	}
	noCheck := func(*store.Region, []store.Assignment, *store.Assignment) error { return nil }
	if err := st.SaveAssignment(ctx, &store.Assignment{RegionID: ids["a-ok"], TenantID: tenant.ID}, true, noCheck); err != nil {
		t.Fatal(err)
	}
	o, err = st.FleetOverview(in, tenant.ID, 5)
	if err != nil {
		t.Fatal(err)
	}
	if o.Total() != 1 || o.ByHealth[store.HealthUnknown] != 1 || o.RunningTotal != 0 {
		t.Fatalf("a tenant's overview: %v, %d jobs; want its own region only, no platform job", o.ByHealth, o.RunningTotal)
	}
}
