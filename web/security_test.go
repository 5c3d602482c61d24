package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"runr.dev/console/config"
	"runr.dev/console/crypt"
	"runr.dev/console/engine"
	"runr.dev/console/handlers"
	"runr.dev/console/ops/registry"
	"runr.dev/console/perm"
	"runr.dev/console/store"
	"runr.dev/console/web"
	"runr.dev/console/web/webtest"
)

// digest fingerprints what a refused request must not change: users, tokens (without
// their last use), regions, projects, jobs, setups and the platform settings.
func digest(t testing.TB, st *store.Store) string {
	t.Helper()
	var d string
	err := st.DB.Get(&d, `SELECT md5(concat_ws('|',
		(SELECT string_agg(u.id || u.email || u.role || u.password_hash, ',' ORDER BY u.id) FROM users u),
		(SELECT string_agg(k.id || k.user_id || array_to_string(k.scopes, ';'), ',' ORDER BY k.id) FROM api_tokens k),
		(SELECT string_agg(r::text, ',' ORDER BY r.id) FROM (SELECT id, name, kubeconfig, region_status, settings, monitoring, registry_mode,
			redis_mode, faas_cpu_overcommit, faas_memory_overcommit, function_tls_cert, migration_status FROM regions) r),
		(SELECT string_agg(p::text, ',' ORDER BY p.id) FROM projects p),
		(SELECT string_agg(j.id || j.kind || j.status || coalesce(j.cancel_requested::text, ''), ',' ORDER BY j.id) FROM jobs j),
		(SELECT string_agg(s.token, ',' ORDER BY s.token) FROM registry_setups s),
		(SELECT string_agg(x::text, ',') FROM settings x)))`)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// signIn returns a browser signed in as a new user of a role.
func signIn(e *webtest.Env, role string) (*webtest.Browser, *store.User) {
	u, _ := e.User(role)
	b := e.NewBrowser()
	b.Login(u.Email, "password-of-"+role)
	b.Get("/regions")
	return b, u
}

// sessionReq builds a request of a signed-in browser (cookies added by Browser.Do).
func sessionReq(method, path, ctype, body string, hdr map[string]string) *http.Request {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return req
}

// TestCSRFOnAPIWithSession: every unsafe request made with a session cookie, /api/*
// included, stops at 403 without the token, with the token in the query string, or
// from another site; and nothing changes.
func TestCSRFOnAPIWithSession(t *testing.T) {
	e := webtest.New(t, nil)
	b, _ := signIn(e, "owner")
	ctx := context.Background()
	form := "application/x-www-form-urlencoded"
	js := "application/json"
	refused := []struct {
		name string
		req  *http.Request
	}{
		{"form POST /api/users without token", sessionReq("POST", "/api/users", form, "email=evil@example.com&role=owner", nil)},
		{"JSON POST /api/users without token", sessionReq("POST", "/api/users", js, `{"email":"evil@example.com","role":"owner"}`, nil)},
		{"PATCH /api/settings without token", sessionReq("PATCH", "/api/settings", js, `{"base_domain":"evil.example.com"}`, nil)},
		{"token in the query string", sessionReq("PATCH", "/api/settings?_csrf="+url.QueryEscape(b.CSRF), js, `{"base_domain":"evil.example.com"}`, nil)},
		{"form token in the query string", sessionReq("POST", "/api/users?_csrf="+url.QueryEscape(b.CSRF), form, "email=evil@example.com&role=owner", nil)},
		{"HTML form without token", sessionReq("POST", "/platform", form, "base_domain=evil.example.com", nil)},
		{"cross-site with the token", sessionReq("PATCH", "/api/settings", js, `{"base_domain":"evil.example.com"}`,
			map[string]string{"X-CSRF-Token": b.CSRF, "Sec-Fetch-Site": "cross-site"})},
		{"same-site (another subdomain) with the token", sessionReq("POST", "/api/users", js, `{"email":"evil@example.com","role":"owner"}`,
			map[string]string{"X-CSRF-Token": b.CSRF, "Sec-Fetch-Site": "same-site"})},
		{"another Origin with the token", sessionReq("POST", "/api/users", js, `{"email":"evil@example.com","role":"owner"}`,
			map[string]string{"X-CSRF-Token": b.CSRF, "Origin": "https://evil.example.com"})},
		{"Origin null with the token", sessionReq("DELETE", "/api/tokens/x", "", "", map[string]string{"X-CSRF-Token": b.CSRF, "Origin": "null"})},
		{"wrong token", sessionReq("POST", "/api/users", js, `{"email":"evil@example.com","role":"owner"}`, map[string]string{"X-CSRF-Token": "nope"})},
	}
	for _, tc := range refused {
		before := digest(t, e.Store)
		resp, body := b.Do(tc.req)
		if resp.StatusCode != 403 {
			t.Errorf("%s: %d, want 403: %s", tc.name, resp.StatusCode, body)
		}
		if digest(t, e.Store) != before {
			t.Errorf("%s: the refused request changed something", tc.name)
		}
	}
	if n, _ := e.Store.CountUsers(ctx, ""); n != 1 {
		t.Fatalf("users: %d, want only the owner", n)
	}
	if d, _ := e.Store.BaseDomain(ctx); d == "evil.example.com" {
		t.Fatal("the base domain changed")
	}
	// The same requests with the header (or the body field) and from the console's own
	// origin go through.
	resp, body := b.Do(sessionReq("PATCH", "/api/settings", js, `{"base_domain":"good.example.com"}`,
		map[string]string{"X-CSRF-Token": b.CSRF, "Sec-Fetch-Site": "same-origin", "Origin": "http://example.com"}))
	if resp.StatusCode != 200 {
		t.Fatalf("PATCH with the token: %d %s", resp.StatusCode, body)
	}
	if d, _ := e.Store.BaseDomain(ctx); d != "good.example.com" {
		t.Fatalf("base domain %q", d)
	}
	resp, body = b.Do(sessionReq("POST", "/api/users", form, "email=new@example.com&role=viewer&_csrf="+url.QueryEscape(b.CSRF), nil))
	if resp.StatusCode != 201 {
		t.Fatalf("form POST with the body token: %d %s", resp.StatusCode, body)
	}
	// A bearer token needs no CSRF token (no cookie is sent by another site).
	_, tok := e.User("owner")
	if got := e.JSON("PATCH", "/api/settings", tok, map[string]string{"base_domain": "api.example.com"}, nil); got != 200 {
		t.Fatalf("bearer PATCH: %d", got)
	}
}

// TestRoleEscalation: only owners create, promote, demote or delete owners; nobody
// changes their own role; the last owner stays; the HTML form and the CLI's use case
// hold the same rules. Every refusal changes nothing.
func TestRoleEscalation(t *testing.T) {
	e := webtest.New(t, nil)
	ctx := context.Background()
	owner, ownerTok := e.User("owner")
	admin, adminTok := e.User("admin")
	other, _ := e.User("admin")
	refuse := func(name, method, path, tok string, body any, want int) {
		t.Helper()
		before := digest(t, e.Store)
		if got := e.JSON(method, path, tok, body, nil); got != want {
			t.Errorf("%s: %d, want %d", name, got, want)
		}
		if digest(t, e.Store) != before {
			t.Errorf("%s: changed something", name)
		}
	}
	refuse("admin makes itself owner", "PUT", "/api/users/"+admin.ID, adminTok, map[string]string{"role": "owner"}, 403)
	refuse("admin makes another admin owner", "PUT", "/api/users/"+other.ID, adminTok, map[string]string{"role": "owner"}, 403)
	refuse("admin creates an owner", "POST", "/api/users", adminTok, map[string]string{"email": "o2@example.com", "role": "owner"}, 403)
	refuse("admin demotes the owner", "PUT", "/api/users/"+owner.ID, adminTok, map[string]string{"role": "viewer"}, 403)
	refuse("admin deletes the owner", "DELETE", "/api/users/"+owner.ID, adminTok, nil, 403)
	refuse("owner changes own role", "PUT", "/api/users/"+owner.ID, ownerTok, map[string]string{"role": "admin"}, 403)
	refuse("owner deletes itself", "DELETE", "/api/users/"+owner.ID, ownerTok, nil, 403)
	refuse("admin changes own role", "PUT", "/api/users/"+admin.ID, adminTok, map[string]string{"role": "member"}, 403)

	// The same through the HTML form, with a valid CSRF token.
	b := e.NewBrowser()
	b.Login(admin.Email, "password-of-admin")
	b.Get("/users")
	before := digest(t, e.Store)
	if resp, _ := b.PostForm("/users/"+admin.ID+"/role", url.Values{"role": {"owner"}}, true); resp.StatusCode != 403 {
		t.Errorf("HTML form: admin makes itself owner: %d", resp.StatusCode)
	}
	if resp, _ := b.PostForm("/users", url.Values{"email": {"o3@example.com"}, "role": {"owner"}}, true); resp.StatusCode != 403 {
		t.Errorf("HTML form: admin creates an owner: %d", resp.StatusCode)
	}
	if resp, _ := b.PostForm("/users/"+owner.ID+"/delete", url.Values{}, true); resp.StatusCode != 403 {
		t.Errorf("HTML form: admin deletes the owner: %d", resp.StatusCode)
	}
	if digest(t, e.Store) != before {
		t.Error("the HTML refusals changed something")
	}
	if u, _ := e.Store.UserByID(ctx, admin.ID); u.Role != "admin" {
		t.Fatalf("admin's role is now %s", u.Role)
	}

	// Owners may: promote, and then demote the other owner; the last one stays.
	if got := e.JSON("PUT", "/api/users/"+other.ID, ownerTok, map[string]string{"role": "owner"}, nil); got != 200 {
		t.Fatalf("owner promotes an admin: %d", got)
	}
	if got := e.JSON("PUT", "/api/users/"+other.ID, ownerTok, map[string]string{"role": "admin"}, nil); got != 200 {
		t.Fatalf("owner demotes another owner: %d", got)
	}
	// The CLI's path (no actor): the last owner can be neither demoted nor deleted.
	if err := e.Store.ChangeUserRole(ctx, nil, owner.ID, "admin"); err == nil {
		t.Fatal("CLI demoted the last owner")
	}
	if err := e.Store.RemoveUser(ctx, nil, owner.ID); err == nil {
		t.Fatal("CLI deleted the last owner")
	}
	if u, _ := e.Store.UserByID(ctx, owner.ID); u.Role != "owner" {
		t.Fatal("the last owner lost the role")
	}
	// Two owners demoting each other at once leave one.
	if err := e.Store.ChangeUserRole(ctx, nil, other.ID, "owner"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, pair := range [][2]*store.User{{owner, other}, {other, owner}} {
		wg.Add(1)
		go func(actor, target *store.User) {
			defer wg.Done()
			actor.Role = "owner"
			_ = e.Store.ChangeUserRole(ctx, actor, target.ID, "admin")
		}(pair[0], pair[1])
	}
	wg.Wait()
	if n, _ := e.Store.CountUsers(ctx, "owner"); n != 1 {
		t.Fatalf("owners after concurrent demotions: %d, want 1", n)
	}
}

// TestTokenScopeCaps: a token never mints more than it holds, and listing or revoking
// tokens with a token needs tokens.manage.
func TestTokenScopeCaps(t *testing.T) {
	e := webtest.New(t, nil)
	ctx := context.Background()
	u, manage := e.User("owner", perm.TokensManage)
	view, err := func() (string, error) {
		_, p, err := e.Store.CreateAPIToken(ctx, u.ID, "view", []string{perm.RegionsView}, nil)
		return p, err
	}()
	if err != nil {
		t.Fatal(err)
	}
	for _, scopes := range [][]string{{"*"}, {perm.RegionsManage}, {perm.TokensManage, perm.UsersManage}} {
		before := digest(t, e.Store)
		var out struct{ Fields map[string]string }
		if got := e.JSON("POST", "/api/tokens", manage, map[string]any{"name": "x", "scopes": scopes}, &out); got != 422 || out.Fields["scopes"] == "" {
			t.Errorf("tokens.manage token minting %v: %d %v, want 422 on scopes", scopes, got, out.Fields)
		}
		if digest(t, e.Store) != before {
			t.Errorf("minting %v changed something", scopes)
		}
	}
	if got := e.JSON("POST", "/api/tokens", manage, map[string]any{"name": "x", "scopes": []string{perm.TokensManage}}, nil); got != 201 {
		t.Fatalf("a token within the caller's scopes: %d", got)
	}
	ts, _ := e.Store.ListAPITokens(ctx, u.ID)
	before := digest(t, e.Store)
	if got := e.JSON("GET", "/api/tokens", view, nil, nil); got != 403 {
		t.Errorf("regions.view token lists tokens: %d", got)
	}
	if got := e.JSON("DELETE", "/api/tokens/"+ts[0].ID, view, nil, nil); got != 403 {
		t.Errorf("regions.view token revokes a token: %d", got)
	}
	if digest(t, e.Store) != before {
		t.Error("a refused revoke changed something")
	}
	if got := e.JSON("GET", "/api/tokens", manage, nil, nil); got != 200 {
		t.Errorf("tokens.manage token lists: %d", got)
	}
	// A member's session cannot create a token with more than the member's role.
	b, _ := signIn(e, "member")
	b.Get("/tokens")
	resp, _ := b.PostForm("/tokens", url.Values{"name": {"x"}, "scopes": {perm.RegionsManage}}, true)
	if resp.StatusCode != 422 {
		t.Errorf("member asks for regions.manage: %d, want 422", resp.StatusCode)
	}
}

// TestWebSocketReadLimit: an oversize frame closes that socket with 1009, and the
// console does not keep its memory.
func TestWebSocketReadLimit(t *testing.T) {
	e := webtest.New(t, nil)
	_, tok := e.User("viewer")
	base := strings.Replace(e.Listen(), "http://", "ws://", 1)
	h := http.Header{}
	h.Set("Authorization", "Bearer "+tok)
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	heapBefore := ms.HeapAlloc
	for i := 0; i < 3; i++ {
		conn, _, err := websocket.DefaultDialer.Dial(base+"/ws/banners", h)
		if err != nil {
			t.Fatal(err)
		}
		// A small frame is fine.
		if err := conn.WriteMessage(websocket.TextMessage, []byte("hello")); err != nil {
			t.Fatal(err)
		}
		big := make([]byte, 16<<20)
		_ = conn.WriteMessage(websocket.TextMessage, big)
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, _, err = conn.ReadMessage()
		if !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
			t.Fatalf("oversize frame: %v, want close 1009", err)
		}
		conn.Close()
	}
	// The agent's socket: 1 MiB at most.
	r := &store.Region{Name: "agent-limit", Kubeconfig: "x", AgentToken: "agent-tok", AgentTokenHash: crypt.HashToken("agent-tok")}
	if err := e.Store.CreateRegion(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	ah := http.Header{}
	ah.Set("Authorization", "Bearer agent-tok")
	conn, _, err := websocket.DefaultDialer.Dial(base+"/api/internal/agent/ws", ah)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.WriteMessage(websocket.TextMessage, make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	_ = conn.WriteMessage(websocket.TextMessage, make([]byte, 2<<20))
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := conn.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
		t.Fatalf("agent's oversize frame: %v, want close 1009", err)
	}
	conn.Close()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	if grown := int64(ms.HeapAlloc) - int64(heapBefore); grown > 8<<20 {
		t.Fatalf("the heap grew by %d MiB after three 16 MiB frames", grown>>20)
	}
	if handlers.BrowserReadLimit > 64<<10 || handlers.AgentReadLimit > 2<<20 {
		t.Fatal("read limits too large")
	}
}

// TestMetricsUnderLoad: the request metrics keep correct labels under concurrent
// requests (Fiber reuses its buffers), and /metrics is not on the console's port.
func TestMetricsUnderLoad(t *testing.T) {
	e := webtest.New(t, nil)
	_, tok := e.User("owner")
	base := e.Listen()
	methods := []string{"GET", "POST", "PATCH", "DELETE", "PUT"}
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 40; i++ {
				m := methods[(g+i)%len(methods)]
				req, _ := http.NewRequest(m, base+fmt.Sprintf("/api/tokens/%d-%d", g, i), strings.NewReader("{}"))
				req.Header.Set("Authorization", "Bearer "+tok)
				req.Header.Set("Content-Type", "application/json")
				if resp, err := http.DefaultClient.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		}(g)
	}
	wg.Wait()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	ok := map[string]bool{"GET": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "HEAD": true, "OPTIONS": true}
	seen := 0
	for _, mf := range mfs {
		if mf.GetName() != "runr_http_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "method" {
					seen++
					if !ok[l.GetValue()] {
						t.Errorf("method label %q", l.GetValue())
					}
				}
			}
		}
	}
	if seen == 0 {
		t.Fatal("no request metrics")
	}
	rec := httptest.NewRecorder()
	web.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), "runr_http_requests_total") {
		t.Fatalf("metrics listener: %d", rec.Code)
	}
	if got, _ := e.Raw("GET", "/metrics", tok, ""); got == 200 {
		t.Fatal("/metrics must not be served on the console's port")
	}
}

