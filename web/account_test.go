package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"runr.dev/console/perm"
	"runr.dev/console/web"
	"runr.dev/console/web/webtest"
)

// credentials are what a refusal must leave as it was: the user's password hash and the
// generation of their sessions.
func credentials(t *testing.T, e *webtest.Env, id string) string {
	t.Helper()
	u, err := e.Store.UserByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return u.PasswordHash + "|" + strconv.Itoa(u.SessionGeneration)
}

// signedIn reports whether a browser is still signed in: /regions answers the page, not
// the way to the sign-in form.
func signedIn(t *testing.T, b *webtest.Browser) bool {
	t.Helper()
	resp, _ := b.Get("/regions")
	switch {
	case resp.StatusCode == http.StatusOK:
		return true
	case resp.StatusCode == http.StatusSeeOther && resp.Header.Get("Location") == "/login":
		return false
	}
	t.Fatalf("GET /regions: %d", resp.StatusCode)
	return false
}

// canSignIn reports whether the sign-in form takes an e-mail and password.
func canSignIn(t *testing.T, e *webtest.Env, email, password string) bool {
	t.Helper()
	b := e.NewBrowser()
	b.Get("/login")
	resp, _ := b.PostForm("/login", url.Values{"email": {email}, "password": {password}}, true)
	return resp.StatusCode == http.StatusSeeOther
}

// A password change from the Account page asks for the current password and signs out
// the user's other sessions; the browser that changed it stays signed in with a new
// session token. A wrong current password, a typo in the confirmation, a short or too long
// new password answer 422 beside the field and change nothing (issue 30, finding 10).
func TestPasswordChangeEndsOtherSessions(t *testing.T) {
	e := webtest.New(t, nil)
	u, _ := e.User("admin")
	a, b := e.NewBrowser(), e.NewBrowser()
	a.Login(u.Email, "password-of-admin")
	b.Login(u.Email, "password-of-admin")
	if !signedIn(t, a) || !signedIn(t, b) {
		t.Fatal("both browsers must be signed in")
	}
	resp, body := a.Get("/account")
	if resp.StatusCode != 200 || !strings.Contains(body, u.Email) || !strings.Contains(body, `data-testid="change-password"`) ||
		!strings.Contains(body, `data-testid="end-other-sessions"`) || !strings.Contains(body, `href="/account"`) {
		t.Fatalf("the Account page: %d %.500s", resp.StatusCode, body)
	}
	const fresh = "a fresh password"
	before := credentials(t, e, u.ID)
	for _, tc := range []struct {
		name, current, new, confirm, field string
	}{
		{"wrong current password", "password-of-viewer", fresh, fresh, "current_password"},
		{"no current password", "", fresh, fresh, "current_password"},
		{"confirmation differs", "password-of-admin", fresh, fresh + "!", "confirm_password"},
		{"short", "password-of-admin", "short", "short", "new_password"},
		{"73 bytes", "password-of-admin", strings.Repeat("p", 73), strings.Repeat("p", 73), "new_password"},
		{"the current one again", "password-of-admin", "password-of-admin", "password-of-admin", "new_password"},
		{"NUL byte", "password-of-admin", "a fresh\x00password", "a fresh\x00password", "new_password"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := a.PostForm("/account/password", url.Values{"current_password": {tc.current}, "new_password": {tc.new}, "confirm_password": {tc.confirm}}, true)
			if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, `data-testid="error-`+tc.field+`"`) {
				t.Fatalf("%d, want 422 with the message beside %s: %.800s", resp.StatusCode, tc.field, body)
			}
			if strings.Contains(body, tc.new) && tc.new != "short" || tc.current != "" && strings.Contains(body, tc.current) {
				t.Fatal("a password is written back into the page")
			}
			if credentials(t, e, u.ID) != before {
				t.Fatal("a refused change changed the password or the sessions")
			}
			if !signedIn(t, b) || !signedIn(t, a) {
				t.Fatal("a refused change signed a browser out")
			}
		})
	}
	if !strings.Contains(e.Log.String(), "wrong current password") {
		t.Fatal("the wrong current password is not logged")
	}
	if strings.Contains(e.Log.String(), "password-of-viewer") {
		t.Fatal("the log holds the password that was tried")
	}

	token := a.Cookies[web.SessionCookie]
	resp, _ = a.PostForm("/account/password", url.Values{"current_password": {"password-of-admin"}, "new_password": {fresh}, "confirm_password": {fresh}}, true)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/account" {
		t.Fatalf("the change: %d to %q, want 303 to /account", resp.StatusCode, resp.Header.Get("Location"))
	}
	if a.Cookies[web.SessionCookie] == "" || a.Cookies[web.SessionCookie] == token {
		t.Fatal("the session that changed the password must get a new token")
	}
	if _, body := a.Get("/account"); !strings.Contains(body, `data-testid="flash"`) || !strings.Contains(body, "Password changed") {
		t.Fatalf("no word of the change: %.500s", body)
	}
	if !signedIn(t, a) {
		t.Fatal("the browser that changed the password was signed out")
	}
	stale := b.Cookies[web.SessionCookie]
	if signedIn(t, b) {
		t.Fatal("the other browser is still signed in after the password change")
	}
	if b.Cookies[web.SessionCookie] != "" {
		t.Fatal("the signed-out browser keeps its session cookie")
	}
	// The signed-out session is gone, not merely refused: its old token signs nobody in.
	old := e.NewBrowser()
	old.Cookies[web.SessionCookie] = stale
	if signedIn(t, old) {
		t.Fatal("the old session token still signs in")
	}
	// The session token the change replaced is no session either.
	old = e.NewBrowser()
	old.Cookies[web.SessionCookie] = token
	if signedIn(t, old) {
		t.Fatal("the token the change renewed still signs in")
	}
	if canSignIn(t, e, u.Email, "password-of-admin") {
		t.Fatal("the old password still signs in")
	}
	if !canSignIn(t, e, u.Email, fresh) {
		t.Fatal("the new password does not sign in")
	}
	// Signed in again, the other browser stays so.
	b.Login(u.Email, fresh)
	if !signedIn(t, b) || !signedIn(t, a) {
		t.Fatal("a browser signed in after the change must stay signed in")
	}
}

