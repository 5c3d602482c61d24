package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"runr.dev/console/agent"
	"runr.dev/console/config"
	"runr.dev/console/ops/billing"
	"runr.dev/console/store"
	"runr.dev/console/web/webtest"
)

// TestAuthorisationMatrixBilling is the authorisation matrix with the Billing module on.
func TestAuthorisationMatrixBilling(t *testing.T) {
	authorisationMatrix(t, func(c *config.Config) { c.Billing = true })
}

// TestBillingOff: without RUNR_BILLING no billing route, tab or permission exists.
func TestBillingOff(t *testing.T) {
	e := webtest.New(t, nil)
	_, tok := e.User("owner")
	r := &store.Region{Name: "eu-1", Kubeconfig: "not used"}
	if err := e.Store.CreateRegion(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/api/billing/charges", "/api/billing/settings", "/api/knative-regions/" + r.ID + "/billing"} {
		if got := e.JSON("GET", path, tok, nil, nil); got != http.StatusNotFound {
			t.Errorf("GET %s with billing off: %d, want 404", path, got)
		}
	}
	b := e.SignedIn("owner")
	if _, body := b.Get("/regions/" + r.ID); strings.Contains(body, `data-testid="tab-billing"`) || strings.Contains(body, `href="/billing"`) {
		t.Error("the region page offers billing with the module off")
	}
	if _, body := b.Get("/tokens"); strings.Contains(body, "billing.view") {
		t.Error("a token can be given billing.view with the module off")
	}
}

