package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lib/pq"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"runr.dev/console/agent"
	"runr.dev/console/store"
)

// agentFleet is the benchmark's agents: the real agent's code (agent.Agent), one per
// region, each with its own token, connection and cluster (a client-go fake clientset of
// five nodes, their pods and events: the informers and snapshots run as in a cluster).
type agentFleet struct {
	agents   []*agent.Agent
	clusters []*fake.Clientset
	ids      []string
	// drops counts the agents' lost or refused connections (their "reconnecting" warnings).
	drops  atomic.Int64
	causes causeCount
	stop   context.CancelFunc
	wg     sync.WaitGroup
}

// countingHandler counts the agents' warnings (a connection that failed or broke) and
// their causes.
type countingHandler struct {
	n      *atomic.Int64
	causes *causeCount
}

// causeCount counts the agents' failed connections by cause.
type causeCount struct {
	mu sync.Mutex
	by map[string]int
}

// take returns the counts so far, most frequent first, and starts again.
func (c *causeCount) take() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	causes := slices.SortedFunc(maps.Keys(c.by), func(a, b string) int { return c.by[b] - c.by[a] })
	var parts []string
	for _, k := range causes[:min(5, len(causes))] {
		parts = append(parts, fmt.Sprintf("%d× %s", c.by[k], k))
	}
	clear(c.by)
	return strings.Join(parts, "; ")
}

func (h countingHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (h countingHandler) Handle(_ context.Context, r slog.Record) error {
	h.n.Add(1)
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "err" {
			cause := a.Value.String()
			// Addresses and ports vary; the cause is what follows the last colon.
			if i := strings.LastIndex(cause, ": "); i >= 0 {
				cause = cause[i+2:]
			}
			h.causes.mu.Lock()
			h.causes.by[cause]++
			h.causes.mu.Unlock()
		}
		return true
	})
	return nil
}
func (h countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h countingHandler) WithGroup(string) slog.Handler      { return h }

// fakeCluster is a five-node cluster: per node, six pods of a project namespace with
// requests, and an event.
func fakeCluster(i int) *fake.Clientset {
	objs := []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"runr.dev/region": regionName(i)}}}}
	for n := range 5 {
		node := fmt.Sprintf("node-%d", n)
		objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi")}}})
		for p := range 6 {
			objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fn-%d-%d", n, p), Namespace: "shop", Labels: map[string]string{"runr.dev/project": "shop"}},
				Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "fn", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}}}}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning}})
		}
	}
	return fake.NewClientset(objs...)
}

// startAgents starts one agent per region, alternately on the consoles' URLs, each
// snapshotting every interval.
func startAgents(regions []*store.Region, urls []string, interval time.Duration) *agentFleet {
	ctx, cancel := context.WithCancel(context.Background())
	f := &agentFleet{stop: cancel, causes: causeCount{by: map[string]int{}}}
	log := slog.New(countingHandler{&f.drops, &f.causes})
	for i, r := range regions {
		cs := fakeCluster(i)
		a := agent.New(agent.Config{URL: urls[i%len(urls)], Token: r.AgentToken, Region: r.Name, Version: "bench",
			Interval: interval, Client: cs, Log: log})
		f.agents, f.clusters, f.ids = append(f.agents, a), append(f.clusters, cs), append(f.ids, r.ID)
		f.wg.Go(func() { _ = a.Run(ctx) })
	}
	return f
}

// events adds an event to every agent's cluster every interval, spread over it, until
// ctx ends: what the agents report besides their snapshots.
func (f *agentFleet) events(ctx context.Context, interval time.Duration) {
	step := interval / time.Duration(max(1, len(f.clusters)))
	for round := 0; ctx.Err() == nil; round++ {
		for i, cs := range f.clusters {
			e := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fn-0-0.%d", round), Namespace: "shop"},
				InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "fn-0-0", Namespace: "shop"},
				Type:           "Normal", Reason: "Pulled", Message: "Container image already present on machine"}
			_, _ = cs.CoreV1().Events("shop").Create(ctx, e, metav1.CreateOptions{})
			_ = i
			select {
			case <-ctx.Done():
				return
			case <-time.After(step):
			}
		}
	}
}

// close stops the agents.
func (f *agentFleet) close() {
	f.stop()
	f.wg.Wait()
}

// connectedSince counts the fleet's regions whose agent connected or reported at or after t.
func connectedSince(ctx context.Context, st *store.Store, t time.Time) (int, error) {
	var n int
	err := st.DB.GetContext(ctx, &n, `SELECT count(*) FROM regions WHERE components->'agent'->>'status' = 'connected' AND agent_last_seen_at >= $1`, t)
	return n, err
}

