package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"runr.dev/console/agent"
	"runr.dev/console/config"
	"runr.dev/console/crypt"
	"runr.dev/console/kube"
	"runr.dev/console/ops/observability"
	"runr.dev/console/store"
	"runr.dev/console/store/storetest"
	"runr.dev/console/testcluster"
)

// blackHole accepts connections and never answers: a cluster that hangs.
func blackHole(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		for _, c := range conns {
			c.Close()
		}
	})
	return "https://" + l.Addr().String()
}

func TestSweepUnreachableRegionDoesNotDelayOthers(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	e := console(t, func(cfg *config.Config) { cfg.StatusTimeout = 4 * time.Second; cfg.StatusConcurrency = 8 })
	_, tok := e.User("owner")
	ctx := context.Background()
	var healthy []*store.Region
	for _, n := range []string{"h1", "h2", "h3"} {
		healthy = append(healthy, newRegion(t, e, tok, c, n, nil))
	}
	dead := &store.Region{Name: "dead", Kubeconfig: strings.Replace(string(c.Kubeconfig()), c.Server, blackHole(t), 1)}
	dead.ClusterServer = "dead"
	dead.ClusterKey = kube.ClusterKey("dead")
	if err := e.Store.CreateRegion(ctx, dead); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := e.Kube.Status.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if took > 7*time.Second {
		t.Fatalf("the sweep took %s: the dead cluster must be cut off at its deadline (4 s)", took)
	}
	for _, h := range healthy {
		r, _ := e.Store.RegionByID(ctx, h.ID)
		// Checked well before the dead cluster's deadline: not delayed by it.
		if r.CheckedAt == nil || r.CheckedAt.Sub(start) > 3*time.Second {
			t.Fatalf("%s was checked at %v (sweep started %v): delayed by the dead region", r.Name, r.CheckedAt, start)
		}
		if r.Health.V.API.State != store.HealthOK || !strings.Contains(r.Health.V.API.Reason, "answered in") {
			t.Fatalf("%s: API %+v", r.Name, r.Health.V.API)
		}
		if r.Health.V.Components.State != store.HealthUnknown || r.Health.V.Components.Reason == "" {
			t.Fatalf("%s: an empty region's components must say why they are unknown: %+v", r.Name, r.Health.V.Components)
		}
	}
	d, _ := e.Store.RegionByID(ctx, dead.ID)
	if d.Health.V.API.State != store.HealthDown || !strings.Contains(d.Health.V.API.Reason, "no connection within 2s") || d.Health.V.Failures != 1 {
		t.Fatalf("dead region: %+v failures %d", d.Health.V.API, d.Health.V.Failures)
	}
	// The circuit breaker: the next sweep does not wait for the dead cluster again.
	start = time.Now()
	if err := e.Kube.Status.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("the second sweep took %s: the dead cluster must be backed off", took)
	}
	// A region whose cluster does not answer opens on its Migration tab.
	// (Every page has one selected tab: the Migration tab's own must be it.)
	if st, body := e.Raw("GET", "/regions/"+dead.ID, tok, ""); st != 200 || !strings.Contains(between(body, `id="tab-migration"`, ">"), `aria-selected="true"`) ||
		!strings.Contains(between(body, `id="tab-general"`, ">"), `aria-selected="false"`) {
		t.Fatalf("dead region page: %d, the Migration tab must be the selected one", st)
	}
}

