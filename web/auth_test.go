package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"runr.dev/console/config"
	"runr.dev/console/perm"
	"runr.dev/console/store"
	"runr.dev/console/web"
	"runr.dev/console/web/webtest"
)

// principal is one column of the authorisation matrix.
type principal struct {
	name  string
	token string
	perms map[string]bool // nil: anonymous
}

var paramRe = regexp.MustCompile(`:[a-z_]+`)

// TestAuthorisationMatrix walks every route of the table with every kind of caller and
// checks 401, 403, or neither (and never a 500).
func TestAuthorisationMatrix(t *testing.T) { authorisationMatrix(t, nil) }

// TestAuthorisationMatrixTenancy walks the routes table of a console with the Tenancy
// module on (its routes included) with the platform's roles.
func TestAuthorisationMatrixTenancy(t *testing.T) {
	authorisationMatrix(t, func(c *config.Config) { c.Tenancy = true })
}

func authorisationMatrix(t *testing.T, tweak func(*config.Config)) {
	e := webtest.New(t, tweak)
	var ps []principal
	ps = append(ps, principal{name: "anonymous"})
	for _, role := range store.Roles {
		_, tok := e.User(role)
		ps = append(ps, principal{name: role, token: tok, perms: perm.Effective(role, nil)})
	}
	// An owner's token scoped to one permission, and one scoped to another.
	_, scoped := e.User("owner", perm.JobsView)
	ps = append(ps, principal{name: "owner-token-jobs.view", token: scoped, perms: perm.Effective("owner", []string{perm.JobsView})})
	_, scoped2 := e.User("owner", perm.RegionsView, perm.RegionsManage)
	ps = append(ps, principal{name: "owner-token-regions", token: scoped2, perms: perm.Effective("owner", []string{perm.RegionsView, perm.RegionsManage})})

	for _, r := range e.S.Routes() {
		for _, p := range ps {
			r, p := r, p
			t.Run(r.Method+" "+r.Path+" as "+p.name, func(t *testing.T) {
				path := paramRe.ReplaceAllString(r.Path, "01NOTANID0000000000000000")
				body := ""
				if r.Method != http.MethodGet {
					body = "{}"
				}
				resp := e.Do(webtest.Req(r.Method, path, p.token, body))
				raw, _ := io.ReadAll(resp.Body)
				got := resp.StatusCode
				if got >= 500 {
					t.Fatalf("status %d (never a 500): %s", got, raw)
				}
				switch {
				case r.Agent:
					// The test host is not an internal host (400); a user's token is no agent token (401).
					if got != 400 && got != 401 {
						t.Fatalf("got %d, want 400 or 401", got)
					}
				case r.Perm == web.Anonymous && r.Method != http.MethodGet && p.perms == nil:
					if got != 403 {
						t.Fatalf("a form post without the CSRF token must get 403, got %d", got)
					}
				case r.Public || r.Perm == web.Anonymous:
					if got == 401 || got == 403 {
						t.Fatalf("public route answered %d", got)
					}
				case p.perms == nil:
					if strings.HasPrefix(r.Path, "/api/") || r.WebSocket {
						if got != 401 {
							t.Fatalf("anonymous: got %d, want 401", got)
						}
						var m map[string]any
						if json.Unmarshal(raw, &m) != nil || m["error"] == nil {
							t.Fatalf("401 must be JSON with error: %s", raw)
						}
					} else if got != http.StatusSeeOther {
						t.Fatalf("anonymous page: got %d, want a redirect to /login", got)
					}
				case hasAll(p.perms, need(r, p.token != "")):
					if got == 401 || got == 403 {
						t.Fatalf("allowed (%s) but got %d: %s", r.Perm, got, raw)
					}
				default:
					if got != 403 {
						t.Fatalf("lacks %s: got %d, want 403", r.Perm, got)
					}
				}
			})
		}
	}
}

