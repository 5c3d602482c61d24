// Package webtest starts the console's web side on a fresh test database, for the
// handler, authorisation and browser tests.
package webtest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"runr.dev/console/config"
	"runr.dev/console/ops"
	"runr.dev/console/ops/observability"
	"runr.dev/console/store"
	"runr.dev/console/store/storetest"
	"runr.dev/console/web"
)

// Env is a console under test.
type Env struct {
	T     testing.TB
	Store *store.Store
	Cfg   *config.Config
	Kube  *ops.Service
	S     *web.Server
	// Log holds everything the console logged, at every level (tests read it to check
	// that no secret reaches the log).
	Log *LogBuffer
}

// LogBuffer is a console's log, safe for concurrent writes.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything logged so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// capturedLogger logs at debug level into buf, and to stderr too when RUNR_TEST_LOG is set.
func capturedLogger(buf *LogBuffer) *slog.Logger {
	var w io.Writer = buf
	if os.Getenv("RUNR_TEST_LOG") != "" {
		w = io.MultiWriter(buf, os.Stderr)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// Logger is quiet unless RUNR_TEST_LOG is set.
func Logger() *slog.Logger {
	if os.Getenv("RUNR_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// New builds the console on a fresh database; change cfg before it is used with tweak.
func New(t testing.TB, tweak func(*config.Config)) *Env {
	t.Helper()
	st := storetest.New(t)
	cfg, err := config.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	cfg.DatabaseURL = st.URL
	cfg.AppKey = storetest.AppKey
	// The simulated clusters listen on 127.0.0.1; a test that checks the refusal turns it off.
	cfg.AllowLoopbackClusters = true
	// The agents of test regions get an address (on simulated nodes they never run; a
	// test that runs one sets its own): without one the console refuses to install them.
	cfg.AgentWSURL = "ws://127.0.0.1:8080" + observability.AgentPath
	if tweak != nil {
		tweak(cfg)
	}
	buf := &LogBuffer{}
	log := capturedLogger(buf)
	svc := ops.NewService(st, cfg, log)
	s := web.New(st, cfg, svc, log, "test")
	return &Env{T: t, Store: st, Cfg: cfg, Kube: svc, S: s, Log: buf}
}

// NewOn builds another console on an existing store with its own settings (a second
// process of the same installation, configured otherwise).
func NewOn(t testing.TB, st *store.Store, cfg *config.Config) *Env {
	t.Helper()
	buf := &LogBuffer{}
	log := capturedLogger(buf)
	svc := ops.NewService(st, cfg, log)
	return &Env{T: t, Store: st, Cfg: cfg, Kube: svc, S: web.New(st, cfg, svc, log, "test"), Log: buf}
}

// Do sends a request through the app in memory.
func (e *Env) Do(req *http.Request) *http.Response {
	e.T.Helper()
	resp, err := e.S.App.Test(req, 30_000)
	if err != nil {
		e.T.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	return resp
}

// User creates a user of a role and returns it with a token of the given scopes.
func (e *Env) User(role string, scopes ...string) (*store.User, string) {
	e.T.Helper()
	ctx := context.Background()
	u, err := e.Store.CreateUser(ctx, role+"-"+strings.ToLower(store.NewID())+"@example.com", "", role, "password-of-"+role)
	if err != nil {
		e.T.Fatal(err)
	}
	if len(scopes) == 0 {
		scopes = []string{"*"}
	}
	_, plain, err := e.Store.CreateAPIToken(ctx, u.ID, "test", scopes, nil)
	if err != nil {
		e.T.Fatal(err)
	}
	return u, plain
}

// Req builds a request with an optional bearer token and JSON body.
func Req(method, path, token, body string) *http.Request {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, r)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return req
}

// Browser is a cookie-keeping client of the in-memory app, with the page's CSRF token.
type Browser struct {
	E       *Env
	Cookies map[string]string
	CSRF    string
}

// NewBrowser returns a browser without a session.
func (e *Env) NewBrowser() *Browser { return &Browser{E: e, Cookies: map[string]string{}} }

var csrfRe = regexp.MustCompile(`name="csrf-token" content="([^"]*)"`)

// Do sends a request with the browser's cookies and keeps the ones set.
func (b *Browser) Do(req *http.Request) (*http.Response, string) {
	for k, v := range b.Cookies {
		req.AddCookie(&http.Cookie{Name: k, Value: v})
	}
	resp := b.E.Do(req)
	for _, c := range resp.Cookies() {
		if c.MaxAge < 0 || c.Value == "" {
			delete(b.Cookies, c.Name)
		} else {
			b.Cookies[c.Name] = c.Value
		}
	}
	raw, _ := io.ReadAll(resp.Body)
	body := string(raw)
	if m := csrfRe.FindStringSubmatch(body); m != nil && m[1] != "" {
		b.CSRF = m[1]
	}
	return resp, body
}

// Get fetches a page.
func (b *Browser) Get(path string) (*http.Response, string) {
	return b.Do(httptest.NewRequest(http.MethodGet, path, nil))
}

// PostForm posts a form with the CSRF token (unless withCSRF is false).
func (b *Browser) PostForm(path string, form url.Values, withCSRF bool) (*http.Response, string) {
	if withCSRF {
		form.Set("_csrf", b.CSRF)
	}
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.Do(req)
}

// Login signs in through the form and fails the test when it does not work.
func (b *Browser) Login(email, password string) {
	b.E.T.Helper()
	b.Get("/login")
	resp, body := b.PostForm("/login", url.Values{"email": {email}, "password": {password}}, true)
	if resp.StatusCode != http.StatusSeeOther {
		b.E.T.Fatalf("login as %s: status %d: %s", email, resp.StatusCode, body)
	}
}

// SignedIn is a browser signed in as a new user of role (Env.User).
func (e *Env) SignedIn(role string) *Browser {
	e.T.Helper()
	u, _ := e.User(role)
	b := e.NewBrowser()
	b.Login(u.Email, "password-of-"+role)
	return b
}

// Listen serves the app on a loopback port until the test ends and returns its base URL.
func (e *Env) Listen() string {
	e.T.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		e.T.Fatal(err)
	}
	go e.S.Serve(ln)
	e.T.Cleanup(func() { e.S.App.Shutdown() })
	return "http://" + ln.Addr().String()
}

// Run starts what `runr serve` runs besides HTTP: the hub, the job runners and the
// periodic work, until the test ends.
func (e *Env) Run() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 4)
	go func() { e.S.Hub.Run(ctx); done <- struct{}{} }()
	go func() { e.Kube.RunWorkers(ctx, 8); done <- struct{}{} }()
	go func() { e.Kube.Status.RunBackground(ctx); done <- struct{}{} }()
	go func() { e.Kube.Billing.RunBackground(ctx); done <- struct{}{} }()
	<-e.S.Hub.Ready()
	e.T.Cleanup(func() {
		cancel()
		for i := 0; i < 4; i++ {
			<-done
		}
	})
}

// JSON sends a request and decodes a JSON answer into out (when not nil); it returns the status.
func (e *Env) JSON(method, path, token string, body any, out any) int {
	e.T.Helper()
	var raw string
	if body != nil {
		if s, ok := body.(string); ok {
			raw = s
		} else {
			b, err := json.Marshal(body)
			if err != nil {
				e.T.Fatal(err)
			}
			raw = string(b)
		}
	}
	resp := e.Do(Req(method, path, token, raw))
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			e.T.Fatalf("%s %s: %d, not JSON: %s", method, path, resp.StatusCode, data)
		}
	}
	return resp.StatusCode
}

// WaitJob waits for a job to end and returns its final state.
func (e *Env) WaitJob(id string, timeout time.Duration) *store.Job {
	e.T.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		j, err := e.Store.JobByID(context.Background(), id)
		if err != nil {
			e.T.Fatal(err)
		}
		if j.Done() {
			return j
		}
		time.Sleep(100 * time.Millisecond)
	}
	steps, _ := e.Store.JobSteps(context.Background(), id)
	e.T.Fatalf("job %s did not finish within %s; steps: %+v", id, timeout, steps)
	return nil
}

// Raw sends a request and returns the status and the body as text.
func (e *Env) Raw(method, path, token, body string) (int, string) {
	e.T.Helper()
	resp := e.Do(Req(method, path, token, body))
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}
