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

// process is a console running as its own process.
type process struct {
	t    *testing.T
	cmd  *exec.Cmd
	env  []string
	addr string
	log  *bytes.Buffer
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
	p.log = &bytes.Buffer{}
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
	addr := fmt.Sprintf("127.0.0.1:%d", closedPort(t))
	env := append(os.Environ(), "DATABASE_URL="+storetest.NewURL(t), "RUNR_APP_KEY="+storetest.AppKey, "RUNR_ADDR="+addr,
		"RUNR_CHART_MIRROR="+repo.URL, "RUNR_LOCAL_CLUSTER_HOST=127.0.0.2", "RUNR_ALLOW_LOOPBACK_CLUSTERS=true", "RUNR_STATUS_INTERVAL=1h", "RUNR_LOG_LEVEL=debug")
	p := &process{t: t, env: append(env, extra...), addr: addr}
	t.Cleanup(func() {
		if p.cmd != nil && p.cmd.ProcessState == nil {
			p.kill()
		}
	})
	return p
}

// TestKilledDuringZotInstall kills the console (SIGKILL) while it installs Zot, starts
// it again, and checks that the job resumes and finishes.
func TestKilledDuringZotInstall(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	p := newProcess(t)
	p.run("migrate")
	p.run("user", "create", "--email", "ops@example.com", "--role", "owner", "--password", "correct horse battery")
	tok := p.run("token", "create", "--email", "ops@example.com", "--name", "test", "--scopes", "*")
	p.start()

	var ans setupAnswer
	if st := p.api("POST", "/api/registry-setup/start", tok, setupBody("crash", c.Kubeconfig(), nil), &ans); st != 202 {
		t.Fatalf("start: %d", st)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var job struct {
			Data struct {
				Steps []struct{ Name, Status string }
			}
		}
		p.api("GET", "/api/jobs/"+ans.JobID, tok, nil, &job)
		running := false
		for _, s := range job.Data.Steps {
			if s.Name == "zot" && s.Status == "running" {
				running = true
			}
		}
		if running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Zot step never ran: %+v", job)
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.kill()
	t.Log("console killed during the Zot install")

	p.start()
	deadline = time.Now().Add(2 * time.Minute)
	for {
		var job struct {
			Data struct {
				Status   string
				Error    string
				Attempts int
			}
		}
		p.api("GET", "/api/jobs/"+ans.JobID, tok, nil, &job)
		if job.Data.Status == "succeeded" {
			if job.Data.Attempts < 2 {
				t.Fatalf("the job must have been resumed: attempts %d", job.Data.Attempts)
			}
			break
		}
		if job.Data.Status == "failed" || time.Now().After(deadline) {
			t.Fatalf("after the restart: %+v\n%s", job.Data, p.log)
		}
		time.Sleep(200 * time.Millisecond)
	}
	var evs struct{ Data []struct{ Message string } }
	p.api("GET", "/api/jobs/"+ans.JobID+"/events", tok, nil, &evs)
	found := false
	for _, e := range evs.Data {
		if strings.Contains(e.Message, "Resuming after the console restarted") {
			found = true
		}
	}
	if !found {
		t.Fatal("the resumed job must say so in its log")
	}
}
