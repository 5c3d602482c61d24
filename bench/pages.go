package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"runr.dev/console/bench/cpumon"
	"runr.dev/console/store"
)

// Target is one endpoint the load generator drives.
type Target struct {
	Name   string
	Path   string
	Header http.Header
	// Check validates one full answer once, before the measurement.
	Check func(status int, body []byte) error
}

// LoadResult is what one endpoint measured.
type LoadResult struct {
	Requests int
	Errors   int
	Elapsed  time.Duration
	Lat      []time.Duration
	FirstErr string
}

func (l *LoadResult) merge(o *LoadResult) {
	l.Requests += o.Requests
	l.Errors += o.Errors
	l.Elapsed += o.Elapsed
	l.Lat = append(l.Lat, o.Lat...)
	if l.FirstErr == "" {
		l.FirstErr = o.FirstErr
	}
}

// RPS is the throughput: requests answered 200 per second of measurement.
func (l *LoadResult) RPS() float64 {
	if l.Elapsed <= 0 {
		return 0
	}
	return float64(l.Requests-l.Errors) / l.Elapsed.Seconds()
}

// newLoadClient is a client with one keep-alive connection per goroutine.
func newLoadClient(conns int) *http.Client {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		MaxConnsPerHost:     conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// load sends GET requests on conns connections for d (closed loop: each goroutine sends
// its next request when the answer has been read) and records every latency.
func load(client *http.Client, base string, t Target, conns int, d time.Duration) *LoadResult {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	results := make([]*LoadResult, conns)
	var wg sync.WaitGroup
	start := time.Now()
	for g := 0; g < conns; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			res := &LoadResult{Lat: make([]time.Duration, 0, 4096)}
			results[g] = res
			for ctx.Err() == nil {
				req, _ := http.NewRequest("GET", base+t.Path, nil)
				for k, v := range t.Header {
					req.Header[k] = v
				}
				t0 := time.Now()
				resp, err := client.Do(req)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err == nil && resp.StatusCode != 200 {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				lat := time.Since(t0)
				if ctx.Err() != nil && time.Since(start) > d {
					// The answer came after the end of the window: not counted.
					return
				}
				res.Requests++
				res.Lat = append(res.Lat, lat)
				if err != nil {
					res.Errors++
					if res.FirstErr == "" {
						res.FirstErr = err.Error()
					}
				}
			}
		}(g)
	}
	wg.Wait()
	// Answers that arrived after the window are not counted, so the window is the time.
	total := &LoadResult{Elapsed: d}
	for _, r := range results {
		total.Requests += r.Requests
		total.Errors += r.Errors
		total.Lat = append(total.Lat, r.Lat...)
		if total.FirstErr == "" {
			total.FirstErr = r.FirstErr
		}
	}
	return total
}

// pagesSetup is a console with installed regions, as benchmark 1 loads it.
type pagesSetup struct {
	con    *Console
	st     *store.Store
	ids    []string   // the regions
	held   *store.Job // a running job whose lease the bench holds (at-rest subscribers follow it)
	seeded time.Duration
	close  func()
}

// pagesConsole starts a console on a fresh database with n installed regions, each with
// a finished job and an agent snapshot.
func pagesConsole(env *Env, name string, n int) (*pagesSetup, error) {
	dbURL, st, drop, err := env.NewStore(name)
	if err != nil {
		return nil, err
	}
	con, err := env.NewConsole(name, dbURL, true)
	if err != nil {
		drop()
		return nil, err
	}
	ctx := context.Background()
	fmt.Printf("seeding %d regions\n", n)
	seedStart := time.Now()
	// Finished jobs (and the held one) are written before the console runs (a queued job
	// would be claimed by its runners), and attached to their regions afterwards.
	jobs, err := seedFinishedJobs(ctx, st, n)
	if err != nil {
		drop()
		return nil, err
	}
	held, err := holdJob(ctx, st)
	if err != nil {
		drop()
		return nil, err
	}
	if err := con.Start(); err != nil {
		drop()
		return nil, err
	}
	p := &pagesSetup{con: con, st: st, held: held, close: func() { con.Stop(); drop() }}
	// The regions are written once the console has run its boot-time status sweep on an
	// empty table, so that no sweep touches them.
	if p.ids, err = seedInstalledRegions(ctx, st, jobs); err == nil {
		if err = st.SetJobRegion(ctx, held.ID, p.ids[0]); err == nil {
			err = st.SetSetting(ctx, "base_domain", "fn.bench.test")
		}
	}
	if err != nil {
		p.close()
		return nil, err
	}
	p.seeded = time.Since(seedStart)
	return p, nil
}

