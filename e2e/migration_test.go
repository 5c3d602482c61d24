package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// api calls the console's JSON API with a bearer token.
func api(t *testing.T, c *console, token, method, path string, body any, out any) int {
	t.Helper()
	var rd bytes.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = *bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, c.URL+path, &rd)
	req.Header.Set("Authorization", "Bearer "+token)
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

var countdownRe = regexp.MustCompile(`^(\d+) h (\d+) min (\d+) s$`)

func countdownSeconds(t *testing.T, s string) int {
	m := countdownRe.FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("countdown %q is not h/min/s", s)
	}
	h, _ := strconv.Atoi(m[1])
	mi, _ := strconv.Atoi(m[2])
	se, _ := strconv.Atoi(m[3])
	return h*3600 + mi*60 + se
}

// Flow 6: while a move is in dns_check, a banner on every page counts down the 48 hours
// live; it appears and goes without a reload.
func TestMigrationBanner(t *testing.T) {
	c := startConsole(t)
	cl := cluster(t)
	token := c.run("token", "create", "--email", ownerEmail, "--name", "e2e", "--scopes", "*")
	var created struct{ Data struct{ ID string } }
	if st := api(t, c, token, "POST", "/api/knative-regions", map[string]any{"name": "e2e-move", "kubeconfig": string(cl.Kubeconfig()), "redis_mode": "none"}, &created); st != 201 {
		t.Fatalf("create region: %d", st)
	}
	id := created.Data.ID

	b := newBrowser(t, c.URL)
	b.login(ownerEmail, ownerPassword)
	b.open("/projects", "main")
	if b.count("[data-testid=migration-banner]") != 0 {
		t.Fatal("no banner without a move")
	}
	b.mark()

	// The move (to the same cluster: everything is adopted) reaches dns_check.
	var mv struct {
		JobID string `json:"job_id"`
	}
	if st := api(t, c, token, "POST", "/api/knative-regions/"+id+"/migrate", map[string]any{"kubeconfig": string(cl.Kubeconfig())}, &mv); st != 202 {
		t.Fatalf("migrate: %d", st)
	}
	b.waitJS("the banner of the move in dns_check", `(() => { const b = document.querySelector("[data-testid=migration-banner]");
		return b && b.textContent.includes("waiting for DNS") && document.querySelector("[data-testid=migration-countdown]") })()`, installWait)
	if !b.marked() {
		t.Fatal("the banner must come without a reload")
	}
	first := b.text("[data-testid=migration-countdown]")
	s1 := countdownSeconds(t, first)
	if s1 > 48*3600 || s1 < 48*3600-300 {
		t.Fatalf("the countdown starts near 48 h, shows %q", first)
	}
	time.Sleep(2500 * time.Millisecond)
	s2 := countdownSeconds(t, b.text("[data-testid=migration-countdown]"))
	if s2 >= s1 || s1-s2 > 5 {
		t.Fatalf("the countdown must tick: %d s then %d s", s1, s2)
	}
	b.shot("banner")
	// Every page shows it.
	b.open("/regions", "main")
	b.visible("[data-testid=migration-banner]", shortWait)
	b.mark()

	// Completed by hand: the banner goes, live.
	if st := api(t, c, token, "POST", "/api/knative-regions/"+id+"/complete-migration", nil, nil); st != 200 {
		t.Fatalf("complete: %d", st)
	}
	b.waitJS("the banner to go", `document.querySelector("[data-testid=migration-banner]") === null`, shortWait)
	b.waitJS("the list's moving badge to go", `document.querySelector("[data-testid=region-row]") && document.querySelector("[data-testid=moving]") === null`, shortWait)
	if !b.marked() {
		t.Fatal("the banner and the moving badge must go without a reload")
	}
	b.shot("final")

	// A second move, rolled back from the Migration tab: the tab follows the rollback job
	// to its end (no 'waiting for DNS', no Complete or Rollback left), and the list shows
	// no move (issue 34: the tab kept dns_check and its buttons, the list 'moving: rolled
	// back', until a reload).
	if st := api(t, c, token, "POST", "/api/knative-regions/"+id+"/migrate", map[string]any{"kubeconfig": string(cl.Kubeconfig())}, &mv); st != 202 {
		t.Fatalf("migrate again: %d", st)
	}
	b.open("/regions/"+id+"?tab=migration", "[data-testid=migration]")
	b.waitJS("the move waiting for DNS on the tab", `document.querySelector("[data-testid=rollback-migration]")`, installWait)
	b.mark()
	b.click("[data-testid=rollback-migration]")
	b.waitJS("the tab after the rollback", `(() => { const s = document.querySelector("[data-testid=migration-status] [data-state]");
		return s && s.dataset.state === "rolled_back" && !document.querySelector("[data-testid=rollback-migration]") && !document.querySelector("[data-testid=complete-migration]") })()`, installWait)
	b.shot("rolled-back")
	b.open("/regions", "[data-testid=region-row]")
	if b.count("[data-testid=moving]") != 0 {
		t.Fatalf("a rolled-back move leaves no moving badge in the list: %q", b.text("[data-testid=moving]"))
	}
}