func TestAPIErrors(t *testing.T) {
	e := webtest.New(t, nil)
	resp := e.Do(webtest.Req("GET", "/api/knative-regions", "", ""))
	if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("Content-Type"), "json") {
		t.Fatalf("no token: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	resp = e.Do(webtest.Req("GET", "/api/knative-regions", "runr_bogus", ""))
	if resp.StatusCode != 401 {
		t.Fatalf("bad token: %d", resp.StatusCode)
	}
	_, tok := e.User("owner")
	for _, body := range []string{"not json", `{"email": "x", "role": "pope"}`} {
		resp = e.Do(webtest.Req("POST", "/api/users", tok, body))
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 422 {
			t.Fatalf("invalid body %q: %d %s", body, resp.StatusCode, raw)
		}
	}
	resp = e.Do(webtest.Req("POST", "/api/users", tok, `{"email": "x", "role": "pope"}`))
	var m struct {
		Fields map[string]string `json:"fields"`
	}
	json.NewDecoder(resp.Body).Decode(&m)
	if m.Fields["email"] == "" || m.Fields["role"] == "" {
		t.Fatalf("field errors missing: %+v", m)
	}
	// The body limit needs a real connection (the in-memory Test refuses large bodies itself).
	base := e.Listen()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/tokens HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", tok, web.BodyLimit+10)
	status, _ := bufio.NewReader(conn).ReadString('\n')
	if !strings.Contains(status, "413") {
		t.Fatalf("oversized body: %q, want 413", status)
	}
	resp = e.Do(webtest.Req("GET", "/api/nothing-here", tok, ""))
	if resp.StatusCode != 404 {
		t.Fatalf("unknown route: %d", resp.StatusCode)
	}
}

func TestLoginCSRFThrottleLogout(t *testing.T) {
	e := webtest.New(t, nil)
	u, _ := e.User("admin")

	b := e.NewBrowser()
	// A form post without the CSRF token is refused.
	b.Get("/login")
	resp, _ := b.PostForm("/login", url.Values{"email": {u.Email}, "password": {"password-of-admin"}}, false)
	if resp.StatusCode != 403 {
		t.Fatalf("login without CSRF: %d, want 403", resp.StatusCode)
	}
	// Wrong password shows an error.
	resp, body := b.PostForm("/login", url.Values{"email": {u.Email}, "password": {"nope"}}, true)
	if resp.StatusCode != 401 || !strings.Contains(body, "wrong") {
		t.Fatalf("wrong password: %d", resp.StatusCode)
	}
	before := b.Cookies[web.SessionCookie]
	b.Login(u.Email, "password-of-admin")
	if b.Cookies[web.SessionCookie] == "" || b.Cookies[web.SessionCookie] == before {
		t.Fatal("the session token must be renewed at login")
	}
	resp, body = b.Get("/regions")
	if resp.StatusCode != 200 || !strings.Contains(body, "Knative Regions") {
		t.Fatalf("regions page after login: %d", resp.StatusCode)
	}
	// A state-changing request with the session but without CSRF is refused.
	resp, _ = b.PostForm("/tokens", url.Values{"name": {"x"}, "scopes": {"*"}}, false)
	if resp.StatusCode != 403 {
		t.Fatalf("POST without CSRF: %d, want 403", resp.StatusCode)
	}
	resp, _ = b.PostForm("/tokens", url.Values{"name": {"x"}, "scopes": {"*"}}, true)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST with CSRF: %d", resp.StatusCode)
	}
	resp, _ = b.PostForm("/logout", url.Values{}, true)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: %d", resp.StatusCode)
	}
	resp, _ = b.Get("/regions")
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("after logout /regions: %d, want a redirect", resp.StatusCode)
	}

	// Throttling: right after 5 failures the account must wait (a delay, not a lock:
	// TestLoginThrottleIsADelay shows the real user gets in afterwards).
	b2 := e.NewBrowser()
	b2.Get("/login")
	for i := 0; i < 5; i++ {
		b2.PostForm("/login", url.Values{"email": {u.Email}, "password": {"nope"}}, true)
	}
	resp, body = b2.PostForm("/login", url.Values{"email": {u.Email}, "password": {"password-of-admin"}}, true)
	if resp.StatusCode != 429 || !strings.Contains(body, "Too many") || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("throttled login: %d", resp.StatusCode)
	}
}

