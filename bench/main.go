// Command bench measures the regions console against the targets of issue #11 and
// writes bench/RESULTS.md. `make bench` runs it through scripts/bench.sh, which starts a
// private PostgreSQL and builds bin/runr and the simulated clusters' binaries first.
//
// Every console under test is the real `bin/runr serve` process; clusters are the
// simulated ones of package testcluster; every address is on loopback.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"runr.dev/console/bench/cpumon"
	"runr.dev/console/testcluster"
)

// Options are the bench's flags.
type Options struct {
	PG           string
	Runr         string
	Out          string
	Only         map[string]bool
	only         string
	Duration     time.Duration
	Warmup       time.Duration
	Rounds       int
	Conns        int
	Regions      int
	Subscribers  int
	Events       int
	SweepRegions int
	FleetRegions int
	LCPRuns      int
	Agents       int
	// AgentInterval is how often each agent reports a snapshot (benchmark 8).
	AgentInterval time.Duration
	// ScaleRegions are the counts of regions of benchmark 1b.
	ScaleRegions string
	DeadFraction float64
	Installs     int
	Poll         time.Duration
	Shared       string
	KeepDB       bool
	PGDir        string
	InstallRuns  int
	PacedRate    int
	BaselineRuns int
	ProfileDir   string
}

var benches = []string{"pages", "pages-scale", "lcp", "fanout", "agents", "install", "concurrent", "sweep", "realpath"}

// benchCmd is the command that reruns one benchmark alone.
func benchCmd(o *Options, name string) string {
	return fmt.Sprintf("# make bench → scripts/bench.sh → (PostgreSQL: PG_FAST=1 scripts/pg.sh start .data/bench-pg postgres)\n# this benchmark alone: scripts/bench.sh -only %s\nbin/bench -pg $PG -runr %s -only %s -duration %s -warmup %s -rounds %d -conns %d -regions %d -subscribers %d -events %d -paced-rate %d -sweep-regions %d -fleet-regions %d -lcp-runs %d -agents %d -agent-interval %s -dead-fraction %g -installs %d -baseline-runs %d -install-runs %d -poll %s -pg-dir $PWD/.data/bench-pg",
		name, o.Runr, name, o.Duration, o.Warmup, o.Rounds, o.Conns, o.Regions, o.Subscribers, o.Events, o.PacedRate, o.SweepRegions, o.FleetRegions, o.LCPRuns, o.Agents, o.AgentInterval, o.DeadFraction, o.Installs, o.BaselineRuns, o.InstallRuns, o.Poll)
}