// TestBillingEndToEnd walks the module over the API and the pages: refused input changes
// nothing, an agent's report becomes a charge, the webhook gets a signed test event, the
// secret never comes back, and a fixed region refuses a deploy beyond its allocation.
func TestBillingEndToEnd(t *testing.T) {
	e := webtest.New(t, func(c *config.Config) { c.Billing = true })
	ctx := context.Background()
	_, tok := e.User("owner")
	_, adminTok := e.User("admin")
	r := &store.Region{Name: "eu-1", Kubeconfig: "not used"}
	if err := e.Store.CreateRegion(ctx, r); err != nil {
		t.Fatal(err)
	}
	web := &store.Project{Name: "web", RegionID: &r.ID, Image: "reg/web:1", CPUm: 500, MemoryMi: 512}
	if err := e.Store.CreateProject(ctx, web); err != nil {
		t.Fatal(err)
	}
	if err := e.Store.SetProjectState(ctx, web.ID, store.ProjectRunning, "", web.Image); err != nil {
		t.Fatal(err)
	}
	path := "/api/knative-regions/" + r.ID + "/billing"

	// Refused input: field errors, and the region keeps its billing.
	var refused struct {
		Errors map[string]string `json:"fields"`
	}
	if got := e.JSON("PUT", path, tok, map[string]any{"type": "monthly", "vcpu_hour": "-0.5", "memory_gib_hour": "0.0000001"}, &refused); got != 422 ||
		refused.Errors["type"] == "" || refused.Errors["vcpu_hour"] == "" || refused.Errors["memory_gib_hour"] == "" {
		t.Fatalf("bad prices: %d %+v", got, refused)
	}
	if got := e.JSON("PUT", path, adminTok, map[string]any{"vcpu_hour": "1"}, nil); got != http.StatusForbidden {
		t.Fatalf("an admin changed prices (billing.manage is the owner's): %d", got)
	}
	var n int
	if err := e.Store.DB.Get(&n, `SELECT count(*) FROM region_billing`); err != nil || n != 0 {
		t.Fatalf("a refusal stored billing: %d, %v", n, err)
	}
	var rb struct {
		Data billing.RegionView `json:"data"`
	}
	if got := e.JSON("PUT", path, tok, map[string]any{"vcpu_hour": "0.04", "memory_gib_hour": "0.006"}, &rb); got != 200 || rb.Data.Prices.VCPUHour != "0.04" || rb.Data.Type != "payg" {
		t.Fatalf("prices: %d %+v", got, rb)
	}

	// The agent's snapshot, sent twice in the same minute, becomes one minute of web.
	at := time.Now().UTC()
	snap := agent.Message{Type: "snapshot", At: at, Snapshot: &agent.Snapshot{Nodes: []agent.NodeUsage{}, Namespaces: []agent.NamespaceUsage{},
		Projects: []agent.ProjectUsage{{Project: web.ID, Namespace: "eu-1", CPURequested: 500, MemRequested: 512 << 20, Pods: 1}}}}
	for range 2 {
		if err := e.Kube.Observability.RecordAgentReport(ctx, reporting(t, e, r.ID), snap); err != nil {
			t.Fatal(err)
		}
	}
	var charges struct {
		Data []billing.ChargeView `json:"data"`
	}
	if got := e.JSON("GET", "/api/billing/charges?period="+at.Format("2006-01"), tok, nil, &charges); got != 200 || len(charges.Data) != 1 ||
		charges.Data[0].ProjectName != "web" || charges.Data[0].Usage.CPUMinutesM != 500 || charges.Data[0].Currency != "EUR" {
		t.Fatalf("charges: %d %+v", got, charges)
	}
	if got := e.JSON("GET", "/api/billing/charges?period=last-month", tok, nil, nil); got != 422 {
		t.Fatalf("a malformed period: %d, want 422", got)
	}

	// The webhook: a receiver on loopback that checks the signature.
	const secret = "whsec-e2e-0123456789"
	var mu sync.Mutex
	var received []string
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if err := billing.Verify(secret, req.Header.Get(billing.SignatureHeader), body, time.Now(), time.Minute); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		mu.Lock()
		received = append(received, req.Header.Get("Runr-Event-Type"))
		mu.Unlock()
	}))
	defer recv.Close()
	status, body := e.Raw("PUT", "/api/billing/settings", tok, `{"webhook_url":"`+recv.URL+`","webhook_secret":"`+secret+`"}`)
	if status != 200 || strings.Contains(body, secret) || !strings.Contains(body, `"webhook_secret_set":true`) {
		t.Fatalf("settings: %d %s", status, body)
	}
	var sealed string
	if err := e.Store.DB.Get(&sealed, `SELECT webhook_secret FROM billing_settings`); err != nil || strings.Contains(sealed, secret) || sealed == "" {
		t.Fatalf("the webhook secret is not encrypted at rest: %q, %v", sealed, err)
	}
	if status, body = e.Raw("POST", "/api/billing/test-event", tok, ""); status != 200 || !strings.Contains(body, `"status":"delivered"`) {
		t.Fatalf("test event: %d %s", status, body)
	}
	if err := e.Kube.Billing.DeliverDue(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := strings.Join(received, ",")
	mu.Unlock()
	if got != "test" {
		// charge.created was recorded before the URL was set: kept, not sent.
		t.Fatalf("the receiver got %q, want the test event only", got)
	}
	for _, path := range []string{"/api/billing/settings", "/api/billing/events"} {
		if _, body := e.Raw("GET", path, tok, ""); strings.Contains(body, secret) {
			t.Fatalf("GET %s shows the secret", path)
		}
	}
	if strings.Contains(e.Log.String(), secret) {
		t.Fatal("the webhook secret reached the log")
	}

	// A fixed region refuses a deploy beyond its allocation, before anything is queued.
	if got := e.JSON("PUT", path, tok, map[string]any{"type": "fixed", "fixed_price": "250", "allocation_cpu_m": 1000, "allocation_memory_mi": 1024}, &rb); got != 200 || rb.Data.Held.CPUm != 500 {
		t.Fatalf("fixed: %d %+v", got, rb)
	}
	big := &store.Project{Name: "big", RegionID: &r.ID, Image: "reg/big:1", CPUm: 800, MemoryMi: 256}
	if err := e.Store.CreateProject(ctx, big); err != nil {
		t.Fatal(err)
	}
	var jobs int
	e.Store.DB.Get(&jobs, `SELECT count(*) FROM jobs`)
	status, body = e.Raw("POST", "/api/projects/"+big.ID+"/deploy", tok, "")
	if status != 422 || !strings.Contains(body, "fixed resources") || !strings.Contains(body, "500m free") {
		t.Fatalf("a deploy beyond the allocation: %d %s", status, body)
	}
	var after int
	e.Store.DB.Get(&after, `SELECT count(*) FROM jobs`)
	if after != jobs {
		t.Fatal("the refused deploy queued a job")
	}

	// The pages: the Billing tab, its form's refusal beside the field, Settings → Billing.
	b := e.SignedIn("owner")
	if _, body := b.Get("/regions/" + r.ID + "?tab=billing"); !strings.Contains(body, `data-testid="billing-tab"`) || !strings.Contains(body, "Fixed resources") ||
		!strings.Contains(body, "250.00") {
		t.Fatalf("the Billing tab: %.2000s", body)
	}
	form := url.Values{"type": {"fixed"}, "fixed_price": {"ten"}, "allocation_cpu_m": {"1000"}, "allocation_memory_mi": {"1024"}}
	resp, body := b.PostForm("/regions/"+r.ID+"/billing", form, true)
	if resp.StatusCode != 422 || !strings.Contains(body, `data-testid="error-fixed_price"`) || !strings.Contains(body, `value="ten"`) {
		t.Fatalf("the form's refusal: %d %.3000s", resp.StatusCode, body)
	}
	form.Set("fixed_price", "300")
	if resp, _ := b.PostForm("/regions/"+r.ID+"/billing", form, true); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the form: %d", resp.StatusCode)
	}
	if v, _ := e.Kube.Billing.Region(ctx, r); v.Prices.FixedPeriod != "300.00" {
		t.Fatalf("the form did not save: %+v", v.Prices)
	}
	_, body = b.Get("/billing")
	for _, want := range []string{`data-testid="region-price-row"`, "300.00 per month", `data-testid="event-row"`, "charge.created", "Send test event"} {
		if !strings.Contains(body, want) {
			t.Errorf("Settings → Billing lacks %q", want)
		}
	}
	if strings.Contains(body, secret) {
		t.Error("Settings → Billing shows the secret")
	}
}