// "Sign out other sessions" from the Account page signs out every other browser of the
// user (not another user's) and keeps this one, with a new session token.
func TestEndOtherSessions(t *testing.T) {
	e := webtest.New(t, nil)
	u, _ := e.User("viewer")
	a, b, c := e.NewBrowser(), e.NewBrowser(), e.NewBrowser()
	for _, br := range []*webtest.Browser{a, b, c} {
		br.Login(u.Email, "password-of-viewer")
	}
	other, _ := signIn(e, "viewer")
	a.Get("/account")
	token := a.Cookies[web.SessionCookie]
	// Without the CSRF token, nothing happens.
	if resp, _ := a.PostForm("/account/sessions/end-others", url.Values{}, false); resp.StatusCode != http.StatusForbidden || !signedIn(t, b) {
		t.Fatalf("without the CSRF token: %d", resp.StatusCode)
	}
	resp, _ := a.PostForm("/account/sessions/end-others", url.Values{}, true)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/account" {
		t.Fatalf("end others: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if a.Cookies[web.SessionCookie] == token {
		t.Fatal("the session that stays must get a new token")
	}
	if !signedIn(t, a) {
		t.Fatal("the browser that asked was signed out")
	}
	if signedIn(t, b) || signedIn(t, c) {
		t.Fatal("another browser of the user is still signed in")
	}
	if !signedIn(t, other) {
		t.Fatal("another user's browser was signed out")
	}
	if !canSignIn(t, e, u.Email, "password-of-viewer") {
		t.Fatal("the password must still sign in")
	}
	b.Login(u.Email, "password-of-viewer")
	if !signedIn(t, b) {
		t.Fatal("a browser signed in afterwards must stay signed in")
	}
}