func TestAgentReportsAndReconnects(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	port := closedPort(t)
	p := newProcess(t, fmt.Sprintf("RUNR_APP_URL=http://127.0.0.1:%d", port))
	p.addr = fmt.Sprintf("127.0.0.1:%d", port)
	p.env = append(p.env, "RUNR_ADDR="+p.addr)
	p.run("migrate")
	p.run("user", "create", "--email", "ops@example.com", "--role", "owner", "--password", "correct horse battery")
	tok := p.run("token", "create", "--email", "ops@example.com", "--name", "test", "--scopes", "*")
	p.start()
	var created struct {
		Data struct{ ID string }
	}
	body := map[string]any{"name": "agent", "kubeconfig": string(c.Kubeconfig()), "redis_mode": "none"}
	if st := p.api("POST", "/api/knative-regions", tok, body, &created); st != 201 {
		t.Fatalf("create: %d", st)
	}
	st := openStore(t, p)
	r, err := st.RegionByID(context.Background(), created.Data.ID)
	if err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	os.WriteFile(kc, c.Kubeconfig(), 0o600)
	agentURL := "ws://" + p.addr + observability.AgentPath
	ag := exec.Command(runrBinary(t), "agent", "--kubeconfig", kc, "--url", agentURL, "--token", r.AgentToken, "--region", "agent", "--interval", "1s")
	ag.Env = append(os.Environ(), "RUNR_LOG_LEVEL=debug")
	ag.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	agentLog := &bytes.Buffer{}
	ag.Stdout, ag.Stderr = agentLog, agentLog
	if err := ag.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ag.Process.Kill(); ag.Wait() })

	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(45 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s\nconsole log:\n%s\nagent log:\n%s", what, p.log, agentLog)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	snapshots := func() int {
		var n int
		st.DB.Get(&n, `SELECT count(*) FROM metric_snapshots WHERE region_id = $1`, r.ID)
		return n
	}
	waitFor("the agent's first snapshots", func() bool { return snapshots() >= 2 })
	raw, _, _ := st.LatestSnapshot(context.Background(), r.ID)
	var snap agent.Snapshot
	if err := json.Unmarshal(raw, &snap); err != nil || len(snap.Nodes) != 3 || len(snap.Namespaces) != 1 || snap.Namespaces[0].Name != "agent" {
		t.Fatalf("snapshot %s", raw)
	}
	for _, n := range snap.Nodes {
		if n.Name == "worker-1" && (n.CPUAllocatable != 8000 || n.MemAllocatable != 16<<30) {
			t.Fatalf("worker-1 %+v", n)
		}
	}
	got, _ := st.RegionByID(context.Background(), r.ID)
	if got.Component("agent").Status != store.ComponentConnected || got.AgentLastSeenAt == nil {
		t.Fatalf("agent state %+v", got.Component("agent"))
	}

	// One agent per cluster: a second region of the cluster shares its token, and the
	// agent's reports count for it too.
	var second struct {
		Data struct{ ID string }
	}
	if st := p.api("POST", "/api/knative-regions", tok, map[string]any{"name": "agent-2", "kubeconfig": string(c.Kubeconfig()), "redis_mode": "none"}, &second); st != 201 {
		t.Fatalf("create the second region: %d", st)
	}
	r2, err := st.RegionByID(context.Background(), second.Data.ID)
	if err != nil || r2.AgentToken != r.AgentToken {
		t.Fatalf("the cluster's second region must share its agent's token: %v", err)
	}
	waitFor("the agent's snapshots for the second region", func() bool {
		var n int
		st.DB.Get(&n, `SELECT count(*) FROM metric_snapshots WHERE region_id = $1`, r2.ID)
		return n >= 1
	})

	// The console restarts; the agent reconnects by itself.
	p.kill()
	restarted := time.Now()
	p.start()
	waitFor("the agent to reconnect", func() bool {
		r, _ := st.RegionByID(context.Background(), r.ID)
		return r.Component("agent").Status == store.ComponentConnected && r.Component("agent").UpdatedAt.After(restarted)
	})
	before := snapshots()
	waitFor("snapshots after the restart", func() bool { return snapshots() > before })

	// An inactive region is left out of the snapshots.
	if st := p.api("PUT", "/api/knative-regions/"+r.ID, tok, map[string]any{"region_status": "inactive"}, nil); st != 200 {
		t.Fatalf("inactive: %d", st)
	}
	time.Sleep(1500 * time.Millisecond)
	n := snapshots()
	time.Sleep(2500 * time.Millisecond)
	if snapshots() != n {
		t.Fatal("an inactive region must be left out of the metric snapshots")
	}

	// Another host than the console's gets 400 on the internal API.
	req, _ := http.NewRequest("GET", "http://"+p.addr+observability.AgentPath, nil)
	req.Host = "evil.example.com"
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 400 {
		t.Fatalf("foreign host: %v %v", resp, err)
	}
	// The agent is turned away only once no region of its cluster is left.
	h := http.Header{}
	h.Set("Authorization", "Bearer "+r.AgentToken)
	if code := p.api("DELETE", "/api/knative-regions/"+r.ID, tok, nil, nil); code != 204 {
		t.Fatalf("delete: %d", code)
	}
	conn, resp, err := websocket.DefaultDialer.Dial(agentURL, h)
	if err != nil {
		t.Fatalf("the agent of a cluster with a region left: %v %v", resp, err)
	}
	conn.Close()
	if code := p.api("DELETE", "/api/knative-regions/"+r2.ID, tok, nil, nil); code != 204 {
		t.Fatalf("delete the second region: %d", code)
	}
	_, resp, err = websocket.DefaultDialer.Dial(agentURL, h)
	if err == nil || resp == nil || resp.StatusCode != 401 {
		t.Fatalf("the agent of a cluster without regions: %v %v", resp, err)
	}
}

