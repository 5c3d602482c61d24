package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"

	"runr.dev/console/ops/redis"
	"runr.dev/console/store"
)

// received is one event as it arrived at a subscriber: its id and when. Its created_at
// is read from the database afterwards, so that the clients keep no message and decode
// no JSON while they measure (500 of them share the CPUs with the consoles).
type received struct {
	at time.Time
	id int64
}

// subscriber is one WebSocket client of a job's JSON event stream.
type subscriber struct {
	console    int // 0: console A, 1: console B
	url        string
	header     http.Header
	msgs       []received
	maxID      atomic.Int64
	reconnects int
	closes     []string
	err        error

	mu   sync.Mutex
	conn *websocket.Conn
	stop atomic.Bool
	done chan struct{}
}

var wsDialer = &websocket.Dialer{HandshakeTimeout: 15 * time.Second, ReadBufferSize: 16 << 10}

// quickID reads the "id" that leads a JSON event without decoding it all: PostgreSQL's
// json_build_object writes {"id" : 123, …}, the replay's encoding/json {"id":123,…}.
func quickID(msg []byte) int64 {
	rest, ok := bytes.CutPrefix(msg, []byte(`{"id"`))
	if ok {
		rest = bytes.TrimLeft(rest, " ")
		rest, ok = bytes.CutPrefix(rest, []byte(":"))
	}
	if !ok {
		var v struct{ ID int64 }
		json.Unmarshal(msg, &v)
		return v.ID
	}
	rest = bytes.TrimLeft(rest, " ")
	end := bytes.IndexAny(rest, ", }")
	if end < 0 {
		return 0
	}
	n, _ := strconv.ParseInt(string(rest[:end]), 10, 64)
	return n
}

// dial connects (or reconnects after the last event seen) and returns once subscribed.
func (s *subscriber) dial() error {
	u := s.url
	if m := s.maxID.Load(); m > 0 {
		u += "&after=" + strconv.FormatInt(m, 10)
	}
	conn, resp, err := wsDialer.Dial(u, s.header)
	if err != nil {
		if resp != nil {
			return fmt.Errorf("dial %s: %w (HTTP %d)", u, err, resp.StatusCode)
		}
		return fmt.Errorf("dial %s: %w", u, err)
	}
	s.mu.Lock()
	s.conn = conn
	if s.stop.Load() {
		conn.Close()
	}
	s.mu.Unlock()
	return nil
}

