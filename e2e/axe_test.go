package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"runr.dev/console/views"
)

// axeSource is axe-core's script from the project's node_modules (package.json pins it;
// `make test` installs it with the CSS tools).
var axeSource = sync.OnceValues(func() (string, error) {
	b, err := os.ReadFile(filepath.Join("..", "node_modules", "axe-core", "axe.min.js"))
	if err != nil {
		return "", fmt.Errorf("read axe-core (run `make css`, which installs node_modules): %w", err)
	}
	return string(b), nil
})

// axeViolation is one rule axe-core found broken, with the elements that break it.
type axeViolation struct {
	ID     string
	Impact string
	Help   string
	Nodes  []string
}

// checkAccessible runs axe-core's WCAG 2 A and AA rules over the current page and fails
// on any serious or critical violation.
func (b *browser) checkAccessible(page string) {
	b.t.Helper()
	src, err := axeSource()
	if err != nil {
		b.fatalf("%s: %v", page, err)
	}
	var loaded bool
	b.eval(`typeof window.axe !== "undefined"`, &loaded)
	if !loaded {
		b.eval(src+"\n;true", nil)
	}
	var found []axeViolation
	b.eval(`axe.run(document, {runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]}, resultTypes: ["violations"]}).then(function(r){
		return r.violations.filter(function(v){ return v.impact === "serious" || v.impact === "critical"; }).map(function(v){
			return {ID: v.id, Impact: v.impact, Help: v.help, Nodes: v.nodes.slice(0, 4).map(function(n){
				return n.target.join(" ") + " — " + (n.failureSummary || "").replace(/\s+/g, " ").slice(0, 200);
			})};
		});
	})`, &found)
	if len(found) == 0 {
		return
	}
	var lines []string
	for _, v := range found {
		lines = append(lines, fmt.Sprintf("%s (%s): %s", v.ID, v.Impact, v.Help))
		for _, n := range v.Nodes {
			lines = append(lines, "    "+n)
		}
	}
	b.shot(page + "-axe")
	b.fatalf("%s: %d serious accessibility violation(s):\n%s", page, len(found), strings.Join(lines, "\n"))
}

// pagesCheckedElsewhere are page routes whose accessibility another test checks:
// signing in (TestLogin), the tenants page, which needs tenancy on (TestTenants), and
// Settings → Billing, which needs billing on (TestBilling).
var pagesCheckedElsewhere = map[string]bool{"/login": true, "/tenants": true, "/billing": true}

// everyPage runs the phone's width check (390 px) and the accessibility check, in the
// light and the dark theme, over every page of the console the owner can open with one
// region installed: every route of the routes table that answers a page (read from web/'s
// source, so a new page without the check fails here), every tab of the region, a job and
// the setup's page.
func everyPage(t *testing.T, b *browser, c *console, regionID string) {
	ctx := context.Background()
	jobs, err := c.Store.ListJobs(ctx, regionID, 50)
	if err != nil || len(jobs) == 0 {
		t.Fatalf("the region's jobs: %v (%d)", err, len(jobs))
	}
	setupToken := ""
	for _, j := range jobs {
		if s, err := c.Store.SetupByJob(ctx, j.ID); err == nil {
			setupToken = s.Token
		}
	}
	if setupToken == "" {
		t.Fatal("the region has no setup to show")
	}
	concrete := map[string]string{
		"/account": "/account", "/users": "/users", "/tokens": "/tokens", "/projects": "/projects",
		"/platform": "/platform", "/jobs": "/jobs", "/regions": "/regions", "/regions/new": "/regions/new",
		"/regions/:id": "/regions/" + regionID, "/regions/:id/wizard": "/regions/" + regionID + "/wizard",
		"/regions/:id/remove": "/regions/" + regionID + "/remove", "/jobs/:id": "/jobs/" + jobs[0].ID,
		"/regions/setups/:token": "/regions/setups/" + setupToken,
		"/regions/:id/tabs/:tab": "", // every tab below
	}
	for _, route := range pageRoutes(t) {
		if _, ok := concrete[route]; !ok && !pagesCheckedElsewhere[route] {
			t.Errorf("page route %s has no accessibility check: add it to everyPage", route)
		}
	}
	paths := []string{}
	for _, p := range concrete {
		if p != "" {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	for _, tab := range views.RegionTabs {
		paths = append(paths, "/regions/"+regionID+"?tab="+tab.Key)
	}
	paths = append(paths, "/regions/no-such-region") // the error page
	for _, p := range paths {
		b.open(p, "main")
		name := fileName(p)
		b.checkNarrow(name)
		if strings.HasSuffix(p, "/wizard") || p == "/regions/new" {
			b.checkCompactWizard(name)
		}
		if strings.HasSuffix(p, "?tab=workers") {
			b.checkPhoneTabs(name, "Workers")
		}
		b.checkAccessible(name)
		b.colorScheme("dark")
		b.checkAccessible(name + " (dark)")
		b.colorScheme("")
	}
}

// pageRoutes are the GET routes of web/'s routes table that answer an HTML page.
func pageRoutes(t *testing.T) []string {
	files, err := filepath.Glob(filepath.Join("..", "web", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	route := regexp.MustCompile(`Method: get, Path: "(/[^"]*)"`)
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range route.FindAllStringSubmatch(string(src), -1) {
			p := m[1]
			if p == "/" || p == "/healthz" || p == "/readyz" || strings.HasPrefix(p, "/api/") || strings.HasPrefix(p, "/ws/") {
				continue
			}
			out = append(out, p)
		}
	}
	if len(out) < 10 {
		t.Fatalf("found only %d page routes in web/: has the routes table's shape changed?", len(out))
	}
	return out
}

// checkCompactWizard fails unless the wizard's header shows one step on a phone (the
// open one, "step N of 7"), and all seven on a wide screen.
func (b *browser) checkCompactWizard(page string) {
	b.t.Helper()
	visible := func() int {
		var n int
		b.eval(`Array.from(document.querySelectorAll("[data-testid=wizard-step]")).filter(e => e.getClientRects().length > 0).length`, &n)
		return n
	}
	b.viewport(390, 844)
	phone := visible()
	b.viewport(1280, 900)
	if wide := visible(); phone > 1 || wide != 7 {
		b.fatalf("%s: the wizard's header shows %d steps on a phone (want at most 1) and %d on a wide screen (want 7)", page, phone, wide)
	}
}

// checkPhoneTabs fails unless a region page's tabs fold into one menu naming the open
// tab (title) on a phone, and show as tabs on a wide screen.
func (b *browser) checkPhoneTabs(page, title string) {
	b.t.Helper()
	var phone, wide struct {
		Tabs, Menu bool
		Summary    string
	}
	look := `(() => { const shown = s => { const e = document.querySelector(s); return !!e && e.getClientRects().length > 0 };
		const m = document.querySelector("[data-testid=tab-menu] summary");
		return {Tabs: shown("#region-tabs"), Menu: shown("[data-testid=tab-menu]"), Summary: m ? m.textContent : ""} })()`
	b.viewport(390, 844)
	b.eval(look, &phone)
	b.viewport(1280, 900)
	b.eval(look, &wide)
	if phone.Tabs || !phone.Menu || !strings.Contains(phone.Summary, title) || !wide.Tabs || wide.Menu {
		b.fatalf("%s: on a phone one menu naming %s (got tabs %v, menu %v, %q); on a wide screen the tabs (got tabs %v, menu %v)",
			page, title, phone.Tabs, phone.Menu, phone.Summary, wide.Tabs, wide.Menu)
	}
}