// TestSecurityHeaders: every page carries a CSP without inline scripts, framing
// refused, nosniff and a referrer policy; HSTS behind TLS.
func TestSecurityHeaders(t *testing.T) {
	e := webtest.New(t, nil)
	for _, path := range []string{"/login", "/static/app.js", "/api/version", "/nothing"} {
		resp := e.Do(webtest.Req("GET", path, "", ""))
		csp := resp.Header.Get("Content-Security-Policy")
		var script string
		for _, d := range strings.Split(csp, ";") {
			if d = strings.TrimSpace(d); strings.HasPrefix(d, "script-src") {
				script = d
			}
		}
		if script == "" || strings.Contains(script, "unsafe-inline") || strings.Contains(script, "unsafe-eval") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s: CSP %q", path, csp)
		}
		if resp.Header.Get("X-Frame-Options") != "DENY" || resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Referrer-Policy") == "" {
			t.Errorf("%s: headers %v", path, resp.Header)
		}
	}
	// Behind a trusted proxy (app.Test's connections come from 0.0.0.0) that says TLS.
	behind := webtest.New(t, func(c *config.Config) { c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("0.0.0.0/32")} })
	req := webtest.Req("GET", "/login", "", "")
	req.Header.Set("X-Forwarded-Proto", "https")
	if resp := behind.Do(req); !strings.Contains(resp.Header.Get("Strict-Transport-Security"), "max-age=") {
		t.Error("no HSTS over TLS")
	}
	// No page has an inline script or an inline event handler.
	b, _ := signIn(e, "owner")
	for _, path := range []string{"/regions", "/regions/new", "/users", "/tokens", "/platform", "/jobs", "/projects"} {
		_, body := b.Get(path)
		low := strings.ToLower(body)
		if strings.Count(low, "<script") != strings.Count(low, "<script src=") || strings.Contains(low, " onclick=") || strings.Contains(low, "hx-on") {
			t.Errorf("%s has inline script", path)
		}
	}
}

