package web_test

import (
	"context"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"runr.dev/console/crypt"
	"runr.dev/console/store"
	"runr.dev/console/web/webtest"
)

// Pages and answers that carry a kubeconfig, a new token or a generated password are never
// cached (issue 30, finding 7); the static files keep their caching.
func TestSecretsAreNeverCached(t *testing.T) {
	e := webtest.New(t, nil)
	owner, tok := e.User("owner")
	r := &store.Region{Name: "cached", Kubeconfig: testKubeconfig, AgentToken: "agent-cached", AgentTokenHash: crypt.HashToken("agent-cached")}
	if err := e.Store.CreateRegion(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	resp := e.Do(webtest.Req("GET", "/api/knative-regions/"+r.ID+"/kubeconfig", tok, ""))
	if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("kubeconfig: %d, Cache-Control %q", resp.StatusCode, resp.Header.Get("Cache-Control"))
	}
	resp = e.Do(webtest.Req("POST", "/api/tokens", tok, `{"name":"ci","scopes":["regions.view"]}`))
	if resp.StatusCode != 201 || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("new token: %d, Cache-Control %q", resp.StatusCode, resp.Header.Get("Cache-Control"))
	}
	b := e.NewBrowser()
	b.Login(owner.Email, "password-of-owner")
	b.Get("/tokens")
	req := httptest.NewRequest("POST", "/tokens", strings.NewReader(url.Values{"name": {"page"}, "scopes": {"regions.view"}, "_csrf": {b.CSRF}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	page, body := b.Do(req)
	if page.StatusCode != 201 || !strings.Contains(body, "runr_") || page.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("the page with a new token: %d, Cache-Control %q", page.StatusCode, page.Header.Get("Cache-Control"))
	}
	css := e.Do(webtest.Req("GET", "/static/app.css", "", ""))
	if css.StatusCode != 200 || css.Header.Get("Cache-Control") == "no-store" {
		t.Fatalf("static: %d, Cache-Control %q", css.StatusCode, css.Header.Get("Cache-Control"))
	}
}

// A kubeconfig the console's keys cannot decrypt is refused with the reason, not
// downloaded as an empty file (issue 30, finding 9).
func TestUnreadableKubeconfigIsRefused(t *testing.T) {
	a := webtest.New(t, nil)
	r := &store.Region{Name: "sealed", Kubeconfig: testKubeconfig, AgentToken: "agent-sealed", AgentTokenHash: crypt.HashToken("agent-sealed")}
	if err := a.Store.CreateRegion(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	// Another console of the database with another key, without the old one.
	b := secondConsole(t, a, crypt.GenerateKey())
	_, tok := b.User("owner")
	st, body := b.Raw("GET", "/api/knative-regions/"+r.ID+"/kubeconfig", tok, "")
	if st != 409 || !strings.Contains(body, "cannot be read") {
		t.Fatalf("unreadable kubeconfig: %d %s", st, body)
	}
}

// A visitor who only looks at pages gets no session row: 50 GETs of the sign-in page (and
// of a page that sends it there) leave the sessions table as it was; signing in still
// works, with the sign-in form's CSRF token checked (issue 30, finding 5).
func TestAnonymousPagesStoreNoSession(t *testing.T) {
	e := webtest.New(t, nil)
	owner, _ := e.User("owner")
	rows := func() int {
		var n int
		if err := e.Store.DB.Get(&n, `SELECT count(*) FROM sessions`); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := rows()
	for i := 0; i < 25; i++ {
		for _, path := range []string{"/login", "/regions"} {
			if resp := e.Do(httptest.NewRequest("GET", path, nil)); resp.StatusCode >= 500 {
				t.Fatalf("GET %s: %d", path, resp.StatusCode)
			}
		}
	}
	if n := rows(); n != before {
		t.Fatalf("50 anonymous GETs made %d session rows", n-before)
	}
	// The form's token is still required, and enough.
	b := e.NewBrowser()
	b.Get("/login")
	if resp, _ := b.PostForm("/login", url.Values{"email": {owner.Email}, "password": {"password-of-owner"}}, false); resp.StatusCode != 403 {
		t.Fatalf("a sign-in without the form's CSRF token: %d", resp.StatusCode)
	}
	b.Login(owner.Email, "password-of-owner")
	if rows() != before+1 {
		t.Fatalf("signing in made %d session rows", rows()-before)
	}
}