// TestBillingTenantWalls: each tenant's users read their own account's charges and events
// only, whatever they ask for; the platform reads every account, one at a time on request.
func TestBillingTenantWalls(t *testing.T) {
	w := newTenantWorldWith(t, true)
	e, ctx := w.e, context.Background()
	now := time.Now().UTC()
	for _, p := range []*store.Project{w.projectA, w.projectB} {
		if err := e.Store.SetProjectState(ctx, p.ID, store.ProjectRunning, "", p.Image); err != nil {
			t.Fatal(err)
		}
		region, err := e.Store.RegionByID(ctx, *p.RegionID)
		if err != nil {
			t.Fatal(err)
		}
		snap := agent.Message{Type: "snapshot", At: now, Snapshot: &agent.Snapshot{
			Projects: []agent.ProjectUsage{{Project: p.ID, CPURequested: 100, MemRequested: 128 << 20, Pods: 1}}}}
		if err := e.Kube.Observability.RecordAgentReport(ctx, reporting(t, e, region.ID), snap); err != nil {
			t.Fatal(err)
		}
	}
	names := func(tok, query string) string {
		var out struct {
			Data []billing.ChargeView `json:"data"`
		}
		if got := e.JSON("GET", "/api/billing/charges"+query, tok, nil, &out); got != 200 {
			t.Fatalf("charges%s: %d", query, got)
		}
		var ns []string
		for _, c := range out.Data {
			ns = append(ns, c.ProjectName)
		}
		return strings.Join(ns, ",")
	}
	if got := names(w.tokA, ""); got != "acme-shop" {
		t.Errorf("A's owner reads %q", got)
	}
	if got := names(w.tokA, "?tenant="+w.b.ID); got != "acme-shop" {
		t.Errorf("A's owner asking for B's account reads %q", got)
	}
	if got := names(w.tokPlatform, ""); got != "acme-shop,globex-secret-app" {
		t.Errorf("the platform reads %q", got)
	}
	if got := names(w.tokPlatform, "?tenant="+w.b.ID); got != "globex-secret-app" {
		t.Errorf("the platform asking for B's account reads %q", got)
	}
	if _, body := e.Raw("GET", "/api/billing/events", w.tokA, ""); strings.Contains(body, "globex") {
		t.Errorf("A's owner reads B's events: %.500s", body)
	}
	if got := e.JSON("PUT", "/api/billing/settings", w.tokA, map[string]any{"currency": "USD"}, nil); got != http.StatusForbidden {
		t.Errorf("a tenant's owner changed the console's billing settings: %d", got)
	}
}

