package e2e

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"runr.dev/console/ops/billing"
	"runr.dev/console/store"
)

// The Billing module in the browser (RUNR_BILLING=on): a region's Billing tab refuses a
// price that is no number beside its field and changes nothing, becomes a fixed region with
// its allocation and this month's fixed charge; Settings → Billing lists it under Regions &
// prices, takes a webhook with its secret (never shown again) and sends a signed test
// event to a receiver on loopback, shown delivered in the delivery log. Both pages pass the
// accessibility check in both themes.
func TestBilling(t *testing.T) {
	c := startConsole(t, "RUNR_BILLING=on")
	ctx := context.Background()
	r := &store.Region{Name: "e2e-bill", Kubeconfig: "not used by this test", RedisMode: store.RedisNone}
	if err := c.Store.CreateRegion(ctx, r); err != nil {
		t.Fatal(err)
	}
	const secret = "whsec-e2e-browser-0123"
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

	b := newBrowser(t, c.URL)
	b.login(ownerEmail, ownerPassword)
	b.open("/regions/"+r.ID, "[data-testid=tab-billing]")
	b.click("[data-testid=tab-billing]")
	b.visible("[data-testid=billing-tab]", shortWait)
	if got := b.text("[data-testid=billing-summary] h2"); got != "Pay as you go" {
		b.fatalf("a new region is billed %q", got)
	}

	// A price that is no number: refused beside its field, kept in the form, nothing saved.
	b.setValue("#f-vcpu_hour", "four cents")
	b.submit("[data-testid=save-billing]")
	b.visible("[data-testid=error-vcpu_hour]", shortWait)
	b.expectDescribedBy("#f-vcpu_hour", "err-vcpu_hour")
	if b.value("#f-vcpu_hour") != "four cents" {
		b.fatalf("the refused price is not kept in the form: %q", b.value("#f-vcpu_hour"))
	}
	var rows int
	if err := c.Store.DB.Get(&rows, `SELECT count(*) FROM region_billing`); err != nil || rows != 0 {
		t.Fatalf("a refused form stored billing: %d, %v", rows, err)
	}

	// Fixed resources: the allocation and this month's fixed charge.
	b.setValue("#f-type", "fixed")
	b.setValue("#f-vcpu_hour", "0.04")
	b.fill("#f-fixed_price", "250", "#f-allocation_cpu_m", "2000", "#f-allocation_memory_mi", "4096")
	b.submit("[data-testid=save-billing]")
	b.visible("[data-testid=billing-allocation]", shortWait)
	if got := b.text("[data-testid=billing-allocation]"); got != "2000m CPU, 4096 MiB, 0 GPU(s)" {
		b.fatalf("allocation %q", got)
	}
	if got := b.text("[data-testid=billing-total]"); got != "250.00 EUR" {
		b.fatalf("this period's total %q", got)
	}
	if b.count("[data-testid=charge-row]") != 1 {
		b.fatalf("one charge (the allocation), got %d", b.count("[data-testid=charge-row]"))
	}
	for _, scheme := range []string{"", "dark"} {
		b.colorScheme(scheme)
		b.checkAccessible("billing tab " + scheme)
	}
	b.colorScheme("")

	// Settings → Billing: the region's prices, the webhook, a signed test event.
	b.open("/billing", "[data-testid=billing-regions]")
	if got := b.text("[data-testid=region-price-row]"); !strings.Contains(got, "e2e-bill") || !strings.Contains(got, "250.00 per month") {
		b.fatalf("Regions & prices: %q", got)
	}
	b.fill("#f-webhook_url", recv.URL, "#f-webhook_secret", secret)
	b.submit("[data-testid=save-billing-settings]")
	b.visible("[data-testid=send-test-event]", shortWait)
	if strings.Contains(b.text("main"), secret) || b.value("#f-webhook_secret") != "" {
		b.fatalf("the page shows the webhook secret")
	}
	b.submit("[data-testid=send-test-event]")
	b.visible("[data-testid=event-row]", shortWait)
	if got := b.text("[data-testid=event-row]"); !strings.Contains(got, "test") || !strings.Contains(got, "delivered") {
		b.fatalf("the newest event of the delivery log: %q", got)
	}
	mu.Lock()
	got := strings.Join(received, ",")
	mu.Unlock()
	// The allocation's charge.created came before the webhook was set: kept, not sent.
	if got != "test" {
		t.Fatalf("the receiver verified %q, want the test event", got)
	}
	for _, scheme := range []string{"", "dark"} {
		b.colorScheme(scheme)
		b.checkAccessible("billing settings " + scheme)
	}
}

