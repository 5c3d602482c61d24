package apitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"runr.dev/console/store/storetest"
	"runr.dev/console/testcluster"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// runrBinary builds the console binary once for the tests that run it as a process.
func runrBinary(t *testing.T) string {
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "runr-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "runr")
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

// syncBuffer is a process's log, written by its output copier and read by the test.
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

// process is a console running as its own process.
type process struct {
	t    *testing.T
	cmd  *exec.Cmd
	env  []string
	addr string
	log  *syncBuffer
}

func (p *process) run(args ...string) string {
	p.t.Helper()
	cmd := exec.Command(runrBinary(p.t), args...)
	cmd.Env = p.env
	out, err := cmd.Output()
	if err != nil {
		p.t.Fatalf("runr %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

func (p *process) start() {
	p.t.Helper()
	p.cmd = exec.Command(runrBinary(p.t), "serve")
	p.cmd.Env = p.env
	p.log = &syncBuffer{}
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get("http://" + p.addr + "/healthz"); err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.t.Fatalf("the console did not start: %s", p.log)
}

func (p *process) kill() {
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
}

func (p *process) api(method, path, token string, body any, out any) int {
	p.t.Helper()
	var rd *bytes.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, "http://"+p.addr+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		_ = json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode
}

func newProcess(t *testing.T, extra ...string) *process {
	env := append(os.Environ(), "DATABASE_URL="+storetest.NewURL(t), "RUNR_APP_KEY="+storetest.AppKey,
		"RUNR_CHART_MIRROR="+repo.URL, "RUNR_LOCAL_CLUSTER_HOST=127.0.0.2", "RUNR_ALLOW_LOOPBACK_CLUSTERS=true", "RUNR_STATUS_INTERVAL=1h", "RUNR_LOG_LEVEL=debug")
	return processWith(t, append(env, extra...))
}

// processWith is a console process with this environment and an address of its own.
func processWith(t *testing.T, env []string) *process {
	addr := fmt.Sprintf("127.0.0.1:%d", closedPort(t))
	// Its own address is its public URL (the agents' address) unless env says another.
	p := &process{t: t, env: append(append([]string{"RUNR_APP_URL=http://" + addr}, env...), "RUNR_ADDR="+addr), addr: addr}
	t.Cleanup(func() {
		if p.cmd != nil && p.cmd.ProcessState == nil {
			p.kill()
		}
	})
	return p
}

// replica is a second console process on the same database (another replica).
func (p *process) replica() *process {
	var env []string
	for _, kv := range p.env {
		if !strings.HasPrefix(kv, "RUNR_ADDR=") {
			env = append(env, kv)
		}
	}
	return processWith(p.t, env)
}

// ranJob reports whether the process's log says it started a job (attempt n, or any with n 0).
func (p *process) ranJob(id string, n int) bool {
	for _, line := range strings.Split(p.log.String(), "\n") {
		if strings.Contains(line, `msg="job started"`) && strings.Contains(line, "job="+id) &&
			(n == 0 || strings.Contains(line, fmt.Sprintf("attempt=%d", n))) {
			return true
		}
	}
	return false
}

// TestKilledDuringZotInstall runs two console processes on one database (two replicas),
// starts a region's setup through one, kills (SIGKILL) the process that runs it while it
// installs Zot, and checks: the job ran on one process at a time, the other process took
// it over once its lease expired and finished it, the job's progress reached a JSON feed
// of the other process all along, and the killed console starts again and serves.
func TestKilledDuringZotInstall(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	p := newProcess(t)
	p.run("migrate")
	p.run("user", "create", "--email", "ops@example.com", "--role", "owner", "--password", "correct horse battery")
	tok := p.run("token", "create", "--email", "ops@example.com", "--name", "test", "--scopes", "*")
	p.start()
	q := p.replica()
	q.start()

	var ans setupAnswer
	if st := p.api("POST", "/api/registry-setup/start", tok, setupBody("crash", c.Kubeconfig(), nil), &ans); st != 202 {
		t.Fatalf("start: %d", st)
	}
	// A JSON feed on each process follows the job from the start to its end.
	feeds := []*jobFeed{followFeed(t, p, tok, ans.JobID), followFeed(t, q, tok, ans.JobID)}
	waitZotRunning(t, p, tok, ans.JobID)
	holder, other := p, q
	if q.ranJob(ans.JobID, 1) {
		holder, other = q, p
	}
	if !holder.ranJob(ans.JobID, 1) || other.ranJob(ans.JobID, 0) {
		t.Fatalf("the job must run on exactly one process:\n%s\n---\n%s", p.log, q.log)
	}
	holder.kill()
	killedAt := time.Now()
	t.Log("the console running the job was killed during the Zot install")

	job := waitJobDone(t, other, tok, ans.JobID, 2*time.Minute)
	if job.Status != "succeeded" || job.Attempts != 2 {
		t.Fatalf("after the kill: %+v\n%s", job, other.log)
	}
	if !other.ranJob(ans.JobID, 2) {
		t.Fatalf("the other process must have resumed the job:\n%s", other.log)
	}
	t.Logf("taken over and finished %s after the kill (lease 15 s)", time.Since(killedAt).Round(time.Second))
	var evs struct{ Data []struct{ Message string } }
	other.api("GET", "/api/jobs/"+ans.JobID+"/events", tok, nil, &evs)
	found := false
	for _, e := range evs.Data {
		found = found || strings.Contains(e.Message, "Resuming after the console restarted")
	}
	if !found {
		t.Fatal("the resumed job must say so in its log")
	}
	// The feed on the surviving process saw every event, the end included; the one on the
	// killed process saw the events up to the kill.
	survivor := feeds[0]
	if other == q {
		survivor = feeds[1]
	}
	if seen := survivor.wait(t); seen != len(evs.Data) {
		t.Fatalf("the survivor's feed saw %d of %d events", seen, len(evs.Data))
	}
	holder.start()
	if st := holder.api("GET", "/api/jobs/"+ans.JobID, tok, nil, nil); st != 200 {
		t.Fatalf("the restarted console: %d", st)
	}
}

// waitZotRunning waits until the setup's Zot step runs.
func waitZotRunning(t *testing.T, p *process, tok, id string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var job struct {
			Data struct {
				Steps []struct{ Name, Status string }
			}
		}
		p.api("GET", "/api/jobs/"+id, tok, nil, &job)
		for _, s := range job.Data.Steps {
			if s.Name == "zot" && s.Status == "running" {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Zot step never ran: %+v", job)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// endedJob is what waitJobDone returns.
type endedJob struct {
	Status   string
	Error    string
	Attempts int
}

// waitJobDone polls a job through a process until it ends.
func waitJobDone(t *testing.T, p *process, tok, id string, timeout time.Duration) endedJob {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var job struct{ Data endedJob }
		p.api("GET", "/api/jobs/"+id, tok, nil, &job)
		if job.Data.Status == "succeeded" || job.Data.Status == "failed" || time.Now().After(deadline) {
			return job.Data
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// jobFeed follows a job's JSON feed (long polling) on one process.
type jobFeed struct {
	done chan int
}

// followFeed reads the job's events through a process until the job ends or the process
// goes; wait returns how many events it saw.
func followFeed(t *testing.T, p *process, tok, id string) *jobFeed {
	f := &jobFeed{done: make(chan int, 1)}
	go func() {
		var last int64
		seen := 0
		for {
			var ans struct {
				Data      []struct{ ID int64 }
				JobStatus string `json:"job_status"`
			}
			if st := p.apiNoFatal("GET", fmt.Sprintf("/api/jobs/%s/events?after=%d&wait=20", id, last), tok, &ans); st != 200 {
				f.done <- seen
				return
			}
			for _, e := range ans.Data {
				last = e.ID
				seen++
			}
			if len(ans.Data) == 0 && (ans.JobStatus == "succeeded" || ans.JobStatus == "failed") {
				f.done <- seen
				return
			}
		}
	}()
	return f
}

func (f *jobFeed) wait(t *testing.T) int {
	select {
	case n := <-f.done:
		return n
	case <-time.After(time.Minute):
		t.Fatal("the feed did not end")
		return 0
	}
}

// apiNoFatal is api for a goroutine: a failed request is status 0.
func (p *process) apiNoFatal(method, path, token string, out any) int {
	req, _ := http.NewRequest(method, "http://"+p.addr+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	if out != nil {
		_ = json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode
}