// TestRedirectsStayOnTheConsole: a Referer of another host, and HX-Redirect values
// other than relative paths, are never followed.
func TestRedirectsStayOnTheConsole(t *testing.T) {
	e := webtest.New(t, nil)
	j, err := e.Kube.Enqueue(context.Background(), engine.Request{Kind: registry.KindTest, Title: "t", Params: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := signIn(e, "owner")
	for _, ref := range []string{"https://evil.example.com/phish", "//evil.example.com/x", "javascript:alert(1)"} {
		for _, htmx := range []bool{false, true} {
			req := sessionReq("POST", "/jobs/"+j.ID+"/cancel", "application/x-www-form-urlencoded", "_csrf="+url.QueryEscape(b.CSRF),
				map[string]string{"Referer": ref})
			if htmx {
				req.Header.Set("HX-Request", "true")
			}
			resp, _ := b.Do(req)
			to := resp.Header.Get("Location") + resp.Header.Get("HX-Redirect")
			if to != "/jobs/"+j.ID {
				t.Errorf("Referer %q (htmx %v): redirected to %q", ref, htmx, to)
			}
		}
	}
	for in, want := range map[string]string{"/jobs/1?x=y": "/jobs/1?x=y", "javascript:alert(1)": "/f", "//evil": "/f", "/\\evil": "/f",
		"https://evil/": "/f", "/ok\r\nSet-Cookie: x": "/f", "": "/f"} {
		if got := handlers.SafePath(in, "/f"); got != want {
			t.Errorf("SafePath(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestLoginFormHygiene: NUL bytes and invalid UTF-8 at sign-in answer 422 with the
// message beside the field, and count as no failure.
func TestLoginFormHygiene(t *testing.T) {
	e := webtest.New(t, nil)
	b := e.NewBrowser()
	b.Get("/login")
	before := digest(t, e.Store)
	for _, email := range []string{"a\x00b@example.com", "\xff@example.com"} {
		resp, body := b.PostForm("/login", url.Values{"email": {email}, "password": {"whatever-it-is"}}, true)
		if resp.StatusCode != 422 || !strings.Contains(body, "invalid UTF-8") || !strings.Contains(body, `id="err-email"`) {
			t.Fatalf("login with %q: %d", email, resp.StatusCode)
		}
	}
	resp, body := b.PostForm("/login", url.Values{"email": {"a@example.com"}, "password": {strings.Repeat("p", 73)}}, true)
	if resp.StatusCode != 422 || !strings.Contains(body, "72 bytes") {
		t.Fatalf("73-byte password: %d", resp.StatusCode)
	}
	var n int
	e.Store.DB.Get(&n, `SELECT count(*) FROM login_failures`)
	if n != 0 || digest(t, e.Store) != before {
		t.Fatal("refused sign-ins changed something")
	}
	// The console's main forms show the message beside the field, too.
	ob, _ := signIn(e, "owner")
	for _, tc := range []struct{ page, path, field, value string }{
		{"/users", "/users", "email", "x\x00@example.com"},
		{"/tokens", "/tokens", "name", "ci\xff"},
		{"/platform", "/platform", "base_domain", "a\x00.example.com"},
		{"/regions/new", "/regions/new/check", "name", "eu\x00"},
	} {
		ob.Get(tc.page)
		before := digest(t, e.Store)
		resp, body := ob.PostForm(tc.path, url.Values{tc.field: {tc.value}, "role": {"viewer"}, "scopes": {"*"}}, true)
		if resp.StatusCode != 422 || !strings.Contains(body, `id="err-`+tc.field+`"`) || !strings.Contains(body, "invalid UTF-8") {
			t.Errorf("%s with %q: %d, want 422 with the message beside %s", tc.path, tc.value, resp.StatusCode, tc.field)
		}
		if digest(t, e.Store) != before {
			t.Errorf("%s: changed something", tc.path)
		}
	}
}

// TestNoSecretInSessions: a new token and a generated password are shown in the answer
// that created them and never reach the sessions table.
func TestNoSecretInSessions(t *testing.T) {
	e := webtest.New(t, nil)
	b, _ := signIn(e, "owner")
	b.Get("/tokens")
	resp, body := b.PostForm("/tokens", url.Values{"name": {"ci"}, "scopes": {"*"}}, true)
	if resp.StatusCode != 201 {
		t.Fatalf("create token: %d", resp.StatusCode)
	}
	i := strings.Index(body, "runr_")
	if i < 0 {
		t.Fatal("the new token is not in the answer")
	}
	token := body[i : i+48]
	b.Get("/users")
	resp, body = b.PostForm("/users", url.Values{"email": {"gen@example.com"}, "role": {"viewer"}}, true)
	if resp.StatusCode != 201 || !strings.Contains(body, "generated-password") {
		t.Fatalf("create user: %d", resp.StatusCode)
	}
	var rows []string
	if err := e.Store.DB.Select(&rows, `SELECT encode(data, 'escape') FROM sessions`); err != nil {
		t.Fatal(err)
	}
	all := strings.Join(rows, "\n")
	if strings.Contains(all, token) || strings.Contains(all, "generated_password") || strings.Contains(all, "new_token") {
		t.Fatal("a secret is stored in the sessions table")
	}
}

// TestForwardedHeadersFromTrustedProxiesOnly: X-Forwarded-Host and X-Forwarded-Proto from
// a client that is no trusted proxy change nothing: the internal API's host check judges
// the request's own Host (400 for another host), and a claimed TLS gets no HSTS. From a
// proxy of RUNR_TRUSTED_PROXIES both are believed.
func TestForwardedHeadersFromTrustedProxiesOnly(t *testing.T) {
	public := func(c *config.Config) { c.AppURL = "https://console.example.test" }
	forwarded := func() *http.Request {
		req := webtest.Req("GET", "/api/internal/agent/ws", "", "")
		req.Host = "attacker.example.test"
		req.Header.Set("X-Forwarded-Host", "console.example.test")
		req.Header.Set("X-Forwarded-Proto", "https")
		return req
	}
	e := webtest.New(t, public)
	resp := e.Do(forwarded())
	if resp.StatusCode != 400 {
		t.Errorf("X-Forwarded-Host from any client: %d, want 400 (the host check judges Host)", resp.StatusCode)
	}
	if resp.Header.Get("Strict-Transport-Security") != "" {
		t.Error("X-Forwarded-Proto from any client turned HSTS on")
	}
	trusted := webtest.New(t, func(c *config.Config) {
		public(c)
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("0.0.0.0/32")}
	})
	resp = trusted.Do(forwarded())
	if resp.StatusCode != 401 {
		t.Errorf("X-Forwarded-Host from a trusted proxy: %d, want 401 (past the host check, no agent token)", resp.StatusCode)
	}
	if resp.Header.Get("Strict-Transport-Security") == "" {
		t.Error("X-Forwarded-Proto from a trusted proxy: no HSTS")
	}
}

// TestAPIAnswersOnlyForTheConsolesHost: with RUNR_APP_URL the API answers for its host (and
// loopback: a port-forward, the pod itself), 400 for any other; /api/internal/ answers for
// the hosts of the addresses RunR hands out, the replay ingest URL and
// WORKFLOWS_PUBLIC_API_URL among them, and 400 for any other.
func TestAPIAnswersOnlyForTheConsolesHost(t *testing.T) {
	e := webtest.New(t, func(c *config.Config) {
		c.AppURL = "https://console.example.test"
		c.ReplayIngestURL = "https://replay.example.test/ingest"
		c.WorkflowsPublicAPIURL = "https://workflows.example.test/api"
	})
	_, tok := e.User("owner")
	status := func(path, host string) int {
		req := webtest.Req("GET", path, tok, "")
		req.Host = host
		return e.Do(req).StatusCode
	}
	for host, want := range map[string]int{"console.example.test": 200, "CONSOLE.example.test:443": 200, "127.0.0.1:8080": 200, "localhost": 200, "[::1]:8080": 200,
		"attacker.example.test": 400, "replay.example.test": 400} {
		if got := status("/api/knative-regions", host); got != want {
			t.Errorf("the API for host %s: %d, want %d", host, got, want)
		}
	}
	// Past the host check the internal API wants an agent's token (401).
	for host, want := range map[string]int{"console.example.test": 401, "replay.example.test": 401, "workflows.example.test": 401, "attacker.example.test": 400} {
		if got := status("/api/internal/agent/ws", host); got != want {
			t.Errorf("the internal API for host %s: %d, want %d", host, got, want)
		}
	}
	// Pages are not the API: the sign-in page answers whatever the host.
	req := webtest.Req("GET", "/login", "", "")
	req.Host = "attacker.example.test"
	if got := e.Do(req).StatusCode; got != 200 {
		t.Errorf("the sign-in page for another host: %d", got)
	}
}
