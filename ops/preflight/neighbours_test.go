package preflight

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/store"
	"runr.dev/console/store/storetest"
)

// TestChecklistNamesTheRegionsOfTheCluster: a cluster that hosts a region already says
// so in the checklist, with what a new region shares with it and whose internal
// registry and data services it holds (issue 34: a second region passed every check, then broke the
// first one's registry); the region itself is no neighbour of its own.
func TestChecklistNamesTheRegionsOfTheCluster(t *testing.T) {
	srv, _ := counting(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/version" {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"major":"1","minor":"31","gitVersion":"v1.31.0"}`)
			return
		}
		w.WriteHeader(http.StatusNotFound)
	}))
	st := storetest.New(t)
	ctx := context.Background()
	s := testService(true, "")
	s.Store = st
	eu2 := &store.Region{Name: "eu-2", Kubeconfig: "kc", ClusterKey: kube.ClusterKey(srv.URL), RegistryMode: store.RegistryInternal}
	if err := st.CreateRegion(ctx, eu2); err != nil {
		t.Fatal(err)
	}
	if err := st.SetRegionDataService(ctx, eu2.ID, store.DataKV, store.DataService{Status: store.ComponentReady}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Check(ctx, "eu-3", kubeconfigFor(srv.URL, ""), nil)
	if err != nil {
		t.Fatal(err)
	}
	it := res.Item("neighbours")
	if it == nil || it.Status != kit.CheckWarn || !strings.Contains(it.Evidence, "already hosts region eu-2") ||
		!strings.Contains(it.Evidence, "Knative Serving") || !strings.Contains(it.Evidence, "internal registry is eu-2's") ||
		!strings.Contains(it.Evidence, "data services kv (eu-2's)") {
		t.Fatalf("the checklist of a cluster that hosts eu-2: %+v", it)
	}
	if res, err = s.Check(ctx, "eu-2", kubeconfigFor(srv.URL, ""), nil); err != nil || res.Item("neighbours") != nil {
		t.Fatalf("eu-2's own check names no neighbour: %v %+v", err, res.Item("neighbours"))
	}
}
