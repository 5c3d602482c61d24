package billing_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"runr.dev/console/agent"
	"runr.dev/console/config"
	"runr.dev/console/ops/billing"
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/nodes"
	"runr.dev/console/ops/tenancy"
	"runr.dev/console/problem"
	"runr.dev/console/store"
	"runr.dev/console/store/billingdb"
	"runr.dev/console/store/storetest"
)

var actor = kit.Actor{Email: "ada@example.com"}

// clock is a settable clock for the module.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// module is the Billing module on a fresh database with one region, eu-1.
func module(t *testing.T) (*billing.Service, *store.Region, *clock) {
	t.Helper()
	st := storetest.New(t)
	cfg := &config.Config{InstallTimeout: time.Minute, Billing: true, BillingInterval: time.Second}
	k := kit.New(st, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	s := billing.New(k, tenancy.New(k, nodes.New(k)))
	c := &clock{t: time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)}
	s.Now = c.now
	r := &store.Region{Name: "eu-1", Kubeconfig: "not used", RedisMode: store.RedisNone}
	if err := st.CreateRegion(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return s, r, c
}

// project creates a project in r in a state, asking cpu millicores and mem MiB.
func project(t *testing.T, st *store.Store, r *store.Region, name string, state store.ProjectState, cpu, mem int) *store.Project {
	t.Helper()
	ctx := context.Background()
	p := &store.Project{Name: name, RegionID: &r.ID, Image: "reg/" + name + ":1", CPUm: cpu, MemoryMi: mem}
	if err := st.CreateProject(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := st.SetProjectState(ctx, p.ID, state, "", p.Image); err != nil {
		t.Fatal(err)
	}
	p, err := st.ProjectByID(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func ptr[T any](v T) *T { return &v }

func usage(p *store.Project, cpu int64, memMi int64) agent.ProjectUsage {
	return agent.ProjectUsage{Project: p.ID, Namespace: "eu-1", CPURequested: cpu, MemRequested: memMi << 20, Pods: 1}
}

func TestMeteringCountsEveryMinuteOnceAndClosedBillsNeverChange(t *testing.T) {
	s, r, c := module(t)
	ctx := context.Background()
	if _, err := s.SaveRegion(ctx, actor, r, billing.RegionInput{VCPUHour: ptr("0.04"), MemoryGiBHour: ptr("0.006")}); err != nil {
		t.Fatal(err)
	}
	web := project(t, s.Store, r, "web", store.ProjectRunning, 500, 512)
	stopped := project(t, s.Store, r, "old", store.ProjectStopped, 500, 512)
	other := &store.Region{ID: "elsewhere"}
	at := c.now()
	report := []agent.ProjectUsage{usage(web, 500, 512), usage(stopped, 500, 512), {Project: "gone", CPURequested: 9}}
	// The same minute twice (a repeated report), a later second of it, an earlier minute
	// that arrives late, and a report for a region the project is not in.
	for _, when := range []time.Time{at, at, at.Add(30 * time.Second), at.Add(-5 * time.Minute)} {
		if err := s.Meter(ctx, []store.AgentRegion{{ID: r.ID, Name: r.Name}}, when, report); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Meter(ctx, []store.AgentRegion{{ID: other.ID, Name: other.Name}}, at.Add(time.Minute), report); err != nil {
		t.Fatal(err)
	}
	cs, err := s.Charges(ctx, "", billing.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].ProjectID != web.ID || cs[0].Usage != (billing.Usage{CPUMinutesM: 1000, MemoryMinutesMi: 1024}) {
		t.Fatalf("two minutes of web only, got %+v", cs)
	}
	evs, err := s.Events(ctx, "", "", billing.Query{})
	if err != nil || len(evs) != 1 || evs[0].Type != "charge.created" || evs[0].Status != billingdb.EventKept {
		t.Fatalf("one kept charge.created event, got %+v, %v", evs, err)
	}

	// A month later the November bill closes: 1000 millicore-minutes at 0.04 and 1 GiB
	// for 2 minutes at 0.006 are 0.000667 + 0.0002: rounded once, 0.00.
	c.set(time.Date(2026, 12, 1, 0, 0, 30, 0, time.UTC))
	if err := s.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	bills, err := s.Bills(ctx, "", billing.Query{Period: "2026-11"})
	if err != nil || len(bills) != 1 {
		t.Fatalf("one bill, got %+v, %v", bills, err)
	}
	b := bills[0]
	if len(b.Lines.V) != 1 || b.Lines.V[0].RegionName != "eu-1" || b.Lines.V[0].ProjectName != "web" || b.Currency != "EUR" || b.Total != "0.00" {
		t.Fatalf("bill %+v", b)
	}
	// A late minute of November changes nothing billed; a second close does nothing.
	if err := s.Meter(ctx, []store.AgentRegion{{ID: r.ID, Name: r.Name}}, at.Add(time.Hour), report); err != nil {
		t.Fatal(err)
	}
	if err := s.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Store.DB.ExecContext(ctx, `UPDATE bills SET total_minor = 1`); err == nil {
		t.Fatal("a closed bill was changed")
	}
	if err := s.Store.DeleteRegion(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	again, err := s.Bill(ctx, "", b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if again.TotalMinor != b.TotalMinor || len(again.Lines.V) != 1 || again.Lines.V[0] != b.Lines.V[0] || again.Lines.V[0].RegionName != "eu-1" {
		t.Fatalf("the closed bill changed: %+v, was %+v", again, b)
	}
	cs, _ = s.Charges(ctx, "", billing.Query{Period: "2026-11"})
	if len(cs) != 1 || cs[0].Usage.CPUMinutesM != 1000 || cs[0].BillID == nil {
		t.Fatalf("the billed charge changed: %+v", cs)
	}
	evs, _ = s.Events(ctx, "", "", billing.Query{})
	if len(evs) != 2 || evs[0].Type != "bill.closed" {
		t.Fatalf("a bill.closed event, got %+v", evs)
	}
}

func TestFixedRegionsHoldDeploysToTheirAllocation(t *testing.T) {
	s, r, c := module(t)
	ctx := context.Background()
	held := project(t, s.Store, r, "held", store.ProjectRunning, 600, 512)
	next := project(t, s.Store, r, "next", store.ProjectNone, 500, 256)

	before, err := s.Region(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.SaveRegion(ctx, actor, r, billing.RegionInput{Type: ptr("fixed"), FixedPrice: ptr("250"), AllocCPUm: ptr(int64(-5)), AllocMemoryMi: ptr(int64(-1))})
	var inv *problem.Invalid
	if !errors.As(err, &inv) || inv.Fields["allocation_cpu_m"] == "" || inv.Fields["allocation_memory_mi"] == "" {
		t.Fatalf("negative allocations are refused: %v", err)
	}
	if after, _ := s.Region(ctx, r); after.Type != before.Type || after.Prices != before.Prices {
		t.Fatalf("a refusal changed the region's billing: %+v", after)
	}

	v, err := s.SaveRegion(ctx, actor, r, billing.RegionInput{Type: ptr("fixed"), FixedPrice: ptr("250"), AllocCPUm: ptr(int64(1000)), AllocMemoryMi: ptr(int64(1024))})
	if err != nil {
		t.Fatal(err)
	}
	if v.Type != "fixed" || v.Held.CPUm != 600 || len(v.Charges) != 1 || v.Charges[0].Amount != "250.00" || v.Charges[0].ProjectID != "" {
		t.Fatalf("the fixed region's view: %+v", v)
	}
	var rf *problem.Refused
	if err := s.Admit(ctx, r, next); !errors.As(err, &rf) || !strings.Contains(rf.Reason, "this deploy asks 500m") || !strings.Contains(rf.Reason, "400m free") {
		t.Fatalf("500m does not fit the 400m left: %v", err)
	}
	next.CPUm = 400
	if err := s.Admit(ctx, r, next); err != nil {
		t.Fatalf("400m fits: %v", err)
	}
	// The project that holds the allocation may deploy again (it is not counted twice).
	if err := s.Admit(ctx, r, held); err != nil {
		t.Fatal(err)
	}
	// The allocation charge is opened once per period, whatever runs.
	c.set(c.now().Add(time.Hour))
	if err := s.OpenAllocations(ctx, c.now()); err != nil {
		t.Fatal(err)
	}
	if cs, _ := s.Charges(ctx, "", billing.Query{}); len(cs) != 1 {
		t.Fatalf("one allocation charge, got %d", len(cs))
	}
}

func TestEventsAreSignedRetriedAndDeadLettered(t *testing.T) {
	s, r, c := module(t)
	ctx := context.Background()
	const secret = "whsec-0123456789abcdef"
	var mu sync.Mutex
	var got []string
	fail := true
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		mu.Lock()
		defer mu.Unlock()
		if err := billing.Verify(secret, req.Header.Get(billing.SignatureHeader), body, c.now(), 5*time.Minute); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		if fail {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		got = append(got, req.Header.Get("Runr-Event-Id"))
	}))
	defer recv.Close()

	if _, err := s.SendTestEvent(ctx, actor); err == nil {
		t.Fatal("a test event without a webhook URL was sent")
	}
	_, err := s.SaveSettings(ctx, actor, billing.SettingsInput{WebhookURL: ptr(recv.URL)})
	var inv *problem.Invalid
	if !errors.As(err, &inv) || inv.Fields["webhook_secret"] == "" {
		t.Fatalf("a webhook without a secret is refused: %v", err)
	}
	if v, err := s.SaveSettings(ctx, actor, billing.SettingsInput{WebhookURL: ptr(recv.URL), WebhookSecret: ptr(secret)}); err != nil || !v.WebhookSecretSet {
		t.Fatalf("settings: %+v, %v", v, err)
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	ev, err := s.SendTestEvent(ctx, actor)
	if err != nil || ev.Status != billingdb.EventDelivered || len(got) != 1 || got[0] != ev.ID {
		t.Fatalf("the test event was delivered, signed: %+v, %v, received %v", ev, err, got)
	}

	// A failing receiver: tried again after 30 s, 60 s, then dead after the third attempt.
	mu.Lock()
	fail = true
	mu.Unlock()
	s.MaxAttempts = 3
	web := project(t, s.Store, r, "web", store.ProjectRunning, 100, 128)
	if err := s.Meter(ctx, []store.AgentRegion{{ID: r.ID, Name: r.Name}}, c.now(), []agent.ProjectUsage{usage(web, 100, 128)}); err != nil {
		t.Fatal(err)
	}
	for i, wait := range []time.Duration{0, 29 * time.Second, time.Second, 59 * time.Second, time.Second} {
		c.set(c.now().Add(wait))
		if err := s.DeliverDue(ctx, c.now()); err != nil {
			t.Fatal(err)
		}
		evs, _ := s.Events(ctx, "", "", billing.Query{PerPage: 1})
		wantAttempts := []int{1, 1, 2, 2, 3}[i]
		if evs[0].Attempts != wantAttempts {
			t.Fatalf("after %d rounds: %d attempts, want %d (%+v)", i+1, evs[0].Attempts, wantAttempts, evs[0])
		}
	}
	dead, _ := s.Events(ctx, "", billingdb.EventDead, billing.Query{})
	if len(dead) != 1 || dead[0].Type != "charge.created" || dead[0].LastError == "" {
		t.Fatalf("the charge.created event is dead with its reason: %+v", dead)
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	if err := s.Redeliver(ctx, actor, dead[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := s.DeliverDue(ctx, c.now()); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1] != dead[0].ID {
		t.Fatalf("the redelivered event arrived: %v", got)
	}
	if err := s.Redeliver(ctx, actor, dead[0].ID); err == nil {
		t.Fatal("a delivered event was put back in the queue")
	}
}

// TestTheChartsWebhook: a webhook the chart sets (billing.webhookUrl) is the one events go
// to, and Settings cannot change it; the currency stays editable.
func TestTheChartsWebhook(t *testing.T) {
	s, _, c := module(t)
	ctx := context.Background()
	const secret = "whsec-from-the-chart-01"
	var got []string
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if billing.Verify(secret, req.Header.Get(billing.SignatureHeader), body, c.now(), time.Minute) == nil {
			got = append(got, req.Header.Get("Runr-Event-Type"))
		}
	}))
	defer recv.Close()
	s.Cfg.BillingWebhookURL, s.Cfg.BillingWebhookSecret = recv.URL, secret

	v, err := s.Settings(ctx)
	if err != nil || v.WebhookURL != recv.URL || !v.WebhookFromChart || !v.WebhookSecretSet {
		t.Fatalf("settings: %+v, %v", v, err)
	}
	_, err = s.SaveSettings(ctx, actor, billing.SettingsInput{WebhookURL: ptr("https://elsewhere.example.test/hook")})
	var inv *problem.Invalid
	if !errors.As(err, &inv) || inv.Fields["webhook_url"] == "" {
		t.Fatalf("the chart's webhook was changed: %v", err)
	}
	if v, err := s.SaveSettings(ctx, actor, billing.SettingsInput{Currency: ptr("usd"), WebhookURL: ptr(recv.URL)}); err != nil || v.Currency != "USD" {
		t.Fatalf("the currency: %+v, %v", v, err)
	}
	if ev, err := s.SendTestEvent(ctx, actor); err != nil || ev.Status != billingdb.EventDelivered || len(got) != 1 {
		t.Fatalf("the test event went to the chart's webhook: %+v, %v, %v", ev, err, got)
	}
	stored, err := s.DB.Settings(ctx)
	if err != nil || stored.WebhookURL != "" || stored.WebhookSecret != "" {
		t.Fatalf("the chart's webhook was stored: %+v, %v", stored, err)
	}
}
