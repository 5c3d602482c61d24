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

// benchPages measures the console's pages under load (issue #11, item 1).
func benchPages(env *Env, rep *Report, o *Options) error {
	sec := rep.section("1", "Console pages under load")
	dbURL, err := env.NewDB("pages")
	if err != nil {
		return err
	}
	defer env.DropDB(dbURL)
	st, err := OpenStore(dbURL)
	if err != nil {
		return err
	}
	defer st.Close()
	con, err := env.NewConsole("pages", dbURL, true)
	if err != nil {
		return err
	}
	ctx := context.Background()

	// Finished jobs are written before the console runs (a queued job would be claimed by
	// its runners), and attached to their regions afterwards.
	fmt.Printf("seeding %d regions\n", o.Regions)
	seedStart := time.Now()
	jobs := make([]string, o.Regions)
	if err := parallel(o.Regions, 8, func(i int) error {
		id, err := seedSettingsJob(ctx, st, regionName(i))
		jobs[i] = id
		return err
	}); err != nil {
		return fmt.Errorf("seed jobs: %w", err)
	}
	if err := con.Start(); err != nil {
		return err
	}
	defer con.Stop()
	// The regions are written once the console has run its boot-time status sweep on an
	// empty table, so that no sweep touches them; their kubeconfigs name a closed
	// loopback port.
	dead := "https://" + freeAddr()
	ids := make([]string, o.Regions)
	if err := parallel(o.Regions, 8, func(i int) error {
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
		return fmt.Errorf("seed regions: %w", err)
	}
	if err := st.SetSetting(ctx, "base_domain", "fn.bench.test"); err != nil {
		return err
	}
	sec.note("Seeded %d regions through `store.CreateRegion` + `store.SetRegion` (installed-region fields: registry, operator and Serving ready, health, external address, function domain), each with a finished job of 3 steps and 28 events and an agent snapshot, in %s. The regions are written after the console's boot-time sweep (on an empty table), and RUNR_STATUS_INTERVAL=1h keeps the next one out of the run.", o.Regions, time.Since(seedStart).Round(100*time.Millisecond))

	cookie, err := con.Login()
	if err != nil {
		return err
	}
	session := http.Header{"Cookie": {cookie.Name + "=" + cookie.Value}}
	bearer := http.Header{"Authorization": {"Bearer " + con.Token}}
	one := ids[len(ids)/2]
	targets := []Target{
		{Name: "GET /healthz", Path: "/healthz", Check: func(s int, b []byte) error { return expect(s, b, "ok") }},
		{Name: "GET /regions (HTML)", Path: "/regions", Header: session, Check: func(s int, b []byte) error {
			names := make([]string, o.Regions)
			for i := range names {
				names[i] = regionName(i)
			}
			sort.Strings(names)
			if s != 200 {
				return expect(s, b, "")
			}
			for _, n := range names[:min(50, len(names))] {
				if !strings.Contains(string(b), ">"+n+"<") {
					return fmt.Errorf("the first page does not list %s", n)
				}
			}
			return nil
		}},
		{Name: "GET /api/knative-regions (JSON)", Path: "/api/knative-regions", Header: bearer, Check: func(s int, b []byte) error {
			var v struct {
				Data []map[string]any
				Meta struct{ Total int }
			}
			if err := json.Unmarshal(b, &v); err != nil || s != 200 {
				return fmt.Errorf("status %d: %v", s, err)
			}
			if v.Meta.Total != o.Regions || len(v.Data) != 100 {
				return fmt.Errorf("total %d, %d regions on the page", v.Meta.Total, len(v.Data))
			}
			return nil
		}},
		{Name: "GET /regions/:id (HTML)", Path: "/regions/" + one, Header: session, Check: func(s int, b []byte) error {
			return expect(s, b, regionName(len(ids)/2))
		}},
	}
	client := newLoadClient(o.Conns)
	base := "http://" + con.Addr
	sizes := map[string]int{}
	for _, t := range targets {
		req, _ := http.NewRequest("GET", base+t.Path, nil)
		for k, v := range t.Header {
			req.Header[k] = v
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err := t.Check(resp.StatusCode, body); err != nil {
			return fmt.Errorf("%s: %w", t.Name, err)
		}
		sizes[t.Name] = len(body)
	}
	// Warm-up, then rounds that interleave the endpoints so that a change of the
	// machine's load touches every endpoint alike.
	for _, t := range targets {
		fmt.Printf("warm-up %s (%s)\n", t.Name, o.Warmup)
		load(client, base, t, o.Conns, o.Warmup)
	}
	res := map[string]*LoadResult{}
	cpu := map[string]*Usage{}
	per := o.Duration / time.Duration(o.Rounds)
	for round := 1; round <= o.Rounds; round++ {
		for _, t := range targets {
			fmt.Printf("round %d/%d: %s for %s on %d connections\n", round, o.Rounds, t.Name, per, o.Conns)
			m0 := env.Mon.mark()
			r := load(client, base, t, o.Conns, per)
			time.Sleep(1100 * time.Millisecond) // the monitor samples once a second
			u := env.Mon.since(m0)
			if cpu[t.Name] == nil {
				cpu[t.Name] = &Usage{Mine: map[string]float64{}}
			}
			c := cpu[t.Name]
			c.Wall += u.Wall
			c.Others += u.Others
			for k, v := range u.Mine {
				c.Mine[k] += v
			}
			if res[t.Name] == nil {
				res[t.Name] = &LoadResult{}
			}
			res[t.Name].merge(r)
		}
	}
	rss := procStatus(con.Pid())

	id := sec.cmd("C1", fmt.Sprintf("%s\n# console under test (PID %d):\n%s %s serve\n# per endpoint: %d goroutines, each with its own keep-alive connection (net/http, closed loop), %s of warm-up, then %d interleaved rounds of %s (%s in all):\n%s",
		benchCmd(o, "pages"), con.Pid(), con.EnvFor(), env.Runr, o.Conns, o.Warmup, o.Rounds, per, o.Duration, targetLines(base, targets)))
	health := res[targets[0].Name]
	var table strings.Builder
	table.WriteString("| Endpoint | Answer size | Requests | Errors | req/s | p50 | p99 | max | Throughput ÷ /healthz | CPUs used: load generator / console / PostgreSQL / other work |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, t := range targets {
		r := res[t.Name]
		s := statsOf(r.Lat)
		ratio := r.RPS() / health.RPS()
		c := cpu[t.Name]
		w := c.Wall.Seconds()
		fmt.Fprintf(&table, "| %s | %d B | %d | %d | %.0f | %s | %s | %s | %.3f | %.2f / %.2f / %.2f / %.2f |\n", t.Name, sizes[t.Name], r.Requests, r.Errors, r.RPS(), ms(s.P50), ms(s.P99), ms(s.Max), ratio,
			c.Mine["bench"]/w, c.Mine["runr"]/w, c.Mine["postgres"]/w, c.Others/w)
		rep.add("1", t.Name+": throughput", fmt.Sprintf("%.0f req/s", r.RPS()), id)
		rep.add("1", t.Name+": p50", ms(s.P50), id)
		if t.Path == "/healthz" {
			rep.add("1", t.Name+": p99", ms(s.P99), id)
		} else {
			rep.check("1", t.Name+": p99", ms(s.P99), "< 25 ms", s.P99 < 25*time.Millisecond, id)
			if t.Path == "/regions" || t.Path == "/api/knative-regions" {
				rep.check("1", t.Name+": throughput ÷ /healthz", fmt.Sprintf("%.3f", ratio), "≥ 0.2", ratio >= 0.2, id)
			} else {
				rep.add("1", t.Name+": throughput ÷ /healthz", fmt.Sprintf("%.3f", ratio), id)
			}
		}
		if r.Errors > 0 {
			rep.check("1", t.Name+": errors", fmt.Sprintf("%d (%s)", r.Errors, r.FirstErr), "0", false, id)
		}
	}
	sec.Details = append(sec.Details, table.String()+"\n")
	sec.note("Authentication: the HTML pages with a browser session (signed in through the login form, cookie `runr_session`), the JSON API with a bearer token (`runr token create`); every request is authenticated by the console (session or token lookup in PostgreSQL).")
	sec.note("Latency is measured by the client from sending the request to reading the last byte of the answer; p50/p99 are nearest-rank percentiles of every request of the measured rounds; throughput counts the 200 answers. The load generator runs on the same %d-CPU machine as the console and PostgreSQL, so the three share the CPUs: absolute figures are lower than on a dedicated server, which is why each page's throughput is also given as a ratio to /healthz from the same process in the same run.", rep.Machine.Nproc)
	sec.note("The CPU columns come from /proc, sampled every second over each endpoint's rounds (plus the second after each round). /healthz does almost nothing, so its throughput is bounded by the load generator's own CPU share, which makes every ratio to it, if anything, too kind to the pages.")
	sec.note("With a closed loop of %d connections, latency and throughput are tied (Little's law: mean latency ≈ %d ÷ throughput), so a p99 under 25 ms at 64 connections needs more than 2,560 answers per second.", o.Conns, o.Conns)
	sec.note("Console RSS after the run: %.0f MiB (peak %.0f MiB).", float64(rss["VmRSS"])/1024, float64(rss["VmHWM"])/1024)
	return nil
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