// waitConnected polls until n agents connected since t (or the deadline); it returns how
// long that took, how many it counted last, and when a half, nine tenths and all but one
// in a hundred had connected.
func waitConnected(ctx context.Context, st *store.Store, n int, t time.Time, deadline time.Duration) (time.Duration, int, string, error) {
	marks := []struct {
		share float64
		at    time.Duration
	}{{0.5, 0}, {0.9, 0}, {0.99, 0}}
	for {
		got, err := connectedSince(ctx, st, t)
		if err != nil {
			return 0, 0, "", fmt.Errorf("count the connected agents: %w", err)
		}
		for i := range marks {
			if marks[i].at == 0 && float64(got) >= marks[i].share*float64(n) {
				marks[i].at = time.Since(t)
			}
		}
		if got >= n || time.Since(t) > deadline {
			var parts []string
			for _, m := range marks {
				if m.at > 0 {
					parts = append(parts, fmt.Sprintf("%.0f %% by %s", m.share*100, secs(m.at)))
				}
			}
			return time.Since(t), got, strings.Join(parts, ", "), nil
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// procCPU is a process's CPU time so far (user + system, seconds).
func procCPU(pid int) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(fields) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (ut + stime) / 100 // USER_HZ
}

// reportLatency follows the newest snapshot of sample regions for d: each new one is
// timed from the agent's sending (its taken_at) to the moment the console's database
// answers it (what the region page and the API read). It returns the latencies and the
// snapshots counted per region.
func reportLatency(ctx context.Context, st *store.Store, sample []string, d time.Duration) ([]time.Duration, map[string]int, error) {
	last := map[string]time.Time{}
	count := map[string]int{}
	var lat []time.Duration
	end := time.Now().Add(d)
	for first := true; time.Now().Before(end); first = false {
		var rows []struct {
			ID string    `db:"region_id"`
			At time.Time `db:"taken_at"`
		}
		if err := st.DB.SelectContext(ctx, &rows, `SELECT region_id, max(taken_at) AS taken_at FROM metric_snapshots WHERE region_id = ANY($1) GROUP BY region_id`, pq.Array(sample)); err != nil {
			return nil, nil, fmt.Errorf("read the sample's snapshots: %w", err)
		}
		now := time.Now()
		for _, r := range rows {
			if r.At.After(last[r.ID]) {
				if !first && !last[r.ID].IsZero() {
					lat = append(lat, now.Sub(r.At))
					count[r.ID]++
				}
				last[r.ID] = r.At
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return lat, count, nil
}

// percentile is the nearest-rank percentile p (0–100) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// agentsRun is benchmark 8's world: the two consoles, their database and the agents.
type agentsRun struct {
	rep   *Report
	sec   *Section
	o     *Options
	st    *store.Store
	cons  []*Console
	fleet *agentFleet
	id    string // the command's anchor
}

// benchAgents measures o.Agents agents connected at once to two console processes
// (issue #38): how many connect, each console's memory and CPU while they report every
// o.AgentInterval, how soon a report is readable, and how long all take to connect again
// after both consoles restart.
func benchAgents(env *Env, rep *Report, o *Options) error {
	a := &agentsRun{rep: rep, sec: rep.section("8", "Connected agents"), o: o, cons: make([]*Console, 2)}
	ctx := context.Background()
	dbURL, st, drop, err := env.NewStore("agents")
	if err != nil {
		return err
	}
	defer drop()
	a.st = st
	for i, name := range []string{"agents-a", "agents-b"} {
		if a.cons[i], err = env.NewConsole(name, dbURL, i == 0); err != nil {
			return err
		}
		if err := a.cons[i].Start(); err != nil {
			return err
		}
		defer a.cons[i].Stop()
	}
	fmt.Printf("seeding %d regions, each with its agent token\n", o.Agents)
	regions := make([]*store.Region, o.Agents)
	if err := parallel(o.Agents, 8, func(i int) error {
		r, err := seedRegion(ctx, st, RegionSeed{Name: regionName(i), Server: fmt.Sprintf("https://cluster-%d.agents.bench.test:6443", i),
			Nodes: []string{"node-0", "node-1", "node-2", "node-3", "node-4"}})
		regions[i] = r
		return err
	}); err != nil {
		return fmt.Errorf("seed regions: %w", err)
	}
	a.id = a.sec.cmd("C8", fmt.Sprintf("%s\n# two consoles on one database:\n%s %s serve\n%s %s serve\n# %d agents in the bench process: agent.New(agent.Config{URL: ws://<console>/api/internal/agent/ws (alternately), Token: the region's, Interval: %s}).Run, each on a k8s.io/client-go/kubernetes/fake clientset of 5 nodes, 30 pods and a project namespace; one event per cluster per interval",
		benchCmd(o, "agents"), a.cons[0].EnvFor(), env.Runr, a.cons[1].EnvFor(), env.Runr, o.Agents, o.AgentInterval))
	if err := a.connect(ctx, regions); err != nil {
		return err
	}
	defer a.fleet.close()
	evCtx, stopEvents := context.WithCancel(ctx)
	defer stopEvents()
	go a.fleet.events(evCtx, o.AgentInterval)
	if err := a.steady(ctx); err != nil {
		return err
	}
	return a.restart(ctx)
}

// connect starts the agents, half on each console, and checks that all connect.
func (a *agentsRun) connect(ctx context.Context, regions []*store.Region) error {
	urls := []string{"ws://" + a.cons[0].Addr + "/api/internal/agent/ws", "ws://" + a.cons[1].Addr + "/api/internal/agent/ws"}
	fmt.Printf("starting %d agents (real agent code, fake clusters of 5 nodes and 30 pods), half on each console\n", a.o.Agents)
	started := time.Now()
	a.fleet = startAgents(regions, urls, a.o.AgentInterval)
	took, got, marks, err := waitConnected(ctx, a.st, a.o.Agents, started, 3*time.Minute)
	if err != nil {
		return err
	}
	fmt.Printf("%d of %d agents connected in %s (%s)\n", got, a.o.Agents, took.Round(100*time.Millisecond), marks)
	a.sec.note("From the agents' start (each first syncs its informers on its fake cluster, in this process): %s.", marks)
	drops := a.fleet.drops.Load()
	a.rep.check("8", fmt.Sprintf("agents connected at once to two console processes (one per cluster, reporting every %s)", a.o.AgentInterval),
		fmt.Sprintf("%d of %d in %s, %d connection(s) failed or refused", got, a.o.Agents, secs(took), drops), fmt.Sprintf("%d, none refused", a.o.Agents),
		got == a.o.Agents && drops == 0, a.id)
	return nil
}

// steady measures the consoles' CPU and memory while the agents report, and the
// reports' latency on a sample of regions.
func (a *agentsRun) steady(ctx context.Context) error {
	window := max(2*a.o.AgentInterval, 30*time.Second)
	cpu0 := []float64{procCPU(a.cons[0].Pid()), procCPU(a.cons[1].Pid())}
	t0 := time.Now()
	sample := a.fleet.ids[:min(100, len(a.fleet.ids))]
	lat, counts, err := reportLatency(ctx, a.st, sample, window)
	if err != nil {
		return err
	}
	wall := time.Since(t0).Seconds()
	var each string
	ok := true
	for i, c := range a.cons {
		rss := procStatus(c.Pid())["VmRSS"] * 1024
		cpu := (procCPU(c.Pid()) - cpu0[i]) / wall
		ok = ok && rss < 1e9 && cpu < 0.8
		each += fmt.Sprintf("%s %.0f MiB / %.2f CPU; ", c.Name, float64(rss)/(1<<20), cpu)
	}
	a.rep.check("8", "per console process while they report: resident memory / average CPU", strings.TrimSuffix(each, "; "), "< 1 GB / < 0.8 CPU", ok, a.id)
	expected := int(window / a.o.AgentInterval)
	lost := 0
	for _, id := range sample {
		if counts[id] < expected-1 {
			lost++
		}
	}
	p99 := percentile(lat, 99)
	a.rep.check("8", fmt.Sprintf("from an agent's snapshot to its row being readable (p99 of %d on %d sample regions over %s)", len(lat), len(sample), secs(window)),
		fmt.Sprintf("%s (p50 %s); %d sample region(s) with fewer than %d", secs(p99), secs(percentile(lat, 50)), lost, expected-1), "p99 < 2 s, no report lost",
		p99 < 2*time.Second && lost == 0 && len(lat) > 0, a.id)
	return nil
}

// restart stops both consoles, starts them again and waits for every agent to connect.
func (a *agentsRun) restart(ctx context.Context) error {
	if c := a.fleet.causes.take(); c != "" {
		a.sec.note("The agents' failed connections before the restart, by cause: %s.", c)
	}
	fmt.Println("restarting both consoles")
	stopping := time.Now()
	for _, c := range a.cons {
		c.Stop()
	}
	down := time.Since(stopping)
	restarting := time.Now()
	for _, c := range a.cons {
		if err := c.Start(); err != nil {
			return err
		}
	}
	up := time.Since(restarting)
	took, got, marks, err := waitConnected(ctx, a.st, a.o.Agents, restarting, 3*time.Minute)
	if err != nil {
		return err
	}
	causes := a.fleet.causes.take()
	fmt.Printf("after the restart: %s; the agents' failed connections by cause: %s\n", marks, causes)
	a.sec.note("The agents' failed connections from the restart on, by cause: %s.", causes)
	a.sec.note("The restart: both consoles stopped (SIGTERM, one after the other) in %s; from their new start (both answered /healthz %s later): %s.", secs(down), secs(up), marks)
	refusedPG := a.cons[0].LogGrep("too many clients") + a.cons[1].LogGrep("too many clients")
	a.rep.check("8", "all agents connected again after both consoles restart (from their start)", fmt.Sprintf("%d of %d in %s; PostgreSQL refused %d connection(s)", got, a.o.Agents, secs(took), refusedPG),
		"all in < 60 s, none refused", got == a.o.Agents && took < time.Minute && refusedPG == 0, a.id)
	a.sec.note("The agents reconnect with the agent's own back-off: from 1 s, doubling up to 15 s, each wait drawn at random between half and one and a half of it (agent.Run).")
	return nil
}
