package web_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"runr.dev/console/store"
	"runr.dev/console/web/webtest"
)

// The General tab's Monitoring form sets the volumes and retention of RunR's own
// Prometheus, Loki and Tempo: a value that is not a number is shown beside its field with
// the value kept and changes nothing; empty is RunR's default, named in the field's hint.
func TestMonitoringFormVolumes(t *testing.T) {
	e := webtest.New(t, nil)
	e.Run()
	ctx := context.Background()
	r := &store.Region{Name: "mon-eu", Kubeconfig: "kc"}
	if err := e.Store.CreateRegion(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Store.CreateUser(ctx, "mon-owner@example.com", "", "owner", "password-of-mon-owner"); err != nil {
		t.Fatal(err)
	}
	b := e.NewBrowser()
	b.Login("mon-owner@example.com", "password-of-mon-owner")
	_, body := b.Get("/regions/" + r.ID + "?tab=general")
	if !strings.Contains(body, `data-testid="monitoring-storage"`) || !strings.Contains(body, "RunR&#39;s default: 20 GiB") {
		t.Fatalf("the Monitoring form has no volume fields with the defaults:\n%s", body)
	}
	form := url.Values{"prometheus_url": {""}, "loki_url": {""}, "loki_org_id": {""}, "storage_class": {""},
		"prometheus_size_gi": {""}, "loki_size_gi": {"ten"}, "tempo_size_gi": {""}, "prometheus_retention_days": {"30"}, "loki_retention_days": {""}}
	resp, body := b.PostForm("/regions/"+r.ID+"/monitoring", form, true)
	if resp.StatusCode != 422 || !strings.Contains(body, `data-testid="error-loki_size_gi"`) || !strings.Contains(body, `value="ten"`) {
		t.Fatalf("a size that is not a number: %d\n%s", resp.StatusCode, body)
	}
	if got, _ := e.Store.RegionByID(ctx, r.ID); got.Monitoring.V != (store.Monitoring{}) {
		t.Fatalf("a refused form changed the monitoring: %+v", got.Monitoring.V)
	}
	form.Set("loki_size_gi", "")
	if resp, _ := b.PostForm("/regions/"+r.ID+"/monitoring", form, true); resp.StatusCode != 303 && resp.StatusCode != 302 {
		t.Fatalf("a retention of 30 days: %d", resp.StatusCode)
	}
	if got, _ := e.Store.RegionByID(ctx, r.ID); got.Monitoring.V != (store.Monitoring{PrometheusRetentionDays: 30}) {
		t.Fatalf("monitoring after the form: %+v", got.Monitoring.V)
	}
	if _, body := b.Get("/regions/" + r.ID + "?tab=general"); !strings.Contains(body, `name="prometheus_retention_days" type="number" value="30"`) {
		t.Fatalf("the form does not show the saved retention:\n%s", body)
	}
}
