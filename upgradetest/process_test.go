package upgradetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// logBuffer is a process's output, written by its copier and read by the test.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// console is one version of the console: its binary, environment and (when serving) process.
type console struct {
	t    *testing.T
	bin  string
	env  []string
	addr string
	cmd  *exec.Cmd
	log  *logBuffer
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func newConsole(t *testing.T, bin string, env []string) *console {
	addr := freeAddr(t)
	c := &console{t: t, bin: bin, env: append(append([]string{}, env...), "RUNR_ADDR="+addr), addr: addr}
	t.Cleanup(func() {
		if c.cmd != nil && c.cmd.ProcessState == nil {
			_ = c.cmd.Process.Kill()
			_ = c.cmd.Wait()
		}
	})
	return c
}

// run runs a subcommand to its end and returns its stdout.
func (c *console) run(args ...string) string {
	c.t.Helper()
	cmd := exec.Command(c.bin, args...)
	cmd.Env = c.env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		c.t.Fatalf("runr %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return strings.TrimSpace(out.String())
}

// serve starts `runr serve` and returns once /readyz answers 200.
func (c *console) serve() {
	c.t.Helper()
	c.cmd = exec.Command(c.bin, "serve")
	c.cmd.Env = c.env
	c.log = &logBuffer{}
	c.cmd.Stdout, c.cmd.Stderr = c.log, c.log
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := c.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get("http://" + c.addr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("the console did not become ready: %s", c.log)
}

// stop ends `runr serve` as Kubernetes ends a pod: SIGTERM, then its graceful shutdown.
func (c *console) stop() {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
}

// api sends a request with a bearer token and decodes the JSON answer; it returns the status.
func (c *console) api(method, path, token string, body, out any) int {
	c.t.Helper()
	st, raw, err := call("http://"+c.addr, method, path, token, body)
	if err != nil {
		c.t.Fatal(err)
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			c.t.Fatalf("%s %s: %d %s", method, path, st, raw)
		}
	}
	return st
}

// call sends one API request.
func call(base, method, path, token string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, err
}

// waitJob polls a job until it ends and fails the test unless it succeeded.
func (c *console) waitJob(token, id string) {
	c.t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		var j struct {
			Data struct{ Status, Error, Title string }
		}
		c.api("GET", "/api/jobs/"+id, token, nil, &j)
		switch j.Data.Status {
		case "succeeded":
			return
		case "failed", "cancelled":
			c.t.Fatalf("job %s (%s) %s: %s", id, j.Data.Title, j.Data.Status, j.Data.Error)
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.t.Fatalf("job %s did not end", id)
}

// switchProxy is the Service in front of the consoles: it sends every request to the
// console it points at, and is switched from the old to the new one as a rollout does.
type switchProxy struct {
	target atomic.Value // host:port
	srv    *httptest.Server
}

func newSwitchProxy(t *testing.T, addr string) *switchProxy {
	p := &switchProxy{}
	p.target.Store(addr)
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(&url.URL{Scheme: "http", Host: p.target.Load().(string)})
	}}
	p.srv = httptest.NewServer(rp)
	t.Cleanup(p.srv.Close)
	return p
}

func (p *switchProxy) point(addr string) { p.target.Store(addr) }

// probe is one request of the prober and its outcome.
type probe struct {
	At     time.Time
	What   string
	Status int
	Err    string
}

// probeCheck is one request the prober repeats with the status it expects.
type probeCheck struct {
	what, path, token string
	want              int
	// body checks the answer (nil: the status alone).
	body func([]byte) string
}

// prober calls the API through the proxy every 100 ms and keeps every failure.
type prober struct {
	mu       sync.Mutex
	failures []probe
	count    int
	stop     chan struct{}
	done     chan struct{}
}

func startProber(base string, checks []probeCheck) *prober {
	p := &prober{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			for _, ch := range checks {
				p.one(base, ch)
			}
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

// one runs one check and records a failure.
func (p *prober) one(base string, ch probeCheck) {
	at := time.Now()
	st, raw, err := call(base, "GET", ch.path, ch.token, nil)
	pr := probe{At: at, What: ch.what, Status: st}
	switch {
	case err != nil:
		pr.Err = err.Error()
	case st != ch.want:
		pr.Err = fmt.Sprintf("status %d, want %d", st, ch.want)
	case ch.body != nil:
		pr.Err = ch.body(raw)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.count++
	if pr.Err != "" {
		p.failures = append(p.failures, pr)
	}
}

// finish stops the prober and returns its failures and how many probes it sent.
func (p *prober) finish() ([]probe, int) {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failures, p.count
}
