package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// apiCall sends a JSON request with a bearer token and decodes the answer into out.
func apiCall(t *testing.T, c *console, method, path, tok string, body, out any) int {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, err := http.NewRequest(method, c.URL+path, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		_ = json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode
}

// Flow: the Tenants page of a platform owner (a tenant made with `runr user create
// --tenant`, another made on the page with its first owner, a platform region assigned
// with quotas shown as bars against the region's capacity, quotas over the capacity
// refused beside their field), then the region list of a tenant's owner: its assigned
// region as a summary with its quota, nothing of the platform's other regions.
func TestTenants(t *testing.T) {
	kc := cluster(t)
	c := startConsole(t, "RUNR_TENANCY=on")
	if out := c.run("user", "create", "--tenant", "acme", "--email", "owner@acme.test", "--role", "owner", "--password", "acme owner password"); out != "" {
		t.Fatalf("runr user create --tenant printed %q", out)
	}
	tok := c.run("token", "create", "--email", ownerEmail, "--name", "e2e", "--scopes", "*")
	for _, name := range []string{"shared-eu", "platform-us"} {
		var ans struct{ Error string }
		if st := apiCall(t, c, "POST", "/api/knative-regions", tok, map[string]any{"name": name, "kubeconfig": string(kc.Kubeconfig()), "redis_mode": "none"}, &ans); st != 201 {
			t.Fatalf("create region %s: %d %s", name, st, ans.Error)
		}
	}

	b := newBrowser(t, c.URL)
	b.login(ownerEmail, ownerPassword)
	b.open("/tenants", "[data-testid=tenant-card]")
	if got := b.text("[data-testid=tenant-name]"); got != "acme" {
		t.Fatalf("the tenant made by the CLI: %q", got)
	}
	if got := b.text("[data-testid=tenant-user]"); !strings.Contains(got, "owner@acme.test") {
		t.Fatalf("acme's first owner: %q", got)
	}

	// A tenant made on the page, and its first owner (the password is shown once).
	b.typeInto("[data-testid=create-tenant] #f-name", "globex")
	b.submit("[data-testid=create-tenant-submit]")
	b.visible(`[data-tenant=globex]`, shortWait)
	b.typeInto(`[data-tenant=globex] [data-testid=add-tenant-user] input[name=email]`, "owner@globex.test")
	b.submit(`[data-tenant=globex] [data-testid=add-tenant-user] button[type=submit]`)
	b.visible("[data-testid=generated-password]", shortWait)
	if got := b.text("[data-testid=generated-password]"); !strings.Contains(got, "owner@globex.test") {
		t.Fatalf("generated password: %q", got)
	}

	// shared-eu to acme with 2 CPU and 4 GiB: the bars measure them against the capacity.
	b.open("/tenants", "[data-testid=tenant-card]")
	form := `[data-tenant=acme] [data-testid=assign-region]`
	var regionValue string
	b.eval(`(function(){var s=document.querySelector('[data-tenant=acme] [data-testid=assign-region] select');for(var o of s.options){if(o.text.indexOf("shared-eu")===0){return o.value}}return ""})()`, &regionValue)
	if regionValue == "" {
		b.fatalf("shared-eu is not offered for assignment")
	}
	b.setValue(form+" select", regionValue)
	b.typeInto(form+` input[name=cpu]`, "2")
	b.typeInto(form+` input[name=memory_gib]`, "4")
	b.submit(form + ` [data-testid=assign-submit]`)
	b.visible(`[data-tenant=acme] [data-testid=assignment][data-region=shared-eu]`, shortWait)
	bar := `[data-tenant=acme] [data-region=shared-eu] [data-testid=quota-bar][data-resource=cpu]`
	pct, _ := strconv.Atoi(b.attr(bar, "data-percent"))
	if pct <= 0 || pct >= 100 || !strings.Contains(b.text(bar), "2 CPU of") {
		b.fatalf("acme's CPU bar: %d%% %q", pct, b.text(bar))
	}
	b.shot("assigned")

	// Quotas over the capacity come back with the message beside the field.
	form = `[data-tenant=globex] [data-testid=assign-region]`
	b.setValue(form+" select", regionValue)
	b.typeInto(form+` input[name=cpu]`, "10000")
	b.typeInto(form+` input[name=memory_gib]`, "1")
	b.submit(form + ` [data-testid=assign-submit]`)
	b.visible(`[data-tenant=globex] [data-testid=error-cpu]`, shortWait)
	if got := b.text(`[data-tenant=globex] [data-testid=error-cpu]`); !strings.Contains(got, "is free on this region") {
		t.Fatalf("over the capacity: %q", got)
	}
	if b.count(`[data-tenant=globex] [data-testid=assignment]`) != 0 {
		t.Fatal("a refused assignment was made")
	}
	b.open("/tenants", "[data-testid=tenant-card]")
	b.checkFeel("tenants")
	b.shot("tenants")

	// acme's owner: its regions, the assigned one as a summary with its quota.
	tb := newBrowser(t, c.URL)
	tb.login("owner@acme.test", "acme owner password")
	tb.visible(`[data-testid=assigned-region][data-region=shared-eu]`, shortWait)
	if got := tb.text(`[data-testid=tenant]`); !strings.Contains(got, "acme") {
		t.Fatalf("the account menu must name the tenant: %q", got)
	}
	if got := tb.text(`[data-region=shared-eu] [data-testid=quota-bar][data-resource=cpu]`); !strings.Contains(got, "of 2 CPU used") {
		t.Fatalf("acme's quota on shared-eu: %q", got)
	}
	if got := tb.text(`[data-region=shared-eu] [data-testid=assigned-mode]`); got != "managed" {
		t.Fatalf("mode: %q", got)
	}
	var body string
	tb.eval(`document.body.innerText`, &body)
	if strings.Contains(body, "platform-us") || strings.Contains(body, "globex") || tb.count(`a[href="/tenants"]`) != 0 {
		t.Fatalf("acme's owner sees what is not acme's:\n%s", short2(body, 2000))
	}
	tb.checkFeel("tenant-regions")
	tb.shot("tenant-regions")
	tb.submit(`[data-testid=assigned-region][data-region=shared-eu] a`)
	tb.visible(`[data-testid=assigned-region]`, shortWait)
	if tb.count(`[role=tablist]`) != 0 || tb.count(`[data-testid=health]`) != 0 {
		tb.fatalf("the assigned region's page shows more than its summary")
	}
	tb.shot("tenant-region-summary")
}
