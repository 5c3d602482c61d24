package web_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"runr.dev/console/web/webtest"
)

var csrfMeta = regexp.MustCompile(`name="csrf-token" content="([^"]*)"`)

// loginFrom signs in through the form from a loopback source address (127.0.0.N) and
// returns the status and how long the POST took.
func loginFrom(t *testing.T, base, src, email, password string) (int, time.Duration) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c := &http.Client{Jar: jar, Transport: &http.Transport{DialContext: d.DialContext},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(base + "/login")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := csrfMeta.FindSubmatch(page)
	if m == nil {
		t.Fatal("no CSRF token on /login")
	}
	start := time.Now()
	resp, err = c.PostForm(base+"/login", url.Values{"email": {email}, "password": {password}, "_csrf": {string(m[1])}})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, took
}

// TestLoginThrottleIsADelay: failures from five addresses slow the account down but do
// not lock the real user out; one address cannot spray every account; an unknown
// e-mail costs as long as a known one; old failure rows are pruned.
func TestLoginThrottleIsADelay(t *testing.T) {
	e := webtest.New(t, nil)
	u, _ := e.User("admin")
	base := e.Listen()
	for i := 0; i < 5; i++ {
		if got, _ := loginFrom(t, base, "127.0.0."+string(rune('2'+i)), u.Email, "wrong password!"); got != 401 {
			t.Fatalf("failure %d: %d", i, got)
		}
	}
	// Right away the account must wait a moment...
	if got, _ := loginFrom(t, base, "127.0.0.9", u.Email, "password-of-admin"); got != 429 {
		t.Fatalf("right after 5 failures: %d, want 429 (a short delay)", got)
	}
	// ...and then the real user gets in from a fresh address.
	time.Sleep(1100 * time.Millisecond)
	if got, _ := loginFrom(t, base, "127.0.0.9", u.Email, "password-of-admin"); got != 303 {
		t.Fatalf("the real user after the delay: %d, want 303", got)
	}

	// One address trying many accounts is stopped, whatever the e-mail.
	stopped := false
	for i := 0; i < 40 && !stopped; i++ {
		got, _ := loginFrom(t, base, "127.0.0.20", strings.Repeat("x", i+1)+"@example.com", "wrong password!")
		stopped = got == 429
	}
	if !stopped {
		t.Fatal("one address sprayed 40 accounts without being stopped")
	}
	// Another address is not affected.
	if got, _ := loginFrom(t, base, "127.0.0.21", u.Email, "password-of-admin"); got != 303 {
		t.Fatalf("another address: %d", got)
	}

	// An unknown e-mail takes about as long as a known one (a dummy bcrypt).
	var known, unknown time.Duration
	for i := 0; i < 3; i++ {
		_, k := loginFrom(t, base, "127.0.0.30", u.Email, "wrong password!")
		_, n := loginFrom(t, base, "127.0.0.31", "nobody-"+string(rune('a'+i))+"@example.com", "wrong password!")
		known, unknown = known+k, unknown+n
	}
	if unknown < known/2 {
		t.Fatalf("unknown e-mail answers in %s against %s for a known one", unknown/3, known/3)
	}

	// Rows of windows that are over are pruned.
	if _, err := e.Store.DB.Exec(`INSERT INTO login_failures (key, failures, window_start) VALUES ('ip|old', 3, now() - interval '1 day')`); err != nil {
		t.Fatal(err)
	}
	if err := e.Store.RecordLoginFailure(context.Background(), "ip|new", 15*time.Minute); err != nil {
		t.Fatal(err)
	}
	var n int
	e.Store.DB.Get(&n, `SELECT count(*) FROM login_failures WHERE key = 'ip|old'`)
	if n != 0 {
		t.Fatal("old failure rows are kept")
	}
}