// The JSON API: POST /api/me/password with a token asks for the current password (422
// with the field, nothing changed) and signs out every browser session of the user;
// POST /api/me/sessions/end-others does the same without the password; the token keeps
// working; a token needs tokens.manage for both; a browser session that calls them (with
// its CSRF token) stays signed in.
func TestAccountAPI(t *testing.T) {
	e := webtest.New(t, nil)
	u, tok := e.User("member")
	b := e.NewBrowser()
	b.Login(u.Email, "password-of-member")
	before := credentials(t, e, u.ID)

	var refused struct {
		Error  string            `json:"error"`
		Fields map[string]string `json:"fields"`
	}
	for _, body := range []string{`{"current_password": "password-of-owner", "new_password": "the new password"}`,
		`{"new_password": "the new password"}`, `{"current_password": "password-of-member", "new_password": "short"}`, `[1]`, `not json`} {
		refused.Fields = nil
		if st := e.JSON("POST", "/api/me/password", tok, body, &refused); st != 422 || refused.Error == "" || len(refused.Fields) == 0 {
			t.Fatalf("%s: %d %+v, want 422 with fields", body, st, refused)
		}
	}
	refused.Fields = nil
	if st := e.JSON("POST", "/api/me/password", tok, `{"current_password": "password-of-owner", "new_password": "the new password"}`, &refused); st != 422 ||
		len(refused.Fields) != 1 || refused.Fields["current_password"] == "" {
		t.Fatalf("a wrong current password: %d %+v, want 422 with the message on current_password alone", st, refused)
	}
	if credentials(t, e, u.ID) != before || !signedIn(t, b) {
		t.Fatal("a refused change changed something")
	}
	// A token without tokens.manage may do neither.
	_, narrow := e.User("member", perm.RegionsView)
	for _, path := range []string{"/api/me/password", "/api/me/sessions/end-others"} {
		if st, body := e.Raw("POST", path, narrow, `{}`); st != 403 {
			t.Fatalf("%s with a regions.view token: %d %s", path, st, body)
		}
	}

	var ok struct {
		Data struct {
			SessionsEnded bool `json:"sessions_ended"`
		} `json:"data"`
	}
	if st := e.JSON("POST", "/api/me/password", tok, `{"current_password": "password-of-member", "new_password": "the new password"}`, &ok); st != 200 || !ok.Data.SessionsEnded {
		t.Fatalf("the change: %d %+v", st, ok)
	}
	if signedIn(t, b) {
		t.Fatal("the browser is still signed in after the password change")
	}
	if st := e.JSON("GET", "/api/me", tok, nil, nil); st != 200 {
		t.Fatalf("the token after the change: %d", st)
	}
	if canSignIn(t, e, u.Email, "password-of-member") || !canSignIn(t, e, u.Email, "the new password") {
		t.Fatal("the old password must not sign in, the new one must")
	}

	b.Login(u.Email, "the new password")
	ok.Data.SessionsEnded = false
	if st := e.JSON("POST", "/api/me/sessions/end-others", tok, nil, &ok); st != 200 || !ok.Data.SessionsEnded {
		t.Fatalf("end others with a token: %d %+v", st, ok)
	}
	if signedIn(t, b) {
		t.Fatal("end-others with a token leaves a browser signed in")
	}

	// A browser session that calls the API (with its CSRF token) stays signed in.
	a, c := e.NewBrowser(), e.NewBrowser()
	a.Login(u.Email, "the new password")
	c.Login(u.Email, "the new password")
	a.Get("/regions")
	req := sessionReq("POST", "/api/me/sessions/end-others", "application/json", "{}", map[string]string{"X-CSRF-Token": a.CSRF})
	if resp, body := a.Do(req); resp.StatusCode != 200 {
		t.Fatalf("end others with a session: %d %s", resp.StatusCode, body)
	}
	if !signedIn(t, a) || signedIn(t, c) {
		t.Fatal("the calling session must stay signed in, the other one not")
	}
	req = sessionReq("POST", "/api/me/password", "application/json", `{"current_password": "the new password", "new_password": "the third password"}`, map[string]string{"X-CSRF-Token": a.CSRF})
	if resp, body := a.Do(req); resp.StatusCode != 200 {
		t.Fatalf("password change with a session: %d %s", resp.StatusCode, body)
	}
	if !signedIn(t, a) {
		t.Fatal("the session that changed the password through the API was signed out")
	}
}

// Wrong current passwords are counted per user, like the sign-in's per-account failures:
// after 5, the next attempt waits (429 with Retry-After), even with the right password,
// and nothing changes.
func TestPasswordChangeIsThrottled(t *testing.T) {
	e := webtest.New(t, nil)
	u, tok := e.User("owner")
	before := credentials(t, e, u.ID)
	for i := 0; i < 5; i++ {
		if st := e.JSON("POST", "/api/me/password", tok, `{"current_password": "guess number `+strconv.Itoa(i)+`", "new_password": "the new password"}`, nil); st != 422 {
			t.Fatalf("guess %d: %d", i, st)
		}
	}
	resp := e.Do(webtest.Req("POST", "/api/me/password", tok, `{"current_password": "password-of-owner", "new_password": "the new password"}`))
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("after 5 wrong passwords: %d (Retry-After %q)", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if credentials(t, e, u.ID) != before {
		t.Fatal("a throttled change changed something")
	}
	time.Sleep(1100 * time.Millisecond)
	if st := e.JSON("POST", "/api/me/password", tok, `{"current_password": "password-of-owner", "new_password": "the new password"}`, nil); st != 200 {
		t.Fatalf("after the delay, the right password: %d", st)
	}
}

// Another console of the installation signs the other sessions out too: it keeps the
// credentials it read until the database announces a change (web/credcache.go), and
// the generation's change is announced like any change to users.
func TestEndOtherSessionsReachesOtherConsoles(t *testing.T) {
	e := webtest.New(t, nil)
	e.Run()
	second := webtest.NewOn(t, e.Store, e.Cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { second.S.Hub.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	<-second.S.Hub.Ready()

	u, _ := e.User("member")
	a, b := e.NewBrowser(), second.NewBrowser()
	a.Login(u.Email, "password-of-member")
	b.Login(u.Email, "password-of-member")
	for i := 0; i < 3; i++ { // the second console keeps the session and the user now
		if !signedIn(t, b) {
			t.Fatal("the browser of the second console must be signed in")
		}
	}
	a.Get("/account")
	if resp, _ := a.PostForm("/account/sessions/end-others", url.Values{}, true); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("end others: %d", resp.StatusCode)
	}
	deadline := time.Now().Add(5 * time.Second)
	for signedIn(t, b) {
		if time.Now().After(deadline) {
			t.Fatal("the second console still signs the browser in 5 s after its sessions were ended")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !signedIn(t, a) {
		t.Fatal("the browser that asked was signed out")
	}
}
