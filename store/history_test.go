package store_test

import (
	"context"
	"testing"
	"time"

	"runr.dev/console/store"
	"runr.dev/console/store/storetest"
)

// The daily history retention deletes each active region's reports older than its
// retention (7 days, or its region_log_settings row) and leaves regions that are not
// active alone.
func TestPruneRegionHistory(t *testing.T) {
	st := storetest.New(t)
	ctx := context.Background()
	regions := map[string]*store.Region{}
	for name, status := range map[string]store.RegionStatus{"active": store.RegionActive, "kept-30": store.RegionActive, "inactive": store.RegionInactive} {
		r := &store.Region{Name: name, Kubeconfig: "kc", Status: status}
		if err := st.CreateRegion(ctx, r); err != nil {
			t.Fatal(err)
		}
		regions[name] = r
		for _, age := range []time.Duration{10 * 24 * time.Hour, time.Hour} {
			at := time.Now().Add(-age)
			if err := st.AddKubeEvent(ctx, r.ID, "ns", "pod/p", "Normal", "Started", "started", at); err != nil {
				t.Fatal(err)
			}
			if err := st.AddPodSession(ctx, r.ID, "ns", "p", "start", 0, at); err != nil {
				t.Fatal(err)
			}
			if err := st.AddSnapshot(ctx, r.ID, at, []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := st.DB.Exec(`INSERT INTO region_log_settings (region_id, retention_days) VALUES ($1, 30)`, regions["kept-30"].ID); err != nil {
		t.Fatal(err)
	}
	n, err := st.PruneRegionHistory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != (store.HistoryPruned{Events: 1, Sessions: 1, Snapshots: 1}) {
		t.Fatalf("pruned %+v, want one of each (the active region's 10-day-old reports)", n)
	}
	for name, want := range map[string]int{"active": 1, "kept-30": 2, "inactive": 2} {
		for _, table := range []string{"kube_events", "pod_sessions", "metric_snapshots"} {
			var got int
			if err := st.DB.Get(&got, `SELECT count(*) FROM `+table+` WHERE region_id = $1`, regions[name].ID); err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("%s keeps %d rows of %s, want %d", name, got, table, want)
			}
		}
	}
}

// Two edits of different monitoring settings, each from its own read of the region, both
// land (a merge of the keys sent, not a write of the whole).
func TestUpdateMonitoringMerges(t *testing.T) {
	st := storetest.New(t)
	ctx := context.Background()
	r := &store.Region{Name: "mon", Kubeconfig: "kc"}
	if err := st.CreateRegion(ctx, r); err != nil {
		t.Fatal(err)
	}
	class, days := "fast-ssd", 30
	if err := st.UpdateMonitoring(ctx, r.ID, store.MonitoringUpdate{StorageClass: &class}); err != nil {
		t.Fatal(err)
	}
	if err := st.UpdateMonitoring(ctx, r.ID, store.MonitoringUpdate{LokiRetentionDays: &days}); err != nil {
		t.Fatal(err)
	}
	got, err := st.RegionByID(ctx, r.ID)
	if err != nil || got.Monitoring.V != (store.Monitoring{StorageClass: "fast-ssd", LokiRetentionDays: 30}) {
		t.Fatalf("monitoring after two edits: %+v %v", got.Monitoring.V, err)
	}
	empty, zero := "", 0
	if err := st.UpdateMonitoring(ctx, r.ID, store.MonitoringUpdate{StorageClass: &empty, LokiRetentionDays: &zero}); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.RegionByID(ctx, r.ID); got.Monitoring.V != (store.Monitoring{}) {
		t.Fatalf("back to the defaults: %+v", got.Monitoring.V)
	}
}