// Offers in the browser (Tenancy and Billing on): the platform's owner assigns a shared
// platform region to acme on the Tenants page, which offers it; acme's owner does not see
// the region yet, answers the offer on Settings → Billing (a markup that is no number is
// refused beside the field), accepts with 15 %, and then finds the region in its list.
func TestBillingOffers(t *testing.T) {
	c := startConsole(t, "RUNR_TENANCY=on", "RUNR_BILLING=on")
	c.run("user", "create", "--tenant", "acme", "--email", "owner@acme.test", "--role", "owner", "--password", "acme owner password")
	ctx := context.Background()
	// A shared region: no quotas to fit, so no cluster is needed to accept.
	r := &store.Region{Name: "shared-eu", Kubeconfig: "not used by this test", RedisMode: store.RedisNone, Mode: store.RegionShared}
	if err := c.Store.CreateRegion(ctx, r); err != nil {
		t.Fatal(err)
	}

	b := newBrowser(t, c.URL)
	b.login(ownerEmail, ownerPassword)
	b.open("/tenants", "[data-testid=tenant-card]")
	form := `[data-tenant=acme] [data-testid=assign-region]`
	b.setValue(form+" select", r.ID)
	b.submit(form + ` [data-testid=assign-submit]`)
	b.visible("[data-testid=flash]", shortWait)
	if got := b.text("[data-testid=flash]"); !strings.Contains(got, "offered to acme") {
		b.fatalf("the assignment's flash: %q", got)
	}

	tb := newBrowser(t, c.URL)
	tb.login("owner@acme.test", "acme owner password")
	tb.open("/regions", "main")
	if tb.count(`[data-testid=assigned-region][data-region=shared-eu]`) != 0 {
		tb.fatalf("acme sees shared-eu before accepting the offer")
	}
	tb.open("/billing", "[data-testid=offer-row]")
	markup := `[data-testid=offer-row] input[name=markup_percent]`
	tb.setValue(markup, "a lot")
	tb.submit("[data-testid=accept-offer]")
	tb.visible("[data-testid=error-markup_percent]", shortWait)
	if got := tb.text("[data-testid=offer-row]"); !strings.Contains(got, "offered") {
		tb.fatalf("a refused markup changed the offer: %q", got)
	}
	tb.setValue(markup, "15")
	tb.submit("[data-testid=accept-offer]")
	tb.visible("[data-testid=offer-markup]", shortWait)
	if got := tb.text("[data-testid=offer-row]"); !strings.Contains(got, "accepted") || !strings.Contains(got, "markup 15.00 %") {
		tb.fatalf("the accepted offer: %q", got)
	}
	for _, scheme := range []string{"", "dark"} {
		tb.colorScheme(scheme)
		tb.checkAccessible("billing offers " + scheme)
	}
	tb.colorScheme("")
	tb.open("/regions", `[data-testid=assigned-region][data-region=shared-eu]`)
	b.open("/billing", "[data-testid=offer-row]")
	if got := b.text("[data-testid=offer-row]"); !strings.Contains(got, "shared-eu to acme") || !strings.Contains(got, "accepted") {
		b.fatalf("the platform's view of the offer: %q", got)
	}
}
