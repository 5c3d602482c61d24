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

	"runr.dev/console/handlers"
	"runr.dev/console/web/webtest"
)

var csrfMeta = regexp.MustCompile(`name="csrf-token" content="([^"]*)"`)

// loginFrom signs in through the form from a loopback source address (127.0.0.N) and
// returns the status and how long the POST took.
func loginFrom(t *testing.T, base, src, email, password string) (int, time.Duration) {
	t.Helper()
	return loginWith(t, browserAt(src, nil), base, email, password)
}

// browserAt is a client whose connections come from a loopback address, with a cookie
// jar (a new one when jar is nil).
func browserAt(src string, jar http.CookieJar) *http.Client {
	if jar == nil {
		jar, _ = cookiejar.New(nil)
	}
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	return &http.Client{Jar: jar, Transport: &http.Transport{DialContext: d.DialContext},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// loginWith signs in through the form with a client; the status and how long the POST took.
func loginWith(t *testing.T, c *http.Client, base, email, password string) (int, time.Duration) {
	t.Helper()
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

// TestLoginThrottleIsADelay: failures from five addresses slow those addresses down but do
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
	// Right away an address that failed must wait a moment...
	if got, _ := loginFrom(t, base, "127.0.0.2", u.Email, "password-of-admin"); got != 429 {
		t.Fatalf("right after 5 failures: %d, want 429 (a short delay)", got)
	}
	// ...and then it gets in; the real user gets in from a fresh address at once.
	if got, _ := loginFrom(t, base, "127.0.0.9", u.Email, "password-of-admin"); got != 303 {
		t.Fatalf("the real user from an address without failures: %d, want 303", got)
	}
	time.Sleep(1100 * time.Millisecond)
	if got, _ := loginFrom(t, base, "127.0.0.3", u.Email, "password-of-admin"); got != 303 {
		t.Fatalf("an address that failed, after the delay: %d, want 303", got)
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

// TestSprayerCannotLockOutTheOwner: a sprayer rotating addresses, one wrong guess each
// time its delay ends, is answered 429 once its addresses have failed (it is slowed down)
// while the owner signs in every time: from the browser it signed in with before (the
// device cookie), even at one of the sprayer's addresses, and from an address of its
// own. The owner's browser is delayed by its own failures only.
func TestSprayerCannotLockOutTheOwner(t *testing.T) {
	e := webtest.New(t, nil)
	u, _ := e.User("admin")
	base := e.Listen()
	first, _ := cookiejar.New(nil)
	if got, _ := loginWith(t, browserAt("127.0.0.40", first), base, u.Email, "password-of-admin"); got != 303 {
		t.Fatalf("the owner's first sign-in: %d", got)
	}
	loginURL, _ := url.Parse(base + "/login")
	var device []*http.Cookie
	for _, c := range first.Cookies(loginURL) {
		if c.Name == handlers.DeviceCookie {
			device = append(device, c)
		}
	}
	if len(device) != 1 {
		t.Fatalf("the owner's browser got no device cookie: %v", first.Cookies(loginURL))
	}
	// The owner's browser, signed out: its device cookie only.
	owner := func(src string) *http.Client {
		jar, _ := cookiejar.New(nil)
		jar.SetCookies(loginURL, device)
		return browserAt(src, jar)
	}
	sprayers := []string{"127.0.0.50", "127.0.0.51", "127.0.0.52", "127.0.0.53", "127.0.0.54", "127.0.0.55"}
	slowed := 0
	for round := 0; round < 3; round++ {
		for _, src := range sprayers {
			switch got, _ := loginFrom(t, base, src, u.Email, "a wrong guess!"); got {
			case 429:
				slowed++
			case 401:
			default:
				t.Fatalf("a sprayer's guess: %d", got)
			}
		}
		// The owner, in its browser at one of the sprayer's addresses, and from its own.
		if got, _ := loginWith(t, owner(sprayers[round]), base, u.Email, "password-of-admin"); got != 303 {
			t.Fatalf("round %d: the owner's browser at a sprayer's address: %d, want 303", round, got)
		}
		if got, _ := loginFrom(t, base, "127.0.0.41", u.Email, "password-of-admin"); got != 303 {
			t.Fatalf("round %d: the owner from its own address: %d, want 303", round, got)
		}
	}
	// 6 free guesses of the first round, then every address waits the account's delay.
	if slowed < 12 {
		t.Fatalf("the sprayer was answered 429 on %d of 18 guesses, want at least 12", slowed)
	}
	// The sprayer's failures never reached the owner's browser; its own do.
	for i := 0; i < 5; i++ {
		if got, _ := loginWith(t, owner("127.0.0.40"), base, u.Email, "the owner's typo"); got != 401 {
			t.Fatalf("the owner's typo %d: %d", i, got)
		}
	}
	if got, _ := loginWith(t, owner("127.0.0.40"), base, u.Email, "password-of-admin"); got != 429 {
		t.Fatalf("the owner's browser after five typos of its own: %d, want 429", got)
	}
	// A device cookie is bound to its account: with another e-mail it is no device.
	if got, _ := loginWith(t, owner("127.0.0.42"), base, "someone-else@example.com", "a wrong guess!"); got != 401 {
		t.Fatalf("another account with the owner's device cookie: %d", got)
	}
	var n int
	e.Store.DB.Get(&n, `SELECT count(*) FROM login_failures WHERE key LIKE 'device|%'`)
	if n != 1 {
		t.Fatalf("%d device rows, want 1 (the owner's browser)", n)
	}
}