// benchPages measures the console's pages under load (issue #11, item 1), and the
// console's memory at rest with its regions and -subscribers following a job.
func benchPages(env *Env, rep *Report, o *Options) error {
	sec := rep.section("1", "Console pages under load")
	p, err := pagesConsole(env, "pages", o.Regions)
	if err != nil {
		return err
	}
	defer p.close()
	con, ids, held, took := p.con, p.ids, p.held, p.seeded
	sec.note("Seeded %d regions through `store.CreateRegion` + `store.SetRegion` (installed-region fields: registry, operator and Serving ready, health, external address, function domain), each with a finished job of 3 steps and 28 events and an agent snapshot, in %s. The regions are written after the console's boot-time sweep (on an empty table), and RUNR_STATUS_INTERVAL=1h keeps the next one out of the run.", o.Regions, took.Round(100*time.Millisecond))

	targets, err := pageTargets(con, o, ids)
	if err != nil {
		return err
	}
	client, base := newLoadClient(o.Conns), "http://"+con.Addr
	pages, err := checkTargets(client, base, targets)
	if err != nil {
		return err
	}
	rest, err := memoryAtRest(con, p.st, held, o.Subscribers)
	if err != nil {
		return err
	}
	measureRounds(env, client, base, pages, o)
	id := sec.cmd("C1", fmt.Sprintf("%s\n# console under test (PID %d):\n%s %s serve\n# per endpoint: %d goroutines, each with its own keep-alive connection (net/http, closed loop), %s of warm-up, then %d interleaved rounds of %s (%s in all):\n%s\n# before the load, at rest: %d subscribers on GET ws://%s/ws/jobs/%s?format=json, then VmRSS from /proc/%d/status",
		benchCmd(o, "pages"), con.Pid(), con.EnvFor(), env.Runr, o.Conns, o.Warmup, o.Rounds, o.Duration/time.Duration(o.Rounds), o.Duration, targetLines(base, targets), o.Subscribers, con.Addr, held.ID, con.Pid()))
	reportPages(rep, sec, pages, id)
	rep.check("1", fmt.Sprintf("console resident memory at rest, %d regions and %d subscribers", o.Regions, o.Subscribers),
		fmt.Sprintf("%.0f MiB", float64(rest)/(1<<20)), "< 200 MB", rest < 200e6, id)
	notePages(rep, sec, o, procStatus(con.Pid()))
	return nil
}

// memoryAtRest connects n subscribers to the held job's event stream, proves with one
// event that each is registered, lets the console rest for 3 s and reads its resident
// memory (bytes); then it closes the subscribers.
func memoryAtRest(con *Console, st *store.Store, held *store.Job, n int) (int64, error) {
	fan := &fanoutRun{a: con, b: con, job: held}
	defer fan.closeAll()
	if err := fan.subscribe(n, 1); err != nil {
		return 0, err
	}
	if err := fan.warmUp(context.Background(), st); err != nil {
		return 0, err
	}
	time.Sleep(3 * time.Second)
	return procStatus(con.Pid())["VmRSS"] * 1024, nil
}

// seedFinishedJobs writes one finished settings job for each region to come, and returns
// their ids.
func seedFinishedJobs(ctx context.Context, st *store.Store, n int) ([]string, error) {
	jobs := make([]string, n)
	if err := parallel(n, 8, func(i int) error {
		id, err := seedSettingsJob(ctx, st, regionName(i))
		jobs[i] = id
		return err
	}); err != nil {
		return nil, fmt.Errorf("seed jobs: %w", err)
	}
	return jobs, nil
}

// seedInstalledRegions writes one installed region for each job, attaches the job to it
// and gives it an agent snapshot; it returns the regions' ids. Their kubeconfigs name a
// closed loopback port.
func seedInstalledRegions(ctx context.Context, st *store.Store, jobs []string) ([]string, error) {
	dead := "https://" + freeAddr()
	ids := make([]string, len(jobs))
	if err := parallel(len(jobs), 8, func(i int) error {
		name := regionName(i)
		ip := fmt.Sprintf("127.0.%d.%d", 200+i/250, 1+i%250)
		domain := name + ".fn.bench.test"
		nodes := []string{"control-plane", "worker-1", "worker-2"}
		r, err := seedRegion(ctx, st, RegionSeed{Name: name, Kubeconfig: kubeconfigFor(name, dead, store32(i)), Server: dead,
			Location: dataLocation(i), ExternalIP: ip, Domain: domain, Registry: true, Nodes: nodes,
			Components: []string{"prometheus", "loki", "tracing"}, Health: okHealth(domain, ip)})
		if err != nil {
			return err
		}
		ids[i] = r.ID
		if err := st.SetJobRegion(ctx, jobs[i], r.ID); err != nil {
			return err
		}
		return seedSnapshot(ctx, st, r.ID, nodes)
	}); err != nil {
		return nil, fmt.Errorf("seed regions: %w", err)
	}
	return ids, nil
}

