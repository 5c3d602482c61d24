package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"runr.dev/console/store"
	"runr.dev/console/store/storetest"
)

// The sweep saves a look's checks in one statement: each region gets its own health and
// time, the optional fields change only where they are set, and a region deleted
// meanwhile is left out of what was saved.
func TestSaveChecksSavesEachRegionsOwnCheck(t *testing.T) {
	st := storetest.New(t)
	ctx := context.Background()
	var ids []string
	for _, name := range []string{"eu-1", "eu-2", "gone"} {
		r := &store.Region{Name: name, Kubeconfig: "KC"}
		if err := st.CreateRegion(ctx, r); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	if err := st.DeleteRegion(ctx, ids[2]); err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC().Truncate(time.Millisecond)
	if err := st.SaveCheck(ctx, ids[1], store.CheckUpdate{CheckedAt: at, K8sVersion: store.Ptr("v1.30.0"), ExternalIP: store.Ptr("10.0.0.1")}); err != nil {
		t.Fatal(err)
	}
	saved, err := st.SaveChecks(ctx, []store.RegionCheck{
		{ID: ids[0], CheckUpdate: store.CheckUpdate{CheckedAt: at, Health: store.Health{API: store.HealthLayer{State: store.HealthOK, Reason: "answered"}},
			K8sVersion: store.Ptr("v1.31.0"), ExternalIP: store.Ptr("127.0.0.9"), DNSResolved: store.Ptr(true)}},
		{ID: ids[1], CheckUpdate: store.CheckUpdate{CheckedAt: at.Add(time.Second), Health: store.Health{API: store.HealthLayer{State: store.HealthDown, Reason: "no answer"}, Failures: 2}}},
		{ID: ids[2], CheckUpdate: store.CheckUpdate{CheckedAt: at}},
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(saved)
	if want := []string{ids[0], ids[1]}; !slices.Equal(saved, slices.Sorted(slices.Values(want))) {
		t.Fatalf("saved %v, want %v", saved, want)
	}
	a, err := st.RegionByID(ctx, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if a.Health.V.API.State != store.HealthOK || a.K8sVersion != "v1.31.0" || a.ExternalIP != "127.0.0.9" || !a.DNSResolved || a.CheckedAt == nil || !a.CheckedAt.Equal(at) {
		t.Fatalf("eu-1 after its check: health %+v, version %q, ip %q, dns %v, checked %v", a.Health.V.API, a.K8sVersion, a.ExternalIP, a.DNSResolved, a.CheckedAt)
	}
	b, err := st.RegionByID(ctx, ids[1])
	if err != nil {
		t.Fatal(err)
	}
	if b.Health.V.API.State != store.HealthDown || b.Health.V.Failures != 2 || b.ExternalIP != "10.0.0.1" || b.K8sVersion != "v1.30.0" || b.CheckedAt == nil || !b.CheckedAt.Equal(at.Add(time.Second)) {
		t.Fatalf("eu-2 after its check: health %+v, version %q, ip %q (unset fields must stay), checked %v", b.Health.V, b.K8sVersion, b.ExternalIP, b.CheckedAt)
	}
	if err := st.SaveCheck(ctx, ids[2], store.CheckUpdate{CheckedAt: at}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("SaveCheck of a deleted region: %v, want ErrNotFound", err)
	}
}