// TestBillingOffersWithMarkup: with tenants, assigning a platform region is an offer; the
// region stays out of sight until the tenant accepts with its markup; a declined offer
// assigns nothing; the tenant's charges are the platform's prices plus its markup.
func TestBillingOffersWithMarkup(t *testing.T) {
	w := newTenantWorldWith(t, true)
	e, ctx := w.e, context.Background()
	region := w.unassigned
	regionPath := "/api/knative-regions/" + region.ID
	if got := e.JSON("PUT", regionPath+"/billing", w.tokPlatform, map[string]any{"vcpu_hour": "0.06"}, nil); got != 200 {
		t.Fatalf("prices: %d", got)
	}
	var offers struct {
		Data []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"data"`
	}
	offer := func(tenant string) string {
		var out struct {
			Data struct{ ID, Status string } `json:"data"`
		}
		if got := e.JSON("POST", regionPath+"/assignments", w.tokPlatform, map[string]any{"tenant_id": tenant, "cpu": 1, "memory_gib": 1}, &out); got != http.StatusAccepted || out.Data.Status != "offered" {
			t.Fatalf("offer to %s: %d %+v", tenant, got, out)
		}
		return out.Data.ID
	}
	offerA, offerB := offer(w.a.ID), offer(w.b.ID)
	if got := e.JSON("POST", regionPath+"/assignments", w.tokPlatform, map[string]any{"tenant_id": w.a.ID}, nil); got != 422 {
		t.Fatalf("a second offer to A: %d, want 422", got)
	}
	if got := e.JSON("GET", regionPath, w.tokA, nil, nil); got != 404 {
		t.Fatalf("A sees the region before accepting: %d", got)
	}
	if got := e.JSON("GET", "/api/billing/offers", w.tokA, nil, &offers); got != 200 || len(offers.Data) != 1 || offers.Data[0].ID != offerA {
		t.Fatalf("A's offers: %d %+v", got, offers)
	}

	// A refused markup changes nothing; an accepted one assigns the region.
	var refused struct {
		Fields map[string]string `json:"fields"`
	}
	if got := e.JSON("POST", "/api/billing/offers/"+offerA+"/accept", w.tokA, map[string]any{"markup_percent": "fifteen"}, &refused); got != 422 || refused.Fields["markup_percent"] == "" {
		t.Fatalf("a markup that is no number: %d %+v", got, refused)
	}
	if _, err := e.Store.AssignmentOf(ctx, region.ID, w.a.ID); err == nil {
		t.Fatal("a refused acceptance assigned the region")
	}
	if got := e.JSON("POST", "/api/billing/offers/"+offerA+"/accept", w.tokB, map[string]any{"markup_percent": "15"}, nil); got != 404 {
		t.Fatalf("B accepted A's offer: %d", got)
	}
	// The quotas' fit is checked against the region's cluster when the tenant accepts: a
	// cluster that does not answer refuses the acceptance, and the offer stays open.
	if got := e.JSON("POST", "/api/billing/offers/"+offerA+"/accept", w.tokA, map[string]any{"markup_percent": "15"}, nil); got != http.StatusBadGateway {
		t.Fatalf("A accepts while the region's cluster does not answer: %d, want 502", got)
	}
	if _, err := e.Store.AssignmentOf(ctx, region.ID, w.a.ID); err == nil {
		t.Fatal("a refused acceptance assigned the region")
	}
	// A shared region (no quotas enforced) needs no cluster to accept.
	if _, err := e.Store.DB.Exec(`UPDATE regions SET region_mode = 'shared' WHERE id = $1`, region.ID); err != nil {
		t.Fatal(err)
	}
	if got := e.JSON("POST", "/api/billing/offers/"+offerA+"/accept", w.tokA, map[string]any{"markup_percent": "15"}, nil); got != 200 {
		t.Fatalf("A accepts: %d", got)
	}
	if got := e.JSON("GET", regionPath, w.tokA, nil, nil); got != 200 {
		t.Fatalf("A does not see the accepted region: %d", got)
	}
	if got := e.JSON("POST", "/api/billing/offers/"+offerB+"/decline", w.tokB, nil, nil); got != 200 {
		t.Fatalf("B declines: %d", got)
	}
	if got := e.JSON("POST", "/api/billing/offers/"+offerB+"/accept", w.tokB, map[string]any{"markup_percent": "1"}, nil); got != 422 {
		t.Fatalf("B accepts a declined offer: %d", got)
	}
	if got := e.JSON("GET", regionPath, w.tokB, nil, nil); got != 404 {
		t.Fatalf("B sees the declined region: %d", got)
	}

	// A's project there: one vCPU-hour at 0.06 is 0.06 for the platform, 0.069 → 0.07 with 15 %.
	p := &store.Project{Name: "acme-billed", RegionID: &region.ID, Image: "reg/a:1", CPUm: 100, MemoryMi: 64}
	if err := e.Store.CreateProject(w.inA, p); err != nil {
		t.Fatal(err)
	}
	if err := e.Store.SetProjectState(ctx, p.ID, store.ProjectRunning, "", p.Image); err != nil {
		t.Fatal(err)
	}
	snap := agent.Message{Type: "snapshot", At: time.Now(), Snapshot: &agent.Snapshot{Projects: []agent.ProjectUsage{{Project: p.ID, CPURequested: 60_000}}}}
	if err := e.Kube.Observability.RecordAgentReport(ctx, reporting(t, e, region.ID), snap); err != nil {
		t.Fatal(err)
	}
	var charges struct {
		Data []billing.ChargeView `json:"data"`
	}
	if got := e.JSON("GET", "/api/billing/charges?region="+region.ID, w.tokA, nil, &charges); got != 200 || len(charges.Data) != 1 {
		t.Fatalf("A's charges: %d %+v", got, charges)
	}
	if c := charges.Data[0]; c.MarkupPercent != "15.00" || c.BaseAmount != "0.06" || c.Amount != "0.07" {
		t.Fatalf("A's charge: markup %s, base %s, amount %s", c.MarkupPercent, c.BaseAmount, c.Amount)
	}
	if _, body := w.e.Raw("GET", "/api/billing/charges", w.tokB, ""); strings.Contains(body, "acme-billed") {
		t.Fatal("B reads A's charge")
	}
}

// TestWizardOffersTheBillingType: step 1 offers pay as you go or fixed resources to a user
// holding billing.manage, refuses a type it does not know beside the field before it checks
// any cluster, and offers nothing to an admin (no billing.manage) or with the module off.
func TestWizardOffersTheBillingType(t *testing.T) {
	e := webtest.New(t, func(c *config.Config) { c.Billing = true })
	owner := e.SignedIn("owner")
	if _, body := owner.Get("/regions/new"); !strings.Contains(body, `data-testid="wizard-billing-type"`) || !strings.Contains(body, `value="fixed"`) {
		t.Fatal("step 1 does not offer the billing type")
	}
	resp, body := owner.PostForm("/regions/new/check", url.Values{"name": {"eu-9"}, "kubeconfig": {"not a kubeconfig"}, "billing_type": {"monthly"}}, true)
	if resp.StatusCode != 422 || !strings.Contains(body, `data-testid="error-billing_type"`) {
		t.Fatalf("an unknown billing type: %d", resp.StatusCode)
	}
	if _, body := e.SignedIn("admin").Get("/regions/new"); strings.Contains(body, "wizard-billing-type") {
		t.Fatal("step 1 offers the billing type to an admin, who lacks billing.manage")
	}
	off := webtest.New(t, nil)
	if _, body := off.SignedIn("owner").Get("/regions/new"); strings.Contains(body, "wizard-billing-type") {
		t.Fatal("step 1 offers the billing type with the module off")
	}
}

// reporting is the regions an agent reports for, as its connection reads them.
func reporting(t *testing.T, e *webtest.Env, ids ...string) []store.AgentRegion {
	t.Helper()
	var out []store.AgentRegion
	for _, id := range ids {
		r, err := e.Store.RegionByID(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, store.AgentRegion{ID: r.ID, Name: r.Name, ClusterKey: r.ClusterKey, Status: r.Status})
	}
	return out
}
