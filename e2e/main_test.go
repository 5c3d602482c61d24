// Package e2e drives the console in a real browser: headless Chromium (Debian's
// chromium package) through chromedp, against the real `runr` binary, a real PostgreSQL
// and simulated clusters with the stand-in charts. Screenshots of each flow's final
// state land under $ARTIFACTS/e2e (default test-artifacts/ at the module root).
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"runr.dev/console/crypt"
	"runr.dev/console/store"
	"runr.dev/console/store/storetest"
	"runr.dev/console/testcluster"
)

// repo is the stand-in chart repository every test of the package shares.
var repo *testcluster.ChartRepo

// chromium is the browser the tests drive: Debian's package, never a download.
const chromium = "/usr/bin/chromium"

func TestMain(m *testing.M) {
	var err error
	// Screenshots are of the last run only.
	if dir := artifactsRoot(); dir != "" {
		os.RemoveAll(filepath.Join(dir, "e2e"))
	}
	repo, err = testcluster.StartChartRepo("")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: chart repository:", err)
		os.Exit(1)
	}
	code := m.Run()
	repo.Close()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// artifactsRoot is the test artifacts folder the Makefile names (ARTIFACTS), by default
// test-artifacts/ at the module root.
func artifactsRoot() string {
	if dir := os.Getenv("ARTIFACTS"); dir != "" {
		return dir
	}
	return filepath.Join("..", "test-artifacts")
}

// artifacts is the folder of this package's screenshots.
func artifacts(t *testing.T) string {
	dir := filepath.Join(artifactsRoot(), "e2e")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("artifacts: %v", err)
	}
	return dir
}

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

// runrBinary builds the console binary once for every test of the package.
func runrBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "runr-e2e-bin-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "runr")
		out, err := exec.Command("go", "build", "-o", binPath, "..").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// Users every console of the tests has.
const (
	ownerEmail    = "owner@example.test"
	ownerPassword = "correct horse battery staple"
	viewerEmail   = "viewer@example.test"
	viewerPass    = "viewer sees but does not touch"
)

// console is the real console binary running as a process on its own database.
type console struct {
	t     *testing.T
	URL   string // http://127.0.0.1:PORT
	DBURL string
	env   []string
	cmd   *exec.Cmd
	// exited is closed when cmd has ended (one goroutine waits for it).
	exited chan struct{}
	log    *syncBuffer
	// Store is a connection to the console's database, for the test's own setup
	// (settings) and checks.
	Store *store.Store
}

// startConsole migrates a fresh database, creates an owner and a viewer, and serves.
func startConsole(t *testing.T, extra ...string) *console {
	t.Helper()
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	c := &console{t: t, URL: "http://" + addr, DBURL: storetest.NewURL(t), log: &syncBuffer{}}
	c.env = append(os.Environ(),
		"DATABASE_URL="+c.DBURL,
		"RUNR_APP_KEY="+storetest.AppKey,
		"RUNR_ADDR="+addr,
		"RUNR_APP_URL="+c.URL,
		"RUNR_CHART_MIRROR="+repo.URL,
		// The local-cluster rewrite goes to another loopback address, never outside.
		"RUNR_LOCAL_CLUSTER_HOST=127.0.0.2",
		// The simulated clusters listen on loopback addresses.
		"RUNR_ALLOW_LOOPBACK_CLUSTERS=true",
		"RUNR_STATUS_INTERVAL=1h",
		"RUNR_STORAGE_TEST_TIMEOUT=4s",
		"RUNR_INSTALL_TIMEOUT=120s",
	)
	c.env = append(c.env, extra...)
	c.run("migrate")
	c.run("user", "create", "--email", ownerEmail, "--role", "owner", "--password", ownerPassword)
	c.run("user", "create", "--email", viewerEmail, "--role", "viewer", "--password", viewerPass)

	cipher, err := crypt.NewCipher(storetest.AppKey)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), c.DBURL, cipher)
	if err != nil {
		t.Fatal(err)
	}
	c.Store = st

	// Cleanups run last-in first-out: stop the console before its database is dropped.
	t.Cleanup(func() {
		c.stop()
		st.Close()
		if t.Failed() {
			t.Logf("console log (tail):\n%s", tail(c.log.String(), 60))
		}
	})
	// The port was free when picked; another test package may take it before the console
	// binds it, so a console that exits while starting is started again on another port.
	for attempt := 1; ; attempt++ {
		if c.serve(t) {
			c.waitFirstSweep(t)
			return c
		}
		if attempt == 3 || !strings.Contains(c.log.String(), "address already in use") {
			t.Fatalf("the console did not start: %s", c.log)
		}
		port = freePort(t)
		addr = fmt.Sprintf("127.0.0.1:%d", port)
		c.URL = "http://" + addr
		c.env = append(c.env, "RUNR_ADDR="+addr, "RUNR_APP_URL="+c.URL)
	}
}