// pageTargets are the endpoints under load: /healthz, the regions page and API (with a
// browser session and a bearer token), and the page of the middle region.
func pageTargets(con *Console, o *Options, ids []string) ([]Target, error) {
	cookie, err := con.Login()
	if err != nil {
		return nil, err
	}
	session := http.Header{"Cookie": {cookie.Name + "=" + cookie.Value}}
	bearer := http.Header{"Authorization": {"Bearer " + con.Token}}
	one := len(ids) / 2
	return []Target{
		{Name: "GET /healthz", Path: "/healthz", Check: func(s int, b []byte) error { return expect(s, b, "ok") }},
		{Name: "GET /regions (HTML)", Path: "/regions", Header: session, Check: checkRegionsPage(o.Regions)},
		{Name: "GET /api/knative-regions (JSON)", Path: "/api/knative-regions", Header: bearer, Check: checkRegionsAPI(o.Regions)},
		{Name: "GET /regions/:id (HTML)", Path: "/regions/" + ids[one], Header: session, Check: func(s int, b []byte) error {
			return expect(s, b, regionName(one))
		}},
	}, nil
}

// checkRegionsPage checks that the regions page lists the first 50 of n regions by name.
func checkRegionsPage(n int) func(status int, body []byte) error {
	return func(s int, b []byte) error {
		names := make([]string, n)
		for i := range names {
			names[i] = regionName(i)
		}
		sort.Strings(names)
		if s != 200 {
			return expect(s, b, "")
		}
		for _, name := range names[:min(50, len(names))] {
			if !strings.Contains(string(b), ">"+name+"<") {
				return fmt.Errorf("the first page does not list %s", name)
			}
		}
		return nil
	}
}

// checkRegionsAPI checks that the regions API counts n regions and answers a page of 100.
func checkRegionsAPI(n int) func(status int, body []byte) error {
	return func(s int, b []byte) error {
		var v struct {
			Data []map[string]any
			Meta struct{ Total int }
		}
		if err := json.Unmarshal(b, &v); err != nil || s != 200 {
			return fmt.Errorf("status %d: %v", s, err)
		}
		if v.Meta.Total != n || len(v.Data) != 100 {
			return fmt.Errorf("total %d, %d regions on the page", v.Meta.Total, len(v.Data))
		}
		return nil
	}
}

// pageMeasure is what benchmark 1 measured of one endpoint over every round.
type pageMeasure struct {
	Target
	size int // bytes of its answer
	load *LoadResult
	cpu  cpumon.Usage // over its rounds: wall time, the benchmark's CPU by command, other work's
}

