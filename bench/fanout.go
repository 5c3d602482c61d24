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

	"runr.dev/console/ops"
	"runr.dev/console/store"
)

// received is one message as it arrived at a subscriber.
type received struct {
	at  time.Time
	raw []byte
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

// quickID reads the "id" that leads a JSON event ({"id":123,…}) without decoding it all.
func quickID(msg []byte) int64 {
	const p = `{"id":`
	if !bytes.HasPrefix(msg, []byte(p)) {
		var v struct{ ID int64 }
		json.Unmarshal(msg, &v)
		return v.ID
	}
	rest := msg[len(p):]
	end := bytes.IndexByte(rest, ',')
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
		for {
			_, msg, err := conn.ReadMessage()
			if err != nil {
				if !s.stop.Load() {
					s.closes = append(s.closes, err.Error())
				}
				break
			}
			now := time.Now()
			// The console sends every event queued for a subscriber in one message, one
			// JSON event per line.
			for _, line := range bytes.Split(msg, []byte("\n")) {
				if len(line) == 0 {
					continue
				}
				s.msgs = append(s.msgs, received{at: now, raw: line})
				if id := quickID(line); id > s.maxID.Load() {
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
	dbURL, err := env.NewDB("fanout")
	if err != nil {
		return err
	}
	defer env.DropDB(dbURL)
	st, err := OpenStore(dbURL)
	if err != nil {
		return err
	}
	defer st.Close()
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

	// The job and its region exist before the consoles start, and the bench holds the
	// job's lease (store.ClaimJob), as the console that runs a job does: no runner of
	// either console takes it.
	dead := "https://" + freeAddr()
	r, err := seedRegion(ctx, st, RegionSeed{Name: "eu-west-1", Kubeconfig: kubeconfigFor("eu-west-1", dead, store32(1)), Server: dead,
		Location: "EU", ExternalIP: "127.0.200.1", Domain: "eu-west-1.fn.bench.test", Nodes: []string{"worker-1"},
		Health: okHealth("eu-west-1.fn.bench.test", "127.0.200.1")})
	if err != nil {
		return err
	}
	rid := r.ID
	j := &store.Job{Kind: ops.KindRedisTest, Title: "Test the Redis of eu-west-1", RegionID: &rid, CreatedBy: "bench@example.com"}
	if err := st.CreateJob(ctx, j, []store.JobStep{{Name: "ping", Title: "PING Redis from a pod"}}, ""); err != nil {
		return err
	}
	claimed, err := st.ClaimJob(ctx, "bench", time.Hour)
	if err != nil || claimed.ID != j.ID {
		return fmt.Errorf("claim the job: %v", err)
	}
	if err := a.Start(); err != nil {
		return err
	}
	defer a.Stop()
	if err := b.Start(); err != nil {
		return err
	}
	defer b.Stop()

	// Subscribers, half on each console.
	subs := make([]*subscriber, o.Subscribers)
	header := http.Header{"Authorization": {"Bearer " + a.Token}}
	for i := range subs {
		c := a
		if i%2 == 1 {
			c = b
		}
		subs[i] = &subscriber{console: i % 2, url: "ws://" + c.Addr + "/ws/jobs/" + j.ID + "?format=json", header: header}
	}
	fmt.Printf("connecting %d WebSocket subscribers (%d per console)\n", len(subs), len(subs)/2)
	dialStart := time.Now()
	if err := parallel(len(subs), 32, func(i int) error { return subs[i].dial() }); err != nil {
		return err
	}
	dialTook := time.Since(dialStart)
	for _, s := range subs {
		s.done = make(chan struct{})
		go s.read()
	}
	defer func() {
		for _, s := range subs {
			s.close()
		}
	}()

	// A warm-up event proves that every subscriber is registered with its console's hub.
	warm, err := st.AddEvent(ctx, &store.JobEvent{JobID: j.ID, Kind: "step", StepIdx: 0, Message: "PING Redis from a pod",
		Data: json.RawMessage(`{"idx":0,"name":"ping","status":"running"}`)})
	if err != nil {
		return err
	}
	if behind, _ := waitAll(subs, warm, 30*time.Second); behind > 0 {
		return fmt.Errorf("%d subscribers did not get the warm-up event", behind)
	}

	// Phase 1 (the figures with targets): the job emits its events one after the other,
	// as fast as the store takes them. Phase 2 (for comparison): the same number paced.
	var burstStart time.Time
	emit := func(n int, every time.Duration, tag string) ([]int64, time.Duration, error) {
		ids := make([]int64, 0, n)
		start := time.Now()
		if tag == "burst" {
			burstStart = start
		}
		for i := 0; i < n; i++ {
			if every > 0 {
				if d := time.Until(start.Add(time.Duration(i) * every)); d > 0 {
					time.Sleep(d)
				}
			}
			id, err := st.AddEvent(ctx, &store.JobEvent{JobID: j.ID, Kind: "log", StepIdx: 0, Level: "info",
				Message: fmt.Sprintf("redis-cli -h runr-redis.eu-west-1.svc -p 6379 PING (%s): line %d of %d: PONG (%d ms)", tag, i+1, n, 1+i%7)})
			if err != nil {
				return nil, 0, err
			}
			ids = append(ids, id)
		}
		return ids, time.Since(start), nil
	}
	fmt.Printf("emitting %d events, one after the other\n", o.Events)
	burst, burstTook, err := emit(o.Events, 0, "burst")
	if err != nil {
		return err
	}
	behind, drain := waitAll(subs, burst[len(burst)-1], 30*time.Second)
	var paced []int64
	var pacedTook time.Duration
	if o.PacedRate > 0 {
		time.Sleep(time.Second)
		fmt.Printf("emitting %d events at %d/s\n", o.Events, o.PacedRate)
		if paced, pacedTook, err = emit(o.Events, time.Second/time.Duration(o.PacedRate), "paced"); err != nil {
			return err
		}
		b2, d2 := waitAll(subs, paced[len(paced)-1], 30*time.Second)
		behind += b2
		drain = max(drain, d2)
	}
	for _, s := range subs {
		s.close()
	}
	for _, s := range subs {
		<-s.done
	}

	// Latency of the first arrival of each measured event at each subscriber.
	type phaseStats struct {
		lat      [2][]time.Duration
		missing  [2]int
		lastRecv time.Time
	}
	phaseOf := map[int64]int{}
	for _, id := range burst {
		phaseOf[id] = 1
	}
	for _, id := range paced {
		phaseOf[id] = 2
	}
	ph := map[int]*phaseStats{1: {}, 2: {}}
	reconnects := [2]int{}
	dup := 0
	var closes []string
	var errs []string
	for _, s := range subs {
		seen := map[int64]bool{}
		got := map[int]int{}
		for _, m := range s.msgs {
			var e struct {
				ID        int64     `json:"id"`
				CreatedAt time.Time `json:"created_at"`
			}
			if err := json.Unmarshal(m.raw, &e); err != nil || phaseOf[e.ID] == 0 {
				continue
			}
			if seen[e.ID] {
				dup++
				continue
			}
			seen[e.ID] = true
			p := ph[phaseOf[e.ID]]
			got[phaseOf[e.ID]]++
			p.lat[s.console] = append(p.lat[s.console], m.at.Sub(e.CreatedAt))
			if m.at.After(p.lastRecv) {
				p.lastRecv = m.at
			}
		}
		ph[1].missing[s.console] += len(burst) - got[1]
		ph[2].missing[s.console] += len(paced) - got[2]
		reconnects[s.console] += s.reconnects
		if len(s.closes) > 0 && len(closes) < 5 {
			closes = append(closes, s.closes[0])
		}
		if s.err != nil && len(errs) < 5 {
			errs = append(errs, s.err.Error())
		}
	}
	p1 := ph[1]
	sa, sb := statsOf(p1.lat[0]), statsOf(p1.lat[1])
	missed := p1.missing[0] + p1.missing[1] + ph[2].missing[0] + ph[2].missing[1]
	rssA, rssB := procStatus(a.Pid()), procStatus(b.Pid())

	id := sec.cmd("C2", fmt.Sprintf("%s\n# console A (PID %d) and console B (PID %d) on one database:\n%s %s serve\n%s %s serve\n# %d subscribers (fasthttp/websocket, Authorization: Bearer runr_…), odd ones on B:\nGET ws://%s/ws/jobs/%s?format=json\nGET ws://%s/ws/jobs/%s?format=json\n# then, from the bench process: %d × store.AddEvent(job %s) one after the other (as a job's runner emits its lines), then %d more at %d/s",
		benchCmd(o, "fanout"), a.Pid(), b.Pid(), a.EnvFor(), env.Runr, b.EnvFor(), env.Runr, len(subs), a.Addr, j.ID, b.Addr, j.ID, o.Events, j.ID, len(paced), o.PacedRate))
	deliveries := len(p1.lat[0]) + len(p1.lat[1])
	rep.add("2", "events emitted one after the other (1 job)", fmt.Sprintf("%d in %s (%.0f/s)", len(burst), secs(burstTook), float64(len(burst))/burstTook.Seconds()), id)
	rep.add("2", "deliveries (events × subscribers)", fmt.Sprintf("%d of %d in %s", deliveries, len(burst)*len(subs), secs(p1.lastRecv.Sub(burstStart))), id)
	rep.add("2", "console A (the job's console): latency p50", ms(sa.P50), id)
	rep.check("2", "console A (the job's console): latency p99", ms(sa.P99), "< 50 ms", sa.P99 < 50*time.Millisecond && sa.N > 0, id)
	rep.add("2", "console B (across processes): latency p50", ms(sb.P50), id)
	rep.check("2", "console B (across processes): latency p99", ms(sb.P99), "< 150 ms", sb.P99 < 150*time.Millisecond && sb.N > 0, id)
	rep.check("2", "events missed by a subscriber", fmt.Sprintf("%d", missed), "0", missed == 0, id)
	if len(paced) > 0 {
		pa, pb := statsOf(ph[2].lat[0]), statsOf(ph[2].lat[1])
		rep.add("2", fmt.Sprintf("for comparison, %d events at %d/s: p50 / p99, console A", len(paced), o.PacedRate), ms(pa.P50)+" / "+ms(pa.P99), id)
		rep.add("2", fmt.Sprintf("for comparison, %d events at %d/s: p50 / p99, console B", len(paced), o.PacedRate), ms(pb.P50)+" / "+ms(pb.P99), id)
	}

	var d strings.Builder
	d.WriteString("| Events | Subscribers | Deliveries | p50 | p99 | max | mean | Missed |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, n := range []int{1, 2} {
		p := ph[n]
		if n == 2 && len(paced) == 0 {
			continue
		}
		label := fmt.Sprintf("%d one after the other (%.0f/s; targets)", len(burst), float64(len(burst))/burstTook.Seconds())
		if n == 2 {
			label = fmt.Sprintf("%d paced at %d/s (for comparison; %s)", len(paced), o.PacedRate, secs(pacedTook))
		}
		for i, name := range []string{"console A", "console B"} {
			s := statsOf(p.lat[i])
			fmt.Fprintf(&d, "| %s | %s: %d | %d | %s | %s | %s | %s | %d |\n", label, name, len(subs)/2, s.N, ms(s.P50), ms(s.P99), ms(s.Max), ms(s.Mean), p.missing[i])
		}
	}
	d.WriteString("\n")
	sec.Details = append(sec.Details, d.String())
	sec.note("Latency is the subscriber's receive time (`time.Now()` when `ReadMessage` returns in the bench process) minus the event's `created_at`, which PostgreSQL sets when `store.AddEvent` inserts it; both clocks are this machine's. It therefore includes the insert and commit, NOTIFY, the hub's fan-out, the JSON encoding, the WebSocket write and the client's scheduling.")
	sec.note("The console's hub has no in-process path: every event, including those of the jobs a console runs itself, reaches that console's subscribers through PostgreSQL LISTEN/NOTIFY (web/hub.go). So \"same process\" and \"across processes\" are the same mechanism here; console A stands for the console that runs the job (the bench holds the job's lease through `store.ClaimJob` and emits its events with `store.AddEvent`, as a runner does), console B is the second process on the same database.")
	sec.note("The %d subscribers connected in %s; a warm-up event (not counted) proved each of them registered before the measured events. A subscriber whose connection closes (the hub closes one that falls %d events behind) reconnects with `?after=<last id>` as the browser does; an event is counted as missed only if it never arrived. Reconnects: %d (console A %d, B %d); duplicates dropped: %d; subscribers still behind after %s of draining: %d.", len(subs), dialTook.Round(time.Millisecond), 4096, reconnects[0]+reconnects[1], reconnects[0], reconnects[1], dup, drain.Round(time.Millisecond), behind)
	if len(closes) > 0 {
		sec.note("First connection closes seen: %s.", strings.Join(closes, "; "))
	}
	if len(errs) > 0 {
		sec.note("Reconnect failures: %s.", strings.Join(errs, "; "))
	}
	sec.note("The bench process runs the %d clients and PostgreSQL runs beside both consoles on the same %d CPUs, so the clients' own scheduling delay is part of the figures. Console RSS after the run: A %.0f MiB, B %.0f MiB.", len(subs), rep.Machine.Nproc, float64(rssA["VmRSS"])/1024, float64(rssB["VmRSS"])/1024)
	if len(paced) > 0 {
		sec.note("When events come faster than the consoles can write them to %d sockets, they queue in each subscriber's channel and latency grows with the queue: compare the paced phase, in which the same consoles and subscribers see each event on its own.", len(subs))
	}
	return nil
}
