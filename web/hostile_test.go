package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"runr.dev/console/config"
	"runr.dev/console/store"
	"runr.dev/console/web"
	"runr.dev/console/web/webtest"
)

// hostileBodies are JSON bodies no handler may answer with a 500.
var hostileBodies = func() map[string]string {
	big := strings.Repeat("a", 1<<20)
	fields := []string{"name", "email", "role", "password", "kubeconfig", "base_domain", "image", "version", "registry_mode", "scopes", "nodes"}
	wrong, huge, neg, long := map[string]string{}, []string{}, []string{}, []string{}
	for _, f := range fields {
		wrong[f] = `"` + f + `": {"a": [1, {"b": null}]}`
		long = append(long, `"`+f+`": "`+big[:1<<16]+`"`)
	}
	for _, f := range []string{"request_timeout", "cpu_m", "memory_mi", "faas_cpu_overcommit", "faas_memory_overcommit", "size", "wait", "after", "replicas"} {
		huge = append(huge, `"`+f+`": 1e400`)
		neg = append(neg, `"`+f+`": -99999999999999999999`)
	}
	join := func(m map[string]string) string {
		var parts []string
		for _, v := range m {
			parts = append(parts, v)
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	return map[string]string{
		"nul":          `{"name": "a\u0000b", "email": "x\u0000@example.com", "kubeconfig": "\u0000", "base_domain": "\u0000", "role": "\u0000", "scopes": ["\u0000"]}`,
		"invalid-utf8": "{\"name\": \"\xff\xfe\", \"email\": \"\xc0\xaf@example.com\", \"base_domain\": \"\xed\xa0\x80\"}",
		"wrong-types":  join(wrong),
		"huge-numbers": "{" + strings.Join(huge, ",") + "}",
		"negative":     "{" + strings.Join(neg, ",") + "}",
		"deep":         strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000),
		"1mb-string":   `{"name": "` + big + `", "email": "` + big[:1000] + `@example.com", "kubeconfig": "` + big[:1<<19] + `"}`,
		"long-fields":  "{" + strings.Join(long, ",") + "}",
		"array":        `[1, 2, 3]`,
		"password-73":  `{"email": "p73@example.com", "role": "viewer", "password": "` + strings.Repeat("p", 73) + `"}`,
	}
}()

var hostileForms = map[string]string{
	"nul":          "name=a%00b&email=x%00%40example.com&role=owner%00&base_domain=%00&kubeconfig=%00&password=%00",
	"invalid-utf8": "name=%FF%FE&email=%C0%AF&base_domain=%ED%A0%80&_x%FF=1",
	"long":         "name=" + strings.Repeat("a", 1<<20) + "&email=" + strings.Repeat("b", 1<<16),
	"numbers":      "size=-1&replicas=99999999999999999999&request_timeout=1e400&cpu=-5&memory=NaN&page=-1",
	"password-73":  "email=p73%40example.com&role=viewer&password=" + strings.Repeat("p", 73),
}

var hostileParams = []string{"%00", "%FF%FE", "99999999999999999999", "-1", "..%2F..%2Fetc", strings.Repeat("z", 600)}

var hostileQueries = []string{
	"?page=-1&per_page=99999999999999999999&after=-5&wait=99999999999&step=-1&refresh=2",
	"?page=99999999999999999999&per_page=-1&after=99999999999999999999999",
	"?page=%00&q=%FF&region=%00&region_id=%FF&tab=%00&version=%FF&format=json&step=%00",
}

// TestHostileInputWalk sends hostile input to every route of the routes table, as each
// role (by token), as a signed-in owner (session and CSRF token) and anonymously: NUL
// bytes, invalid UTF-8, huge and negative numbers, wrong JSON types, deep nesting and
// long strings, in the path, the query and the body. Nothing answers a 500, and a
// refusal (4xx) changes nothing.
func TestHostileInputWalk(t *testing.T) {
	if testing.Short() {
		t.Skip("the hostile walk sends thousands of requests")
	}
	e := webtest.New(t, nil)
	callers := []caller{{name: "anonymous"}}
	for _, role := range []string{"owner", "admin", "member", "viewer"} {
		_, tok := e.User(role)
		callers = append(callers, caller{name: role, token: tok})
	}
	br, _ := signIn(e, "owner")
	callers = append(callers, caller{name: "owner-session", br: br})
	hostileWalk(t, e, callers, e.S.Routes())
}

// TestHostileInputWalkTenancy is the hostile walk of the Tenancy module's routes, as the
// platform's owner (token and session) and as a tenant's owner.
func TestHostileInputWalkTenancy(t *testing.T) {
	if testing.Short() {
		t.Skip("the hostile walk sends thousands of requests")
	}
	e := webtest.New(t, func(c *config.Config) { c.Tenancy = true })
	_, tok := e.User("owner")
	br, _ := signIn(e, "owner")
	tenant, err := e.Store.CreateTenant(context.Background(), "hostile")
	if err != nil {
		t.Fatal(err)
	}
	u, err := e.Store.CreateUser(store.WithTenant(context.Background(), tenant.ID), "owner@hostile.test", "", "owner", "password-of-owner")
	if err != nil {
		t.Fatal(err)
	}
	_, ttok, err := e.Store.CreateAPIToken(context.Background(), u.ID, "t", []string{"*"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	callers := []caller{{name: "platform-owner", token: tok}, {name: "owner-session", br: br}, {name: "tenant-owner", token: ttok}}
	var routes []web.Route
	for _, r := range e.S.Routes() {
		if strings.Contains(r.Path, "tenants") || strings.Contains(r.Path, "assignments") || strings.HasSuffix(r.Path, "/mode") ||
			r.Path == "/api/knative-regions" || r.Path == "/api/knative-regions/:id" || r.Path == "/api/registry-setup/start" {
			routes = append(routes, r)
		}
	}
	hostileWalk(t, e, callers, routes)
}

// caller is who sends the hostile walk's requests: nobody, a token, or a browser.
type caller struct {
	name  string
	token string
	br    *webtest.Browser
}

// hostileWalk sends hostile input to the routes as each caller: nothing answers a 500,
// and a refusal (4xx) changes nothing.
func hostileWalk(t *testing.T, e *webtest.Env, callers []caller, routes []web.Route) {
	send := func(c caller, method, path, ctype, body string) (int, string) {
		req := httptest.NewRequest(method, "/", strings.NewReader(body))
		req.URL.RawPath, req.URL.Path, req.RequestURI = "", "", path
		if u, err := req.URL.Parse(path); err == nil {
			req.URL = u
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		if c.br != nil {
			req.Header.Set("X-CSRF-Token", c.br.CSRF)
			resp, raw := c.br.Do(req)
			return resp.StatusCode, raw
		}
		resp := e.Do(req)
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(raw)
	}
	base := digest(t, e.Store)
	n := 0
	check := func(c caller, r web.Route, what, method, path, ctype, body string) {
		t.Helper()
		n++
		status, raw := send(c, method, path, ctype, body)
		if status >= 500 {
			if len(raw) > 300 {
				raw = raw[:300]
			}
			t.Errorf("%s %s as %s (%s): %d: %s", method, r.Path, c.name, what, status, raw)
		}
		now := digest(t, e.Store)
		if status >= 400 && now != base {
			t.Errorf("%s %s as %s (%s): %d but something changed", method, r.Path, c.name, what, status)
		}
		base = now
	}
	for _, r := range routes {
		if r.Path == "/logout" {
			continue // it ends the session the walk goes on with
		}
		paths := []string{fill(r.Path, "01NOTANID0000000000000000")}
		if strings.Contains(r.Path, ":") {
			for _, p := range hostileParams {
				paths = append(paths, fill(r.Path, p))
			}
		}
		for _, c := range callers {
			for _, p := range paths {
				check(c, r, "path", r.Method, p, "", "")
			}
			for _, q := range hostileQueries {
				check(c, r, "query "+q, r.Method, paths[0]+q, "", "")
			}
			if r.Method == http.MethodGet {
				continue
			}
			for name, body := range hostileBodies {
				check(c, r, "json "+name, r.Method, paths[0], "application/json", body)
			}
			for name, body := range hostileForms {
				check(c, r, "form "+name, r.Method, paths[0], "application/x-www-form-urlencoded", body)
			}
		}
	}
	t.Logf("%d hostile requests", n)
}

func fill(path, v string) string { return paramRe.ReplaceAllString(path, v) }