// checkTargets validates one full answer of each endpoint before the measurement and
// notes its size.
func checkTargets(client *http.Client, base string, targets []Target) ([]*pageMeasure, error) {
	var pages []*pageMeasure
	for _, t := range targets {
		req, _ := http.NewRequest("GET", base+t.Path, nil)
		for k, v := range t.Header {
			req.Header[k] = v
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.Name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err := t.Check(resp.StatusCode, body); err != nil {
			return nil, fmt.Errorf("%s: %w", t.Name, err)
		}
		pages = append(pages, &pageMeasure{Target: t, size: len(body), load: &LoadResult{}, cpu: cpumon.Usage{Mine: map[string]float64{}}})
	}
	return pages, nil
}

// measureRounds warms every endpoint up, then loads them in rounds that interleave the
// endpoints, so that a change of the machine's load touches every endpoint alike.
func measureRounds(env *Env, client *http.Client, base string, pages []*pageMeasure, o *Options) {
	for _, p := range pages {
		fmt.Printf("warm-up %s (%s)\n", p.Name, o.Warmup)
		load(client, base, p.Target, o.Conns, o.Warmup)
	}
	per := o.Duration / time.Duration(o.Rounds)
	for round := 1; round <= o.Rounds; round++ {
		for _, p := range pages {
			fmt.Printf("round %d/%d: %s for %s on %d connections\n", round, o.Rounds, p.Name, per, o.Conns)
			m0 := env.Mon.Mark()
			r := load(client, base, p.Target, o.Conns, per)
			time.Sleep(1100 * time.Millisecond) // the monitor samples once a second
			p.cpu.AddWindow(env.Mon.Since(m0))
			p.load.merge(r)
		}
	}
}

// reportPages records every endpoint's figures and the table of its answers, latencies
// and the CPU use during its rounds; the first endpoint (/healthz) is the reference.
func reportPages(rep *Report, sec *Section, pages []*pageMeasure, id string) {
	health := pages[0].load
	var table strings.Builder
	table.WriteString("| Endpoint | Answer size | Requests | Errors | req/s | p50 | p99 | max | Throughput ÷ /healthz | CPUs used: load generator / console / PostgreSQL / other work |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, p := range pages {
		r := p.load
		s := statsOf(r.Lat)
		ratio := r.RPS() / health.RPS()
		w := p.cpu.Wall.Seconds()
		fmt.Fprintf(&table, "| %s | %d B | %d | %d | %.0f | %s | %s | %s | %.3f | %.2f / %.2f / %.2f / %.2f |\n", p.Name, p.size, r.Requests, r.Errors, r.RPS(), ms(s.P50), ms(s.P99), ms(s.Max), ratio,
			p.cpu.Mine["bench"]/w, p.cpu.Mine["runr"]/w, p.cpu.Mine["postgres"]/w, p.cpu.Others/w)
		pageFigures(rep, p, s, ratio, id)
	}
	sec.Details = append(sec.Details, table.String()+"\n")
}

// pageFigures records one endpoint's throughput, latency and errors; every page but
// /healthz has a p99 target, and the regions page and API a throughput target too.
func pageFigures(rep *Report, p *pageMeasure, s Stats, ratio float64, id string) {
	rep.add("1", p.Name+": throughput", fmt.Sprintf("%.0f req/s", p.load.RPS()), id)
	rep.add("1", p.Name+": p50", ms(s.P50), id)
	if p.Path == "/healthz" {
		rep.add("1", p.Name+": p99", ms(s.P99), id)
	} else {
		rep.check("1", p.Name+": p99", ms(s.P99), "< 25 ms", s.P99 < 25*time.Millisecond, id)
		if p.Path == "/regions" || p.Path == "/api/knative-regions" {
			rep.check("1", p.Name+": throughput ÷ /healthz", fmt.Sprintf("%.3f", ratio), "≥ 0.2", ratio >= 0.2, id)
		} else {
			rep.add("1", p.Name+": throughput ÷ /healthz", fmt.Sprintf("%.3f", ratio), id)
		}
	}
	if p.load.Errors > 0 {
		rep.check("1", p.Name+": errors", fmt.Sprintf("%d (%s)", p.load.Errors, p.load.FirstErr), "0", false, id)
	}
}

// notePages explains how benchmark 1 authenticates and measures, and the console's
// memory after the run (rss: its /proc status).
func notePages(rep *Report, sec *Section, o *Options, rss map[string]int64) {
	sec.note("Authentication: the HTML pages with a browser session (signed in through the login form, cookie `runr_session`), the JSON API with a bearer token (`runr token create`); every request is authenticated by the console (session or token lookup in PostgreSQL).")
	sec.note("Latency is measured by the client from sending the request to reading the last byte of the answer; p50/p99 are nearest-rank percentiles of every request of the measured rounds; throughput counts the 200 answers. The load generator runs on the same %d-CPU machine as the console and PostgreSQL, so the three share the CPUs: absolute figures are lower than on a dedicated server, which is why each page's throughput is also given as a ratio to /healthz from the same process in the same run.", rep.Machine.Nproc)
	sec.note("The CPU columns come from /proc, sampled every second over each endpoint's rounds (plus the second after each round). /healthz does almost nothing, so its throughput is bounded by the load generator's own CPU share, which makes every ratio to it, if anything, too kind to the pages.")
	sec.note("With a closed loop of %d connections, latency and throughput are tied (Little's law: mean latency ≈ %d ÷ throughput), so a p99 under 25 ms at 64 connections needs more than 2,560 answers per second.", o.Conns, o.Conns)
	sec.note("Console RSS after the run: %.0f MiB (peak %.0f MiB).", float64(rss["VmRSS"])/1024, float64(rss["VmHWM"])/1024)
}

func store32(i int) string { return fmt.Sprintf("bench-token-%08d-%s", i, strings.Repeat("x", 24)) }

func expect(status int, body []byte, want string) error {
	if status != 200 {
		return fmt.Errorf("status %d: %s", status, truncate(string(body), 200))
	}
	if !strings.Contains(string(body), want) {
		return fmt.Errorf("the answer does not contain %q", want)
	}
	return nil
}

func targetLines(base string, ts []Target) string {
	var b strings.Builder
	for _, t := range ts {
		auth := ""
		switch {
		case t.Header.Get("Cookie") != "":
			auth = "  (Cookie: runr_session=…)"
		case t.Header.Get("Authorization") != "":
			auth = "  (Authorization: Bearer runr_…)"
		}
		fmt.Fprintf(&b, "GET %s%s%s\n", base, t.Path, auth)
	}
	return strings.TrimSpace(b.String())
}

// benchPageScaling measures the pages of benchmark 1 with each count of regions of
// -scale-regions (100, 1,000 and 10,000 by default), each on a fresh console and
// database: the p99 of each page must grow less than 1.5× from the fewest to the most.
func benchPageScaling(env *Env, rep *Report, o *Options) error {
	sec := rep.section("1b", "Pages with more regions")
	counts, err := parseCounts(o.ScaleRegions)
	if err != nil {
		return err
	}
	short := *o
	short.Duration, short.Warmup, short.Rounds = 4*time.Second, time.Second, 2
	p99 := map[string][]time.Duration{}
	var names []string
	var table strings.Builder
	table.WriteString("| Regions | Seeded in | Endpoint | Answer size | Requests | req/s | p50 | p99 |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	var cmds []string
	for _, n := range counts {
		p, err := pagesConsole(env, fmt.Sprintf("scale%d", n), n)
		if err != nil {
			return err
		}
		short.Regions = n
		targets, err := pageTargets(p.con, &short, p.ids)
		if err != nil {
			p.close()
			return err
		}
		client, base := newLoadClient(o.Conns), "http://"+p.con.Addr
		pages, err := checkTargets(client, base, targets[1:]) // not /healthz: the pages only
		if err != nil {
			p.close()
			return err
		}
		measureRounds(env, client, base, pages, &short)
		for _, pg := range pages {
			s := statsOf(pg.load.Lat)
			if _, ok := p99[pg.Name]; !ok {
				names = append(names, pg.Name)
			}
			p99[pg.Name] = append(p99[pg.Name], s.P99)
			fmt.Fprintf(&table, "| %d | %s | %s | %d B | %d | %.0f | %s | %s |\n", n, p.seeded.Round(100*time.Millisecond), pg.Name, pg.size, pg.load.Requests, pg.load.RPS(), ms(s.P50), ms(s.P99))
		}
		cmds = append(cmds, fmt.Sprintf("# %d regions: console PID %d\n%s %s serve", n, p.con.Pid(), p.con.EnvFor(), env.Runr))
		p.close()
	}
	id := sec.cmd("C1b", fmt.Sprintf("%s -scale-regions %s\n%s\n# per count and endpoint: %d connections, %s of warm-up, then %d interleaved rounds of %s",
		benchCmd(o, "pages-scale"), o.ScaleRegions, strings.Join(cmds, "\n"), o.Conns, short.Warmup, short.Rounds, short.Duration/time.Duration(short.Rounds)))
	for _, name := range names {
		ls := p99[name]
		for i, n := range counts {
			rep.add("1b", fmt.Sprintf("%s: p99 with %d regions", name, n), ms(ls[i]), id)
		}
		growth := float64(ls[len(ls)-1]) / float64(ls[0])
		rep.check("1b", fmt.Sprintf("%s: p99 with %d ÷ with %d regions", name, counts[len(counts)-1], counts[0]), fmt.Sprintf("%.2f×", growth), "< 1.5×", growth < 1.5, id)
	}
	sec.Details = append(sec.Details, table.String()+"\n")
	sec.note("Each count of regions runs on its own console and database, seeded as benchmark 1 seeds them; every page is measured with the same %d connections, for less time than in benchmark 1 (%s per page), so each p99 rests on fewer requests.", o.Conns, short.Duration)
	return nil
}

// parseCounts reads a comma-separated list of at least two increasing counts.
func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		var n int
		if _, err := fmt.Sscan(strings.TrimSpace(f), &n); err != nil || n < 1 || len(out) > 0 && n <= out[len(out)-1] {
			return nil, fmt.Errorf("-scale-regions %q: give increasing counts, e.g. 100,1000,10000", s)
		}
		out = append(out, n)
	}
	if len(out) < 2 {
		return nil, fmt.Errorf("-scale-regions %q: give at least two counts", s)
	}
	return out, nil
}
