package web_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"runr.dev/console/config"
	"runr.dev/console/ops/observability"
	"runr.dev/console/store"
	"runr.dev/console/store/storetest"
	"runr.dev/console/web/webtest"
)

// cutLine is a TCP relay on loopback between the console and PostgreSQL that a test
// cuts (every connection closed, new ones refused) and mends.
type cutLine struct {
	t      *testing.T
	addr   string
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
}

func newCutLine(t *testing.T, target string) *cutLine {
	l := &cutLine{t: t, target: target}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l.addr = ln.Addr().String()
	l.serve(ln)
	t.Cleanup(l.cut)
	return l
}

func (l *cutLine) serve(ln net.Listener) {
	l.mu.Lock()
	l.ln = ln
	l.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", l.target)
			if err != nil {
				c.Close()
				continue
			}
			l.mu.Lock()
			l.conns = append(l.conns, c, up)
			l.mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
}

// cut closes the listener and every connection: the database is away.
func (l *cutLine) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ln != nil {
		l.ln.Close()
		l.ln = nil
	}
	for _, c := range l.conns {
		c.Close()
	}
	l.conns = nil
}

// mend listens again on the same address: the database is back.
func (l *cutLine) mend() {
	ln, err := net.Listen("tcp", l.addr)
	if err != nil {
		l.t.Fatal(err)
	}
	l.serve(ln)
}

// TestDatabaseOutage: while PostgreSQL cannot be reached, a valid token (one the console
// never saw, so it must be looked up) is answered 503 with Retry-After, never "not valid";
// a signed-in browser's pages and the anonymous sign-in form answer 503 or serve, never
// 500; /healthz answers and /readyz says 503. When the database is back, the same token
// and session work without a restart.
func TestDatabaseOutage(t *testing.T) {
	base := storetest.New(t)
	u, err := url.Parse(base.URL)
	if err != nil {
		t.Fatal(err)
	}
	line := newCutLine(t, u.Host)
	u.Host = line.addr
	st, err := store.Open(context.Background(), u.String(), base.Cipher)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg, err := config.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	cfg.DatabaseURL, cfg.AppKey = u.String(), storetest.AppKey
	e := webtest.NewOn(t, st, cfg)
	_, used := e.User("admin")
	_, fresh := e.User("admin")
	b, _ := signIn(e, "owner")
	if got, body := e.Raw("GET", "/api/knative-regions", used, ""); got != 200 {
		t.Fatalf("before the outage: %d %s", got, body)
	}

	agentWS := func() *http.Response {
		t.Helper()
		req := webtest.Req("GET", observability.AgentPath, "some-agent-token", "")
		req.Host = "127.0.0.1" // the internal API answers on the console's own addresses
		resp := e.Do(req)
		resp.Body.Close()
		return resp
	}
	if resp := agentWS(); resp.StatusCode != 401 {
		t.Fatalf("an unknown agent token before the outage: %d, want 401", resp.StatusCode)
	}

	line.cut()
	// An agent is told to come back, not that its token is unknown.
	if resp := agentWS(); resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("an agent during the outage: %d (Retry-After %q), want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	for _, tok := range []string{fresh, used} {
		resp := e.Do(webtest.Req("GET", "/api/knative-regions", tok, ""))
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || strings.Contains(string(body), "not valid") {
			t.Errorf("a valid token during the outage: %d (Retry-After %q) %s, want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	}
	for _, path := range []string{"/regions", "/jobs", "/users"} {
		resp, body := b.Get(path)
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "database") {
			t.Errorf("%s of a signed-in browser during the outage: %d %.300s, want 503", path, resp.StatusCode, body)
		}
	}
	anon := e.NewBrowser()
	if resp, body := anon.Get("/login"); resp.StatusCode != 200 && resp.StatusCode != 503 {
		t.Errorf("/login during the outage: %d %.300s", resp.StatusCode, body)
	}
	resp := e.Do(webtest.Req("POST", "/login", "", "email=a%40b.test&password=whatever"))
	if resp.StatusCode >= 500 && resp.StatusCode != 503 {
		t.Errorf("a sign-in during the outage: %d", resp.StatusCode)
	}
	if got, _ := e.Raw("GET", "/healthz", "", ""); got != 200 {
		t.Errorf("/healthz during the outage: %d", got)
	}
	if got, _ := e.Raw("GET", "/readyz", "", ""); got != 503 {
		t.Errorf("/readyz during the outage: %d", got)
	}
	if strings.Contains(e.Log.String(), "unhandled error") || strings.Contains(e.Log.String(), "request failed") {
		t.Errorf("the outage was logged as a failure of the console: %s", e.Log.String())
	}

	line.mend()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, _ := e.Raw("GET", "/api/knative-regions", fresh, "")
		resp, _ := b.Get("/regions")
		if got == 200 && resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the outage: the token %d, the session %d", got, resp.StatusCode)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