// need lists the permissions a route needs of a caller (a token also needs TokenPerm).
func need(r web.Route, token bool) []string {
	out := append([]string{r.Perm}, r.Also...)
	if token && r.TokenPerm != "" {
		out = append(out, r.TokenPerm)
	}
	return out
}

func hasAll(perms map[string]bool, need []string) bool {
	for _, p := range need {
		if p != web.Authenticated && !perms[p] {
			return false
		}
	}
	return true
}

// TestWebSocketOrigin refuses a browser's WebSocket from another site.
func TestWebSocketOrigin(t *testing.T) {
	e := webtest.New(t, nil)
	_, tok := e.User("owner")
	base := strings.Replace(e.Listen(), "http://", "ws://", 1)
	dial := func(origin string) int {
		h := http.Header{}
		h.Set("Authorization", "Bearer "+tok)
		if origin != "" {
			h.Set("Origin", origin)
		}
		conn, resp, err := websocket.DefaultDialer.Dial(base+"/ws/banners", h)
		if err == nil {
			conn.Close()
		}
		if resp == nil {
			t.Fatalf("no answer: %v", err)
		}
		return resp.StatusCode
	}
	if got := dial("http://evil.example.com"); got != 403 {
		t.Fatalf("another origin: %d, want 403", got)
	}
	if got := dial(strings.Replace(base, "ws://", "http://", 1)); got != 101 {
		t.Fatalf("the console's own origin: %d, want 101", got)
	}
	if got := dial(""); got != 101 {
		t.Fatalf("no origin (an API client): %d, want 101", got)
	}
}

// TestExpiredTokenIsRefused: a token past its expiry answers 401 like a revoked one, also
// when this console kept it from an earlier request; the API creates tokens that expire
// after 90 days unless asked otherwise.
func TestExpiredTokenIsRefused(t *testing.T) {
	e := webtest.New(t, nil)
	ctx := context.Background()
	u, _ := e.User("admin")
	soon := time.Now().Add(1500 * time.Millisecond)
	_, tok, err := e.Store.CreateAPIToken(ctx, u.ID, "short", []string{"*"}, &soon)
	if err != nil {
		t.Fatal(err)
	}
	if resp := e.Do(webtest.Req("GET", "/api/me", tok, "")); resp.StatusCode != 200 {
		t.Fatalf("a token before its expiry: %d", resp.StatusCode)
	}
	time.Sleep(time.Until(soon) + 100*time.Millisecond)
	if resp := e.Do(webtest.Req("GET", "/api/me", tok, "")); resp.StatusCode != 401 {
		t.Fatalf("a token past its expiry (kept by the console): %d, want 401", resp.StatusCode)
	}
	past := time.Now().Add(-time.Minute)
	_, old, err := e.Store.CreateAPIToken(ctx, u.ID, "old", []string{"*"}, &past)
	if err != nil {
		t.Fatal(err)
	}
	if resp := e.Do(webtest.Req("GET", "/api/me", old, "")); resp.StatusCode != 401 {
		t.Fatalf("an expired token: %d, want 401", resp.StatusCode)
	}

	_, admin := e.User("admin")
	var created struct {
		Data struct {
			ExpiresAt *time.Time `json:"expires_at"`
		} `json:"data"`
	}
	if st := e.JSON("POST", "/api/tokens", admin, map[string]any{"name": "ci", "scopes": []string{"regions.view"}}, &created); st != 201 {
		t.Fatalf("create a token: %d", st)
	}
	if d := created.Data.ExpiresAt; d == nil || time.Until(*d) < 89*24*time.Hour {
		t.Fatalf("a new token's expiry: %v, want 90 days from now", d)
	}
}