func openStore(t *testing.T, p *process) *store.Store {
	var url string
	for _, kv := range p.env {
		if v, ok := strings.CutPrefix(kv, "DATABASE_URL="); ok {
			url = v
		}
	}
	cipher, _ := crypt.NewCipher(storetest.AppKey)
	st, err := store.Open(context.Background(), url, cipher)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// An agent replaced (a rolling update of its Deployment, a pod that died) connects before
// the old one's connection is seen to end: the end of the old connection leaves the
// region's agent connected; only the end of the last one shows it disconnected.
func TestAgentReplacementStaysConnected(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	e := console(t, nil)
	_, tok := e.User("owner")
	r := newRegion(t, e, tok, c, "swap", nil)
	url := "ws" + strings.TrimPrefix(e.Listen(), "http") + observability.AgentPath
	h := http.Header{}
	h.Set("Authorization", "Bearer "+r.AgentToken)
	state := func() store.ComponentStatus {
		got, _ := e.Store.RegionByID(context.Background(), r.ID)
		return got.Component("agent").Status
	}
	waitState := func(want store.ComponentStatus) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for state() != want {
			if time.Now().After(deadline) {
				t.Fatalf("agent %s, want %s", state(), want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	old, _, err := websocket.DefaultDialer.Dial(url, h)
	if err != nil {
		t.Fatal(err)
	}
	waitState(store.ComponentConnected)
	time.Sleep(20 * time.Millisecond)
	replacement, _, err := websocket.DefaultDialer.Dial(url, h)
	if err != nil {
		t.Fatal(err)
	}
	defer replacement.Close()
	time.Sleep(200 * time.Millisecond)
	old.Close()
	time.Sleep(500 * time.Millisecond)
	if st := state(); st != store.ComponentConnected {
		t.Fatalf("the old agent's connection ended after its replacement connected: the agent shows %s", st)
	}
	replacement.Close()
	waitState(store.ComponentDisconnected)
}

// TestRegionsNotActiveAreStillChecked: a region in maintenance or inactive is checked by
// the sweep (an administrator works on it exactly then), and its page offers "Check now".
func TestRegionsNotActiveAreStillChecked(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	e := console(t, nil)
	_, tok := e.User("owner")
	ctx := context.Background()
	for _, status := range []store.RegionStatus{store.RegionMaintenance, store.RegionInactive} {
		r := newRegion(t, e, tok, c, "quiet-"+string(status), nil)
		if err := e.Store.SetRegionStatus(ctx, r.ID, status); err != nil {
			t.Fatal(err)
		}
		before := time.Now()
		if err := e.Kube.Status.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
		got, err := e.Store.RegionByID(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.CheckedAt == nil || got.CheckedAt.Before(before) || got.Health.V.API.State != store.HealthOK {
			t.Fatalf("%s region: checked at %v (sweep from %v), API %+v", status, got.CheckedAt, before, got.Health.V.API)
		}
		if st, body := e.Raw("GET", "/regions/"+r.ID, tok, ""); st != 200 || !strings.Contains(body, `data-testid="check-now"`) {
			t.Fatalf("%s region page: %d, Check now offered: %v", status, st, strings.Contains(body, `data-testid="check-now"`))
		}
	}
}