func main() {
	o := &Options{}
	flag.StringVar(&o.PG, "pg", os.Getenv("BENCH_PG_URL"), "URL of the PostgreSQL server's database postgres (scripts/pg.sh start prints it)")
	flag.StringVar(&o.Runr, "runr", "bin/runr", "the runr binary under test")
	flag.StringVar(&o.Out, "out", "", "results file (default bench/RESULTS.md when every benchmark runs, none otherwise)")
	flag.StringVar(&o.only, "only", "", "comma-separated benchmarks to run: "+strings.Join(benches, ","))
	flag.DurationVar(&o.Duration, "duration", 10*time.Second, "load per endpoint (benchmark 1)")
	flag.DurationVar(&o.Warmup, "warmup", 2*time.Second, "warm-up per endpoint (benchmark 1)")
	flag.IntVar(&o.Rounds, "rounds", 2, "interleaved rounds the duration is split into (benchmark 1)")
	flag.IntVar(&o.Conns, "conns", 64, "connections of the load generator (benchmark 1)")
	flag.IntVar(&o.Regions, "regions", 1000, "seeded regions (benchmark 1)")
	flag.IntVar(&o.Subscribers, "subscribers", 500, "WebSocket subscribers, half on each console (benchmark 2)")
	flag.IntVar(&o.Events, "events", 1000, "events the job emits (benchmark 2)")
	flag.IntVar(&o.SweepRegions, "sweep-regions", 1000, "regions of the status sweep (benchmark 4)")
	flag.StringVar(&o.ScaleRegions, "scale-regions", "100,1000,10000", "counts of regions whose pages benchmark 1b compares")
	flag.IntVar(&o.LCPRuns, "lcp-runs", 5, "cold loads of a region page in Chromium, whose median is reported (benchmark 7)")
	flag.IntVar(&o.Agents, "agents", 10000, "agents connected at once, half to each of two consoles (benchmark 8)")
	flag.DurationVar(&o.AgentInterval, "agent-interval", 15*time.Second, "how often each agent reports a snapshot (benchmark 8)")
	flag.IntVar(&o.FleetRegions, "fleet-regions", 10000, "regions of the sweep by one and by two processes (benchmark 4b; 0 skips it)")
	flag.Float64Var(&o.DeadFraction, "dead-fraction", 0.1, "share of the sweep's regions whose cluster never answers (benchmark 4)")
	flag.IntVar(&o.Installs, "installs", 10, "concurrent installs into 2 clusters (benchmark 5)")
	flag.DurationVar(&o.Poll, "poll", 100*time.Millisecond, "how often GET /api/jobs/:id is polled (benchmarks 3 and 5)")
	flag.StringVar(&o.Shared, "machine-note", "", "a note on the machine (e.g. that it was shared)")
	flag.StringVar(&o.PGDir, "pg-dir", "", "PostgreSQL's data directory (to tell its CPU use from other work on the machine)")
	flag.IntVar(&o.BaselineRuns, "baseline-runs", 3, "single installs, each on a fresh cluster, whose median is the reference (benchmark 5)")
	flag.IntVar(&o.PacedRate, "paced-rate", 100, "events per second of the paced comparison phase; 0 skips it (benchmark 2)")
	flag.IntVar(&o.InstallRuns, "install-runs", 3, "wizard runs, each on a fresh cluster; the median is reported (benchmark 3)")
	flag.StringVar(&o.ProfileDir, "cpuprofile-dir", "", "write a CPU profile of every console under test to this directory (<console>.cpu.pprof, whole process life)")
	flag.BoolVar(&o.KeepDB, "keep-db", false, "keep the benchmarks' databases (to look into them)")
	flag.Parse()
	if o.PG == "" {
		fmt.Fprintln(os.Stderr, "bench: -pg is required (scripts/bench.sh starts PostgreSQL and passes it)")
		os.Exit(2)
	}
	o.Only = map[string]bool{}
	if o.only == "" {
		for _, b := range benches {
			o.Only[b] = true
		}
		if o.Out == "" {
			o.Out = "bench/RESULTS.md"
		}
	} else {
		for _, b := range strings.Split(o.only, ",") {
			o.Only[strings.TrimSpace(b)] = true
		}
	}
	o.BaselineRuns = max(1, o.BaselineRuns)
	o.InstallRuns = max(1, o.InstallRuns)
	if o.ProfileDir != "" {
		abs, err := filepath.Abs(o.ProfileDir)
		if err == nil {
			err = os.MkdirAll(abs, 0o755)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: -cpuprofile-dir:", err)
			os.Exit(2)
		}
		o.ProfileDir = abs
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// run runs the selected benchmarks (in the order 1, 2, 3, 5, 4), then prints the table
// and writes the results file; it fails when a benchmark could not run at all.
func run(o *Options) error {
	runr, err := runrBinary(o.Runr)
	if err != nil {
		return err
	}
	logDir, err := newLogDir()
	if err != nil {
		return err
	}
	rep := newRunReport(runr, logDir)
	repo, err := testcluster.StartChartRepo("")
	if err != nil {
		return fmt.Errorf("start the stand-in chart repository: %w", err)
	}
	defer repo.Close()
	mon := cpumon.Start(o.PGDir)
	defer mon.Close()
	env := &Env{AdminURL: o.PG, Runr: runr, Repo: repo, LogDir: logDir, KeepDB: o.KeepDB, Mon: mon, Profiles: o.ProfileDir}
	runStart := noteOtherWork(rep, mon, o.Shared)

	b := &benchRun{o: o, rep: rep, mon: mon}
	b.step("1", "Console pages under load", "pages", func() error { return benchPages(env, rep, o) })
	b.step("1b", "Pages with more regions", "pages-scale", func() error { return benchPageScaling(env, rep, o) })
	b.step("7", "Region page paint in Chromium", "lcp", func() error { return benchLCP(env, rep, o) })
	b.step("8", "Connected agents", "agents", func() error { return benchAgents(env, rep, o) })
	b.step("2", "Progress fan-out", "fanout", func() error { return benchFanout(env, rep, o) })
	// Benchmark 3 has its cluster to itself; 5 uses three fresh ones, which 4 then reuses
	// (with what 5 installed on them).
	b.step("3", "Install overhead", "install", func() error { return benchInstall(env, rep, o) })
	pool := &clusterPool{}
	defer pool.stop()
	b.step("5", "Concurrent installs", "concurrent", func() error { return pool.concurrent(env, rep, o) })
	b.step("4", "Status sweep", "sweep", func() error { return pool.sweep(env, rep, o) })
	b.step("6", "The real data path", "realpath", func() error { return benchRealPath(env, rep) })

	if err := finishReport(rep, mon, runStart, o.Out); err != nil {
		return err
	}
	if b.failed > 0 {
		return fmt.Errorf("%d benchmark(s) failed to run", b.failed)
	}
	return nil
}

// runrBinary is the absolute path of the binary under test, which must have been built.
func runrBinary(path string) (string, error) {
	runr, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("locate %s: %w", path, err)
	}
	if _, err := os.Stat(runr); err != nil {
		return "", fmt.Errorf("%s: build it first (make build)", path)
	}
	return runr, nil
}

// newLogDir creates the folder of this run's console logs, .data/bench/<time>.
func newLogDir() (string, error) {
	dir, err := filepath.Abs(filepath.Join(".data", "bench", time.Now().Format("20060102-150405")))
	if err != nil {
		return "", fmt.Errorf("locate the log folder: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create the log folder: %w", err)
	}
	return dir, nil
}

// newRunReport starts the report with the machine, the network and the binary under
// test, and prints them with where the console logs go.
func newRunReport(runr, logDir string) *Report {
	rep := newReport(strings.Join(append([]string{"bin/bench"}, os.Args[1:]...), " "))
	rep.Machine.Netns = networkNote()
	rep.Machine.Build = buildNote(runr)
	fmt.Printf("machine: %d CPUs, %s, %s; load %s\n", rep.Machine.Nproc, rep.Machine.MemTotal, rep.Machine.GoVersion, rep.Machine.LoadStart)
	fmt.Printf("network: %s\nconsole logs: %s\n", rep.Machine.Netns, logDir)
	return rep
}

// noteOtherWork marks the start of the run and notes the CPU use of the 3 s before the
// first benchmark (the -machine-note in front); it returns the mark.
func noteOtherWork(rep *Report, mon *cpumon.Monitor, machineNote string) cpumon.Usage {
	runStart := mon.Mark()
	time.Sleep(3 * time.Second)
	rep.Machine.OtherProc = usageNote(mon.Since(runStart), rep.Machine.Nproc, "the 3 s before the first benchmark")
	if machineNote != "" {
		rep.Machine.OtherProc = machineNote + " " + rep.Machine.OtherProc
	}
	fmt.Println(rep.Machine.OtherProc)
	return runStart
}

// benchRun runs the benchmarks that -only selects, each in its section of the report
// with the CPU use of its run, and counts those that failed to run.
type benchRun struct {
	o      *Options
	rep    *Report
	mon    *cpumon.Monitor
	failed int
}

// step runs one benchmark when it is selected (name) and records its CPU use, its time
// and, when it could not run, its failure.
func (b *benchRun) step(id, title, name string, f func() error) {
	if !b.o.Only[name] {
		return
	}
	fmt.Printf("\n== %s. %s\n", id, title)
	start := time.Now()
	m0 := b.mon.Mark()
	err := f()
	u := b.mon.Since(m0)
	b.rep.section(id, title).note("%s", usageNote(u, b.rep.Machine.Nproc, "this benchmark"))
	if err != nil {
		b.failed++
		b.rep.section(id, title).Err = err
		b.rep.check(id, title+": the benchmark ran", "failed: "+truncate(err.Error(), 160), "runs", false, "-")
		fmt.Printf("FAILED: %v\n", err)
	}
	fmt.Printf("(%s)\n", time.Since(start).Round(time.Second))
}

// clusterPool holds the simulated clusters benchmark 5 leaves to benchmark 4: one of its
// solo clusters and the two shared ones, with what 5 installed on them.
type clusterPool struct {
	clusters  []*testcluster.Cluster
	installed bool
}

// concurrent runs benchmark 5 on fresh clusters (the solo installs' and two shared ones),
// then keeps one solo cluster and the shared ones for the sweep and stops the others.
func (p *clusterPool) concurrent(env *Env, rep *Report, o *Options) error {
	n := o.BaselineRuns + 2
	fmt.Printf("starting %d simulated clusters\n", n)
	cs, err := startClusters(n)
	if err != nil {
		return err
	}
	solos, shared := cs[:o.BaselineRuns], cs[o.BaselineRuns:]
	err = benchConcurrent(env, rep, o, solos, shared)
	p.clusters = append([]*testcluster.Cluster{solos[0]}, shared...)
	for _, c := range solos[1:] {
		c.Stop()
	}
	p.installed = err == nil
	return err
}

// sweep runs benchmark 4 on the pool's clusters, or on three fresh ones when benchmark 5
// did not run.
func (p *clusterPool) sweep(env *Env, rep *Report, o *Options) error {
	if len(p.clusters) == 0 {
		fmt.Println("starting three simulated clusters")
		cs, err := startClusters(3)
		if err != nil {
			return err
		}
		p.clusters = cs
	}
	return benchSweep(env, rep, o, p.clusters, p.installed)
}

// stop stops the pool's clusters.
func (p *clusterPool) stop() {
	for _, c := range p.clusters {
		c.Stop()
	}
}

// finishReport notes the end of the run, prints the table and writes the results file
// when there is one (-out).
func finishReport(rep *Report, mon *cpumon.Monitor, runStart cpumon.Usage, out string) error {
	rep.Finished = time.Now()
	rep.Machine.LoadEnd = loadAvg()
	rep.Machine.Shared = usageNote(mon.Since(runStart), rep.Machine.Nproc, "the whole run")
	rep.printTable()
	if out == "" {
		return nil
	}
	if err := os.WriteFile(out, []byte(rep.markdown()), 0o644); err != nil {
		return fmt.Errorf("write the results: %w", err)
	}
	fmt.Printf("\nwrote %s\n", out)
	return nil
}

// usageNote tells how the CPUs were shared during a window.
func usageNote(u cpumon.Usage, nproc int, what string) string {
	w := u.Wall.Seconds()
	if w <= 0 {
		return ""
	}
	s := fmt.Sprintf("CPU during %s (%.0f s, sampled from /proc every second): the benchmark's own processes used %.2f CPUs on average%s; other work on the machine %.2f of the %d CPUs%s",
		what, w, u.Ours/w, topOf(u.Mine, w), u.Others/w, nproc, topOf(u.Top, w))
	if u.Others/w > 0.1 {
		s += ": the machine was shared, and the figures are lower than on a quiet machine"
	}
	return s + "."
}

// topOf lists the busiest commands of a usage map as average CPUs over w seconds.
func topOf(m map[string]float64, w float64) string {
	type kv struct {
		k string
		v float64
	}
	var top []kv
	for k, v := range m {
		top = append(top, kv{k, v})
	}
	sort.Slice(top, func(i, j int) bool { return top[i].v > top[j].v })
	var names []string
	for i, t := range top {
		if i == 6 || t.v/w < 0.005 {
			break
		}
		names = append(names, fmt.Sprintf("%s %.2f", t.k, t.v/w))
	}
	if len(names) == 0 {
		return ""
	}
	return " (" + strings.Join(names, ", ") + ")"
}

// buildNote names the binary under test and the working tree it was built from, which
// may hold changes not committed yet (the machine's other engineers work in it too).
func buildNote(runr string) string {
	v, _ := exec.Command(runr, "version").Output()
	head, _ := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	st, _ := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output()
	var changed []string
	for _, l := range strings.Split(strings.TrimSpace(string(st)), "\n") {
		if f := strings.TrimSpace(l); len(f) > 3 && !strings.HasSuffix(f, " main.go") {
			changed = append(changed, strings.TrimSpace(f[2:]))
		}
	}
	s := fmt.Sprintf("`bin/runr version`: %s, built from commit %s", strings.TrimSpace(string(v)), strings.TrimSpace(string(head)))
	if len(changed) > 0 {
		s += fmt.Sprintf(" with uncommitted changes to %d tracked file(s) besides this work's: %s", len(changed), strings.Join(changed, ", "))
	}
	return s
}

// networkNote says whether the run is confined to a network namespace with only a
// loopback interface (scripts/bench.sh runs it under `unshare --net`).
func networkNote() string {
	ifs, err := net.Interfaces()
	if err != nil {
		return "unknown"
	}
	var names []string
	for _, i := range ifs {
		names = append(names, i.Name)
	}
	if len(ifs) == 1 && ifs[0].Flags&net.FlagLoopback != 0 {
		return "a private network namespace whose only interface is loopback (`unshare --net`): no packet can leave 127.0.0.0/8, and the system resolver is unreachable"
	}
	return "the host's network (interfaces " + strings.Join(names, ", ") + "); every address the bench uses is on loopback"
}
