package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"runr.dev/console/testcluster"
)

// functionImage is the function the chart's console deploys: the harness's echo program,
// named through the cluster's registry (which Knative's controller asks over plain HTTP,
// as it does for a private address).
const functionImage = testcluster.ImageMirror + "/ghcr.io/runr-testing/fn:1"

// functionEnv is the console's environment for a region on its own cluster with a real
// data path: the chart repository (upstream's knative-operator among the stand-ins) as the
// pods reach it, the harness's Traefik, no tracing (its images are not built here) and the
// agents' address (the console's Service).
func functionEnv(chartMirror string) map[string]any {
	return map[string]any{
		"RUNR_CHART_MIRROR":         chartMirror,
		"RUNR_TRAEFIK_IMAGE":        testcluster.TraefikImage,
		"RUNR_TRACING_DEFAULT_MODE": "off",
		"RUNR_AGENT_WS_URL":         "ws://runr." + ns + ".svc/api/internal/agent/ws",
	}
}

// consoleAPI calls the chart's console through its Service with a token and decodes the answer.
func consoleAPI(t *testing.T, c *testcluster.Cluster, token, method, path string, body, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req := consoleRequest(t, c, method, path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	client := c.InClusterHTTP()
	client.Timeout = time.Minute
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
		}
	}
	return resp.StatusCode
}

// waitConsoleJob waits for a job of the chart's console to succeed.
func waitConsoleJob(t *testing.T, c *testcluster.Cluster, token, id string) {
	t.Helper()
	for deadline := time.Now().Add(8 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		var ans struct {
			Data struct {
				Kind, Status, Error string
			}
		}
		consoleAPI(t, c, token, "GET", "/api/jobs/"+id, nil, &ans)
		switch ans.Data.Status {
		case "succeeded":
			return
		case "failed", "cancelled":
			var evs struct{ Data []struct{ Message string } }
			consoleAPI(t, c, token, "GET", "/api/jobs/"+id+"/events", nil, &evs)
			t.Fatalf("the console's job %s %s: %s\n%+v\n%s\n%s", ans.Data.Kind, ans.Data.Status, ans.Data.Error, evs.Data,
				c.PodReport("knative-serving", ""), c.PodReport("knative-operator", ""))
		}
	}
	t.Fatalf("the console's job %s did not end", id)
}

// deployFunction has the chart's console make a region of its own cluster (the Knative
// Operator and Serving, Traefik, the agent: all on the real node) and deploy a function
// there; it returns the function's host.
func deployFunction(t *testing.T, c *testcluster.Cluster, token string) string {
	t.Helper()
	ctx := context.Background()
	for _, push := range []func() error{
		func() error { return c.PushTraefik(ctx, io.Discard) },
		func() error { return c.PushKnative(ctx, io.Discard) },
		func() error { return c.PushEcho(ctx, "ghcr.io/runr-testing/fn:1") },
	} {
		if err := push(); err != nil {
			t.Fatal(err)
		}
	}
	if st := consoleAPI(t, c, token, "PATCH", "/api/settings", map[string]any{"image_mirror": testcluster.ImageMirror, "base_domain": "example.test"}, nil); st != 200 {
		t.Fatalf("settings: %d", st)
	}
	var created struct {
		Data   struct{ ID string }
		Jobs   map[string]string
		Fields map[string]string
		Error  string
	}
	if st := consoleAPI(t, c, token, "POST", "/api/knative-regions", map[string]any{"name": "up", "kubeconfig": string(c.PodKubeconfig()), "redis_mode": "none",
		"prometheus_url": "http://prometheus.monitoring.svc:9090", "loki_url": "http://loki.monitoring.svc:3100"}, &created); st != 201 {
		t.Fatalf("the chart's console creates a region of its own cluster: %d %+v", st, created)
	}
	for _, id := range created.Jobs {
		waitConsoleJob(t, c, token, id)
	}
	var job struct {
		JobID string `json:"job_id"`
	}
	if st := consoleAPI(t, c, token, "POST", "/api/knative-regions/"+created.Data.ID+"/install-knative", map[string]any{"version": "1.23"}, &job); st != 202 {
		t.Fatalf("install-knative: %d", st)
	}
	waitConsoleJob(t, c, token, job.JobID)
	var project struct{ Data struct{ ID string } }
	if st := consoleAPI(t, c, token, "POST", "/api/projects", map[string]any{"name": "fn", "region_id": created.Data.ID, "image": functionImage}, &project); st != 201 {
		t.Fatalf("project: %d", st)
	}
	if st := consoleAPI(t, c, token, "POST", "/api/projects/"+project.Data.ID+"/deploy", nil, &job); st != 202 {
		t.Fatalf("deploy: %d", st)
	}
	waitConsoleJob(t, c, token, job.JobID)
	return "fn.up.example.test"
}

// waitFunction waits for the function to answer through the region's Traefik, then probes it.
func waitFunction(t *testing.T, c *testcluster.Cluster, host string) *functionProber {
	t.Helper()
	client := c.InClusterHTTP()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(time.Second) {
		req, _ := http.NewRequest("GET", "http://"+testcluster.InsideLBAddress+"/", nil)
		req.Host = host
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return startFunctionProber(c, host)
			}
			err = fmt.Errorf("%s", resp.Status)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the function %s does not answer: %v\n%s", host, err, c.PodReport("up", ""))
		}
	}
}

// functionProber calls a function through the region's Traefik every second.
type functionProber struct {
	done   chan struct{}
	wg     sync.WaitGroup
	calls  int
	failed []string
}

func startFunctionProber(c *testcluster.Cluster, host string) *functionProber {
	p := &functionProber{done: make(chan struct{})}
	client := c.InClusterHTTP()
	client.Timeout = 5 * time.Second
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			req, _ := http.NewRequest("GET", "http://"+testcluster.InsideLBAddress+"/probe", nil)
			req.Host = host
			at := time.Now()
			resp, err := client.Do(req)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("%s", resp.Status)
				}
			}
			p.calls++
			if err != nil {
				p.failed = append(p.failed, at.Format("15:04:05.000")+": "+err.Error())
			}
			select {
			case <-p.done:
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

// stop ends the prober and fails on any failed call.
func (p *functionProber) stop(t *testing.T) {
	t.Helper()
	close(p.done)
	p.wg.Wait()
	t.Logf("the function answered %d of %d probes (one a second) during the console's upgrade", p.calls-len(p.failed), p.calls)
	if len(p.failed) > 0 || p.calls < 5 {
		t.Fatalf("the function failed probes during the console's upgrade: %v", p.failed)
	}
}