// read consumes messages until stopped; a connection the server closes is dialled again
// after the last event seen, as a browser does.
func (s *subscriber) read() {
	defer close(s.done)
	for {
		s.mu.Lock()
		conn := s.conn
		s.mu.Unlock()
		var buf bytes.Buffer
		for {
			buf.Reset()
			_, r, err := conn.NextReader()
			if err == nil {
				_, err = buf.ReadFrom(r)
			}
			if err != nil {
				if !s.stop.Load() {
					s.closes = append(s.closes, err.Error())
				}
				break
			}
			now := time.Now()
			// The console sends every event queued for a subscriber in one message, one
			// JSON event per line.
			for msg := buf.Bytes(); len(msg) > 0; {
				line := msg
				if i := bytes.IndexByte(msg, '\n'); i >= 0 {
					line, msg = msg[:i], msg[i+1:]
				} else {
					msg = nil
				}
				if len(line) == 0 {
					continue
				}
				id := quickID(line)
				s.msgs = append(s.msgs, received{at: now, id: id})
				if id > s.maxID.Load() {
					s.maxID.Store(id)
				}
			}
		}
		conn.Close()
		if s.stop.Load() {
			return
		}
		s.reconnects++
		var err error
		for try := 0; try < 20 && !s.stop.Load(); try++ {
			if err = s.dial(); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil || s.stop.Load() {
			s.err = err
			return
		}
	}
}

func (s *subscriber) close() {
	s.stop.Store(true)
	s.mu.Lock()
	if s.conn != nil {
		s.conn.Close()
	}
	s.mu.Unlock()
}

// waitAll waits until every subscriber saw id, or the timeout.
func waitAll(subs []*subscriber, id int64, timeout time.Duration) (int, time.Duration) {
	start := time.Now()
	for {
		behind := 0
		for _, s := range subs {
			if s.maxID.Load() < id {
				behind++
			}
		}
		if behind == 0 || time.Since(start) > timeout {
			return behind, time.Since(start)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// benchFanout measures the progress fan-out to WebSocket subscribers of two console
// processes (issue #11, item 2).
func benchFanout(env *Env, rep *Report, o *Options) error {
	sec := rep.section("2", "Progress fan-out")
	dbURL, st, drop, err := env.NewStore("fanout")
	if err != nil {
		return err
	}
	defer drop()
	a, err := env.NewConsole("fanout-a", dbURL, true)
	if err != nil {
		return err
	}
	b, err := env.NewConsole("fanout-b", dbURL, false)
	if err != nil {
		return err
	}
	b.Token = a.Token
	ctx := context.Background()
	j, err := seedHeldJob(ctx, st)
	if err != nil {
		return err
	}
	if err := a.Start(); err != nil {
		return err
	}
	defer a.Stop()
	if err := b.Start(); err != nil {
		return err
	}
	defer b.Stop()

	fan := &fanoutRun{a: a, b: b, job: j}
	defer fan.closeAll()
	if err := fan.subscribe(o.Subscribers, 1+2*o.Events+64); err != nil {
		return err
	}
	if err := fan.warmUp(ctx, st); err != nil {
		return err
	}
	if err := fan.emitPhases(ctx, st, o); err != nil {
		return err
	}
	fan.closeAll()
	created, err := eventTimes(ctx, st, j.ID)
	if err != nil {
		return err
	}
	stats := tallyFanout(fan.subs, fan.burst.ids, fan.paced.ids, created)
	id := sec.cmd("C2", fmt.Sprintf("%s\n# console A (PID %d) and console B (PID %d) on one database:\n%s %s serve\n%s %s serve\n# %d subscribers (fasthttp/websocket, Authorization: Bearer runr_…), odd ones on B:\nGET ws://%s/ws/jobs/%s?format=json\nGET ws://%s/ws/jobs/%s?format=json\n# then, from the bench process: %d × store.AddEvent(job %s) one after the other (as a job's runner emits its lines), then %d more at %d/s",
		benchCmd(o, "fanout"), a.Pid(), b.Pid(), a.EnvFor(), env.Runr, b.EnvFor(), env.Runr, len(fan.subs), a.Addr, j.ID, b.Addr, j.ID, o.Events, j.ID, len(fan.paced.ids), o.PacedRate))
	reportFanout(rep, o, fan, stats, id)
	sec.Details = append(sec.Details, fanoutTable(o, fan, stats))
	noteFanout(rep, sec, fan, stats)
	return nil
}

// seedHeldJob writes a region and a job of it, and holds the job's lease
// (store.ClaimJob) as the console that runs a job does: no runner of either console
// takes it. Both exist before the consoles start.
func seedHeldJob(ctx context.Context, st *store.Store) (*store.Job, error) {
	dead := "https://" + freeAddr()
	r, err := seedRegion(ctx, st, RegionSeed{Name: "eu-west-1", Kubeconfig: kubeconfigFor("eu-west-1", dead, store32(1)), Server: dead,
		Location: "EU", ExternalIP: "127.0.200.1", Domain: "eu-west-1.fn.bench.test", Nodes: []string{"worker-1"},
		Health: okHealth("eu-west-1.fn.bench.test", "127.0.200.1")})
	if err != nil {
		return nil, fmt.Errorf("seed the region: %w", err)
	}
	j, err := holdJob(ctx, st)
	if err != nil {
		return nil, err
	}
	return j, st.SetJobRegion(ctx, j.ID, r.ID)
}

// holdJob writes a job (of no region yet) and holds its lease, before any console runs.
func holdJob(ctx context.Context, st *store.Store) (*store.Job, error) {
	j := &store.Job{Kind: redis.KindRedisTest, Title: "Test the Redis of eu-west-1", CreatedBy: "bench@example.com"}
	if err := st.CreateJob(ctx, j, []store.JobStep{{Name: "ping", Title: "PING Redis from a pod"}}, ""); err != nil {
		return nil, fmt.Errorf("create the job: %w", err)
	}
	claimed, err := st.ClaimJob(ctx, "bench", "", time.Hour)
	if err != nil || claimed.ID != j.ID {
		return nil, fmt.Errorf("claim the job: %v", err)
	}
	return claimed, nil
}

// fanoutRun is benchmark 2 as it runs: the two consoles, the job, its subscribers and
// the two phases of events.
type fanoutRun struct {
	a, b     *Console
	job      *store.Job
	subs     []*subscriber
	dialTook time.Duration
	burst    emission      // one after the other: the figures with targets
	paced    emission      // at -paced-rate, for comparison (none when it is 0)
	behind   int           // subscribers still behind after draining
	drain    time.Duration // the longest wait for them to drain
}

// emission is one phase of events the bench emitted.
type emission struct {
	ids   []int64
	start time.Time
	took  time.Duration
}

// subscribe connects n subscribers to the job's JSON event stream, half on each console,
// and starts reading. Each subscriber's record of arrivals is allocated up front for the
// events the run emits: grown while the burst arrived, the 500 records were most of the
// bench process's garbage, and its collections delayed the readers and so the receive
// times measured.
func (f *fanoutRun) subscribe(n, events int) error {
	f.subs = make([]*subscriber, n)
	header := http.Header{"Authorization": {"Bearer " + f.a.Token}}
	for i := range f.subs {
		c := f.a
		if i%2 == 1 {
			c = f.b
		}
		f.subs[i] = &subscriber{console: i % 2, url: "ws://" + c.Addr + "/ws/jobs/" + f.job.ID + "?format=json", header: header, msgs: make([]received, 0, events)}
	}
	fmt.Printf("connecting %d WebSocket subscribers (%d per console)\n", n, n/2)
	dialStart := time.Now()
	if err := parallel(n, 32, func(i int) error { return f.subs[i].dial() }); err != nil {
		return err
	}
	f.dialTook = time.Since(dialStart)
	for _, s := range f.subs {
		s.done = make(chan struct{})
		go s.read()
	}
	return nil
}

// warmUp emits an event that is not measured, to prove that every subscriber is
// registered with its console's hub.
func (f *fanoutRun) warmUp(ctx context.Context, st *store.Store) error {
	warm, err := st.AddEvent(ctx, &store.JobEvent{JobID: f.job.ID, Kind: "step", StepIdx: 0, Message: "PING Redis from a pod",
		Data: json.RawMessage(`{"idx":0,"name":"ping","status":"running"}`)})
	if err != nil {
		return fmt.Errorf("emit the warm-up event: %w", err)
	}
	if behind, _ := waitAll(f.subs, warm, 30*time.Second); behind > 0 {
		return fmt.Errorf("%d subscribers did not get the warm-up event", behind)
	}
	return nil
}

// emitPhases emits the measured events: first one after the other, as fast as the store
// takes them, then (with -paced-rate) as many again at that rate; after each phase it
// waits for every subscriber to see the last event.
func (f *fanoutRun) emitPhases(ctx context.Context, st *store.Store, o *Options) error {
	fmt.Printf("emitting %d events, one after the other\n", o.Events)
	var err error
	if f.burst, err = emitEvents(ctx, st, f.job.ID, o.Events, 0, "burst"); err != nil {
		return err
	}
	f.behind, f.drain = waitAll(f.subs, f.burst.ids[len(f.burst.ids)-1], 30*time.Second)
	if o.PacedRate <= 0 {
		return nil
	}
	time.Sleep(time.Second)
	fmt.Printf("emitting %d events at %d/s\n", o.Events, o.PacedRate)
	if f.paced, err = emitEvents(ctx, st, f.job.ID, o.Events, time.Second/time.Duration(o.PacedRate), "paced"); err != nil {
		return err
	}
	behind, drain := waitAll(f.subs, f.paced.ids[len(f.paced.ids)-1], 30*time.Second)
	f.behind += behind
	f.drain = max(f.drain, drain)
	return nil
}

// emitEvents adds n log lines to a job, one every `every` (0: one after the other).
func emitEvents(ctx context.Context, st *store.Store, jobID string, n int, every time.Duration, tag string) (emission, error) {
	e := emission{ids: make([]int64, 0, n), start: time.Now()}
	for i := 0; i < n; i++ {
		if every > 0 {
			if d := time.Until(e.start.Add(time.Duration(i) * every)); d > 0 {
				time.Sleep(d)
			}
		}
		id, err := st.AddEvent(ctx, &store.JobEvent{JobID: jobID, Kind: "log", StepIdx: 0, Level: "info",
			Message: fmt.Sprintf("redis-cli -h runr-redis.eu-west-1.svc -p 6379 PING (%s): line %d of %d: PONG (%d ms)", tag, i+1, n, 1+i%7)})
		if err != nil {
			return emission{}, fmt.Errorf("emit event %d of %d (%s): %w", i+1, n, tag, err)
		}
		e.ids = append(e.ids, id)
	}
	e.took = time.Since(e.start)
	return e, nil
}

// closeAll closes every subscriber and waits for their readers to end.
func (f *fanoutRun) closeAll() {
	for _, s := range f.subs {
		s.close()
	}
	for _, s := range f.subs {
		if s.done != nil {
			<-s.done
		}
	}
}

// phaseStats is what the subscribers of each console saw of one phase's events.
type phaseStats struct {
	lat      [2][]time.Duration // latency of each event's first arrival, by console
	missing  [2]int             // events that never arrived, by console
	lastRecv time.Time
}

// fanoutStats is what the subscribers saw of both phases.
type fanoutStats struct {
	burst, paced phaseStats
	reconnects   [2]int
	dup          int
	closes, errs []string // the first connection closes and reconnect failures (up to 5)
}

// tallyFanout measures the latency of the first arrival of each measured event at each
// subscriber, and counts what never arrived, arrived twice or broke a connection.
func tallyFanout(subs []*subscriber, burst, paced []int64, created map[int64]time.Time) *fanoutStats {
	fs := &fanoutStats{}
	phaseOf := map[int64]*phaseStats{}
	for _, id := range burst {
		phaseOf[id] = &fs.burst
	}
	for _, id := range paced {
		phaseOf[id] = &fs.paced
	}
	for _, s := range subs {
		got := fs.tallySubscriber(s, phaseOf, created)
		fs.burst.missing[s.console] += len(burst) - got[&fs.burst]
		fs.paced.missing[s.console] += len(paced) - got[&fs.paced]
		fs.reconnects[s.console] += s.reconnects
		if len(s.closes) > 0 && len(fs.closes) < 5 {
			fs.closes = append(fs.closes, s.closes[0])
		}
		if s.err != nil && len(fs.errs) < 5 {
			fs.errs = append(fs.errs, s.err.Error())
		}
	}
	return fs
}

// tallySubscriber records the latency of each measured event's first arrival at one
// subscriber, and returns how many events of each phase it got.
func (fs *fanoutStats) tallySubscriber(s *subscriber, phaseOf map[int64]*phaseStats, created map[int64]time.Time) map[*phaseStats]int {
	seen := map[int64]bool{}
	got := map[*phaseStats]int{}
	for _, m := range s.msgs {
		p := phaseOf[m.id]
		if p == nil {
			continue
		}
		if seen[m.id] {
			fs.dup++
			continue
		}
		seen[m.id] = true
		got[p]++
		p.lat[s.console] = append(p.lat[s.console], m.at.Sub(created[m.id]))
		if m.at.After(p.lastRecv) {
			p.lastRecv = m.at
		}
	}
	return got
}

// reportFanout records benchmark 2's figures: the burst's rate and deliveries, each
// console's latency against the targets, the missed events, and the paced comparison.
func reportFanout(rep *Report, o *Options, f *fanoutRun, fs *fanoutStats, id string) {
	burst := fs.burst
	sa, sb := statsOf(burst.lat[0]), statsOf(burst.lat[1])
	missed := burst.missing[0] + burst.missing[1] + fs.paced.missing[0] + fs.paced.missing[1]
	deliveries := len(burst.lat[0]) + len(burst.lat[1])
	n := len(f.burst.ids)
	rep.add("2", "events emitted one after the other (1 job)", fmt.Sprintf("%d in %s (%.0f/s)", n, secs(f.burst.took), float64(n)/f.burst.took.Seconds()), id)
	rep.add("2", "deliveries (events × subscribers)", fmt.Sprintf("%d of %d in %s", deliveries, n*len(f.subs), secs(burst.lastRecv.Sub(f.burst.start))), id)
	rep.add("2", "console A (the job's console): latency p50", ms(sa.P50), id)
	rep.check("2", "console A (the job's console): latency p99", ms(sa.P99), "< 50 ms", sa.P99 < 50*time.Millisecond && sa.N > 0, id)
	rep.add("2", "console B (across processes): latency p50", ms(sb.P50), id)
	rep.check("2", "console B (across processes): latency p99", ms(sb.P99), "< 150 ms", sb.P99 < 150*time.Millisecond && sb.N > 0, id)
	rep.check("2", "events missed by a subscriber", fmt.Sprintf("%d", missed), "0", missed == 0, id)
	if len(f.paced.ids) > 0 {
		pa, pb := statsOf(fs.paced.lat[0]), statsOf(fs.paced.lat[1])
		rep.add("2", fmt.Sprintf("for comparison, %d events at %d/s: p50 / p99, console A", len(f.paced.ids), o.PacedRate), ms(pa.P50)+" / "+ms(pa.P99), id)
		rep.add("2", fmt.Sprintf("for comparison, %d events at %d/s: p50 / p99, console B", len(f.paced.ids), o.PacedRate), ms(pb.P50)+" / "+ms(pb.P99), id)
	}
}

// fanoutTable is the table of each phase's latencies and missed events, by console.
func fanoutTable(o *Options, f *fanoutRun, fs *fanoutStats) string {
	var d strings.Builder
	d.WriteString("| Events | Subscribers | Deliveries | p50 | p99 | max | mean | Missed |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	perConsole := len(f.subs) / 2
	n := len(f.burst.ids)
	writePhaseRows(&d, fmt.Sprintf("%d one after the other (%.0f/s; targets)", n, float64(n)/f.burst.took.Seconds()), &fs.burst, perConsole)
	if len(f.paced.ids) > 0 {
		writePhaseRows(&d, fmt.Sprintf("%d paced at %d/s (for comparison; %s)", len(f.paced.ids), o.PacedRate, secs(f.paced.took)), &fs.paced, perConsole)
	}
	d.WriteString("\n")
	return d.String()
}

// writePhaseRows writes one phase's row for each console.
func writePhaseRows(d *strings.Builder, label string, p *phaseStats, perConsole int) {
	for i, name := range []string{"console A", "console B"} {
		s := statsOf(p.lat[i])
		fmt.Fprintf(d, "| %s | %s: %d | %d | %s | %s | %s | %s | %d |\n", label, name, perConsole, s.N, ms(s.P50), ms(s.P99), ms(s.Max), ms(s.Mean), p.missing[i])
	}
}

// noteFanout explains what benchmark 2's latency includes, how the subscribers connected
// and reconnected, and the consoles' memory after the run.
func noteFanout(rep *Report, sec *Section, f *fanoutRun, fs *fanoutStats) {
	rssA, rssB := procStatus(f.a.Pid()), procStatus(f.b.Pid())
	sec.note("Latency is the subscriber's receive time (`time.Now()` once the whole WebSocket message is read, in the bench process) minus the event's `created_at`, which PostgreSQL sets when `store.AddEvent` inserts it (read from job_events after the run: the clients keep only each event's id and arrival, and decode no JSON while measuring); both clocks are this machine's. It therefore includes the insert and commit, NOTIFY, the hub's fan-out, the JSON encoding, the WebSocket write and the client's scheduling.")
	sec.note("The clients read each event's id from the message's first bytes (`quickID`). Until commit 03aadf0 that shortcut missed PostgreSQL's `{\"id\" : N` spacing, so every client decoded every message in full and grew its arrival list as it went: the bench process then collected garbage several times during the burst, and its own delay was most of the p99 it reported (88.8 ms on the job's console at b74ebcc; the hub and the WebSocket path have not changed since).")
	sec.note("The console's hub has no in-process path: every event, including those of the jobs a console runs itself, reaches that console's subscribers through PostgreSQL LISTEN/NOTIFY (hub/hub.go). So \"same process\" and \"across processes\" are the same mechanism here; console A stands for the console that runs the job (the bench holds the job's lease through `store.ClaimJob` and emits its events with `store.AddEvent`, as a runner does), console B is the second process on the same database.")
	sec.note("The %d subscribers connected in %s; a warm-up event (not counted) proved each of them registered before the measured events. A subscriber whose connection closes (the hub closes one that falls %d events behind) reconnects with `?after=<last id>` as the browser does; an event is counted as missed only if it never arrived. Reconnects: %d (console A %d, B %d); duplicates dropped: %d; subscribers still behind after %s of draining: %d.", len(f.subs), f.dialTook.Round(time.Millisecond), 4096, fs.reconnects[0]+fs.reconnects[1], fs.reconnects[0], fs.reconnects[1], fs.dup, f.drain.Round(time.Millisecond), f.behind)
	if len(fs.closes) > 0 {
		sec.note("First connection closes seen: %s.", strings.Join(fs.closes, "; "))
	}
	if len(fs.errs) > 0 {
		sec.note("Reconnect failures: %s.", strings.Join(fs.errs, "; "))
	}
	sec.note("The bench process runs the %d clients and PostgreSQL runs beside both consoles on the same %d CPUs, so the clients' own scheduling delay is part of the figures. Console RSS after the run: A %.0f MiB, B %.0f MiB.", len(f.subs), rep.Machine.Nproc, float64(rssA["VmRSS"])/1024, float64(rssB["VmRSS"])/1024)
	if len(f.paced.ids) > 0 {
		sec.note("When events come faster than the consoles can write them to %d sockets, they wait in the job's feed (hub/hub.go: one list of recent events per job, each subscriber woken and taking what it has not taken, at most one message per 10 ms) and latency grows with the wait: compare the paced phase, in which the same consoles and subscribers see each event on its own. The emitter shares the CPUs too: the faster the consoles, the faster it emits (the burst's rate above).", len(f.subs))
	}
}

// eventTimes reads when PostgreSQL inserted each event of the job (created_at, the same
// value its JSON carries).
func eventTimes(ctx context.Context, st *store.Store, jobID string) (map[int64]time.Time, error) {
	var rows []struct {
		ID        int64     `db:"id"`
		CreatedAt time.Time `db:"created_at"`
	}
	if err := st.DB.SelectContext(ctx, &rows, `SELECT id, created_at FROM job_events WHERE job_id = $1`, jobID); err != nil {
		return nil, fmt.Errorf("read the events' times: %w", err)
	}
	out := make(map[int64]time.Time, len(rows))
	for _, r := range rows {
		out[r.ID] = r.CreatedAt
	}
	return out, nil
}