// waitFirstSweep waits until the console's status loop finished its first round (it
// records the fleet task "periodic" after the sweep), so that the sweep at the start
// never checks the regions a test creates afterwards with a health of its own.
func (c *console) waitFirstSweep(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var n int
		if err := c.Store.DB.QueryRowContext(context.Background(), `SELECT count(*) FROM fleet_tasks WHERE name = 'periodic'`).Scan(&n); err == nil && n > 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the console's first status sweep did not finish: %s", tail(c.log.String(), 20))
}

// serve starts `runr serve` and waits for its /healthz; false when the process ended first.
func (c *console) serve(t *testing.T) bool {
	t.Helper()
	c.cmd = exec.Command(runrBinary(t), "serve")
	c.cmd.Env = c.env
	c.cmd.Stdout, c.cmd.Stderr = c.log, c.log
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) { _ = cmd.Wait(); close(exited) }(c.cmd, c.exited)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-c.exited:
			return false
		default:
		}
		if resp, err := http.Get(c.URL + "/healthz"); err == nil {
			resp.Body.Close()
			// Another program on the port would answer too: the console must still run.
			select {
			case <-c.exited:
				return false
			default:
				return true
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the console did not answer /healthz in 30 s: %s", c.log)
	return false
}

func (c *console) run(args ...string) string {
	c.t.Helper()
	cmd := exec.Command(runrBinary(c.t), args...)
	cmd.Env = c.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		c.t.Fatalf("runr %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// stop ends the console: SIGTERM, then SIGKILL when it lingers.
func (c *console) stop() {
	if c.cmd == nil || c.cmd.Process == nil {
		return
	}
	select {
	case <-c.exited:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(15 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
}

// holdTaint keeps new pods off every node while a test watches an install run.
var holdTaint = corev1.Taint{Key: "e2e.runr.dev/hold", Value: "true", Effect: corev1.TaintEffectNoSchedule}

// holdScheduling taints every node of the cluster so that the pods an install creates
// stay Pending (its named wait goes on) until release is called. It makes "while the
// install runs" last as long as the test needs, on a cluster that is otherwise fast.
func holdScheduling(t *testing.T, c *testcluster.Cluster) (release func()) {
	t.Helper()
	taint := func(on bool) error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, n := range nodes.Items {
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				node, err := c.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				var taints []corev1.Taint
				for _, x := range node.Spec.Taints {
					if x.Key != holdTaint.Key {
						taints = append(taints, x)
					}
				}
				if on {
					taints = append(taints, holdTaint)
				}
				node.Spec.Taints = taints
				_, err = c.Client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
				return err
			})
			if err != nil {
				return fmt.Errorf("node %s: %w", n.Name, err)
			}
		}
		return nil
	}
	if err := taint(true); err != nil {
		t.Fatalf("hold scheduling: %v", err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			if err := taint(false); err != nil {
				t.Errorf("release scheduling: %v", err)
			}
		})
	}
	t.Cleanup(release)
	return release
}

// cluster starts one simulated cluster for a test; it stops when the test ends.
func cluster(t *testing.T) *testcluster.Cluster {
	t.Helper()
	start := time.Now()
	c := testcluster.New(t, testcluster.Options{Log: func(string, ...any) {}})
	t.Logf("simulated cluster up in %s", time.Since(start).Round(100*time.Millisecond))
	return c
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// syncBuffer is a bytes.Buffer safe for the process's writes and the test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
