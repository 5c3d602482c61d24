package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a-h/templ"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/websocket/v2"

	"runr.dev/console/agent"
	"runr.dev/console/config"
	"runr.dev/console/hub"
	"runr.dev/console/store"
	"runr.dev/console/views"
)

// socketCounts counts the open WebSockets of each user.
type socketCounts struct {
	mu sync.Mutex
	n  map[string]int
}

// acquire takes one of the user's most sockets, or reports that none is left.
func (s *socketCounts) acquire(user string, most int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = map[string]int{}
	}
	if s.n[user] >= most {
		return false
	}
	s.n[user]++
	return true
}

func (s *socketCounts) release(user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n[user] <= 1 {
		delete(s.n, user)
		return
	}
	s.n[user]--
}

// socket is a WebSocket route serving each connection with serve. It answers 426 to
// requests that are not WebSocket upgrades, 403 to a browser's upgrade from another site
// (its Origin is not this host: a page elsewhere must not read the progress of the
// console's jobs with the user's session), and 429 to a user who holds the most sockets
// (RUNR_SOCKETS_PER_USER) already.
func (h *Handlers) socket(serve func(*websocket.Conn)) fiber.Handler {
	upgrade := websocket.New(func(conn *websocket.Conn) {
		if p, _ := conn.Locals(PrincipalKey).(*Principal); p != nil {
			defer h.sockets.release(p.User.ID)
		}
		serve(conn)
	})
	return func(c *fiber.Ctx) error {
		if !websocket.IsWebSocketUpgrade(c) {
			return fiber.ErrUpgradeRequired
		}
		if o := c.Get(fiber.HeaderOrigin); o != "" {
			if u, err := url.Parse(o); err != nil || !strings.EqualFold(u.Host, c.Hostname()) {
				return JSONError(c, fiber.StatusForbidden, "WebSocket from another origin refused.")
			}
		}
		p := Who(c)
		if p == nil { // a region's agent, one per cluster
			return upgrade(c)
		}
		most := h.Cfg.SocketsPerUser
		if most == 0 {
			most = config.DefaultSocketsPerUser
		}
		if !h.sockets.acquire(p.User.ID, most) {
			h.Log.Warn("websocket refused: the user holds the most sockets", "user", p.User.Email, "most", most)
			return JSONError(c, fiber.StatusTooManyRequests, fmt.Sprintf("You have %d live connections open (pages or feeds) already: close some and try again.", most))
		}
		err := upgrade(c)
		if c.Response().StatusCode() != fiber.StatusSwitchingProtocols {
			h.sockets.release(p.User.ID) // the upgrade failed: serve never runs
		}
		return err
	}
}

// Read limits of the sockets: a browser sends nothing but pongs and small control
// frames; an agent sends snapshots. A bigger frame closes that socket with 1009
// (message too big) before its payload is read, so its memory is never taken.
const (
	BrowserReadLimit = 4 << 10
	AgentReadLimit   = 1 << 20
)

// maxBatch is how many events one WebSocket message carries at most. JSON subscribers
// get one event per line (NDJSON); browsers get the fragments of all of them.
const maxBatch = 256

var newline = []byte("\n")

// burstGap is the least time between two messages to one subscriber while events come
// faster than that: an event after a quiet spell goes out at once, and during a burst
// each subscriber gets one message per burstGap with everything since, instead of one
// write (and one read) per event, which kept 500 subscribers' sockets and the clients
// busy enough to queue a burst for 200 ms.
const burstGap = 10 * time.Millisecond

// wsConn serialises writes to one connection and pings it.
type wsConn struct {
	mu       sync.Mutex
	conn     *websocket.Conn
	deadline time.Time
}

// writeTimeout is how long one write may take; the deadline is moved on only once half
// of it has passed (moving it is a timer change per write, during a burst many a second).
const writeTimeout = 10 * time.Second

func (w *wsConn) write(kind int, b []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if now := time.Now(); w.deadline.Sub(now) < writeTimeout/2 {
		w.deadline = now.Add(writeTimeout)
		_ = w.conn.SetWriteDeadline(w.deadline)
	}
	return w.conn.WriteMessage(kind, b)
}

// readLoop consumes client frames (and the pongs) and closes done when the client goes.
func (w *wsConn) readLoop(done chan struct{}) {
	defer close(done)
	for {
		if _, _, err := w.conn.ReadMessage(); err != nil {
			return
		}
	}
}

func render(c templ.Component) []byte {
	var b bytes.Buffer
	_ = c.Render(context.Background(), &b)
	return b.Bytes()
}

// socketCtx is the context of a socket's statements: in the walls of its user's tenant
// (a socket outlives its request, whose context carried them).
func socketCtx(conn *websocket.Conn) context.Context {
	if p, _ := conn.Locals(PrincipalKey).(*Principal); p != nil && p.User.Tenant() != "" {
		return store.WithTenant(context.Background(), p.User.Tenant())
	}
	return context.Background()
}

func pageFor(conn *websocket.Conn) views.Page {
	p, _ := conn.Locals(PrincipalKey).(*Principal)
	if p == nil {
		return views.Page{}
	}
	csrf, _ := conn.Locals("csrf").(string)
	return PrincipalPage(p, csrf)
}

// JobSocket streams a job's progress: htmx fragments for browsers, or JSON events with
// ?format=json (after ?after=ID). It first sends what the client may have missed, from
// the database, then every new event as it is published.
func (h *Handlers) JobSocket() fiber.Handler {
	return h.socket(func(conn *websocket.Conn) {
		conn.SetReadLimit(BrowserReadLimit)
		js := &jobStream{h: h, w: &wsConn{conn: conn}, id: conn.Params("id"), json: conn.Query("format") == "json", page: pageFor(conn)}
		js.p, _ = conn.Locals(PrincipalKey).(*Principal)
		sub := h.Hub.Subscribe(js.id)
		defer h.Hub.Unsubscribe(js.id, sub)
		ctx, cancel := context.WithCancel(socketCtx(conn))
		defer cancel()
		if !js.start(ctx, conn) {
			return
		}
		done := make(chan struct{})
		go js.w.readLoop(done)
		ping := time.NewTicker(25 * time.Second)
		defer ping.Stop()
		gap := time.NewTimer(time.Hour)
		gap.Stop()
		defer gap.Stop()
		var lastSent time.Time
		resync := func() {
			// Too far behind (or the listener reconnected): the client reconnects and
			// reads the history again.
			_ = js.w.write(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseTryAgainLater, "resync"))
		}
		for {
			select {
			case <-done:
				return
			case <-sub.Closed:
				resync()
				return
			case <-ping.C:
				if js.w.write(websocket.PingMessage, nil) != nil {
					return
				}
			case <-sub.Ready():
				if wait := time.Until(lastSent.Add(burstGap)); wait > 0 {
					gap.Reset(wait)
					select {
					case <-gap.C:
					case <-done:
						return
					}
				}
				batch, ok := sub.Take(maxBatch)
				if !ok {
					resync()
					return
				}
				if !js.send(ctx, batch) {
					return
				}
				lastSent = time.Now()
			}
		}
	})
}

// jobStream is one subscriber of a job's progress: what it was sent last, and how.
type jobStream struct {
	h    *Handlers
	w    *wsConn
	id   string
	json bool
	p    *Principal
	page views.Page
	d    JobData
	last int64
	out  bytes.Buffer // the message being written (reused: the socket copies it)
}

// start sends what the client may have missed; it reports whether the socket goes on.
func (js *jobStream) start(ctx context.Context, conn *websocket.Conn) bool {
	d, err := js.h.JobData(ctx, js.p, js.id)
	if err != nil {
		_ = js.w.write(websocket.CloseMessage, websocket.FormatCloseMessage(4404, "job not found"))
		return false
	}
	// ?wizard=N: the panel is a wizard step's, whose state in the wizard's header
	// follows the job.
	if n, err := strconv.Atoi(conn.Query("wizard")); err == nil && n >= 2 && n <= 7 {
		d.WizardStep = n
	}
	d.OnJobPage = conn.Query("page") == "job"
	if tab := conn.Query("tab"); tab != "" && IsRegionTab(tab) {
		d.Tab = tab
	}
	js.d = d
	for _, e := range d.Events {
		js.last = max(js.last, e.ID)
	}
	if js.json {
		after := int64(0)
		if v := conn.Query("after"); v != "" {
			_ = json.Unmarshal([]byte(v), &after)
		}
		return js.replayJSON(after)
	}
	if conn.Query("refresh") == "0" {
		return true
	}
	// A job that ended while the page connected ends for the page now: what follows it
	// (the tab fetched again, Continue) comes as if the page had seen the end.
	d.JustFinished = conn.Query("open") == "1" && d.Job.Done()
	return js.w.write(websocket.TextMessage, render(views.JobRefresh(js.page, d.View()))) == nil
}

// replayJSON sends the recorded events after an id, maxBatch per message.
func (js *jobStream) replayJSON(after int64) bool {
	var batch [][]byte
	for _, e := range js.d.Events {
		if e.ID > after {
			raw, _ := json.Marshal(e)
			batch = append(batch, raw)
		}
		if len(batch) == maxBatch {
			if js.w.write(websocket.TextMessage, bytes.Join(batch, newline)) != nil {
				return false
			}
			batch = batch[:0]
		}
	}
	return len(batch) == 0 || js.w.write(websocket.TextMessage, bytes.Join(batch, newline)) == nil
}

// send writes the new events of a batch in one message; it reports whether the socket
// goes on.
func (js *jobStream) send(ctx context.Context, batch []hub.Msg) bool {
	out := &js.out
	out.Reset()
	for _, m := range batch {
		e := m.Event
		if e.ID <= js.last {
			continue
		}
		js.last = e.ID
		if js.json {
			if out.Len() > 0 {
				out.Write(newline)
			}
			if len(m.Raw) > 0 {
				out.Write(m.Raw)
			} else {
				raw, _ := json.Marshal(e)
				out.Write(raw)
			}
			continue
		}
		js.render(ctx, e, out)
	}
	return out.Len() == 0 || js.w.write(websocket.TextMessage, out.Bytes()) == nil
}

// render appends the fragments of one event to out.
func (js *jobStream) render(ctx context.Context, e store.JobEvent, out *bytes.Buffer) {
	cur := applyEvent(&js.d, e)
	if e.Kind == "job" {
		// The job started or ended: what follows it (Continue, Retry, the region it
		// created) is read again from the database.
		if fresh, err := js.h.JobData(ctx, js.p, js.id); err == nil {
			fresh.WizardStep, fresh.OnJobPage, fresh.Tab = js.d.WizardStep, js.d.OnJobPage, js.d.Tab
			js.d, cur = fresh, fresh
		}
		cur.JustFinished = cur.Job.Done()
	}
	_ = views.JobUpdate(js.page, cur.View(), jobChange(e, stepOf(js.d, e), js.d.Steps)).Render(ctx, out)
}

// applyEvent updates the view's job and steps with one event.
func applyEvent(d *JobData, e store.JobEvent) JobData {
	switch e.Kind {
	case "step":
		var st store.JobStep
		if json.Unmarshal(e.Data, &st) == nil && st.Idx >= 0 && st.Idx < len(d.Steps) {
			d.Steps[st.Idx] = st
		}
	case "job":
		var v struct{ Status, Error string }
		if json.Unmarshal(e.Data, &v) == nil && v.Status != "" {
			j := *d.Job
			j.Status, j.Error = store.JobStatus(v.Status), v.Error
			if j.Done() {
				t := e.CreatedAt
				j.FinishedAt = &t
			} else {
				j.FinishedAt = nil
			}
			if j.StartedAt == nil {
				t := e.CreatedAt
				j.StartedAt = &t
			}
			d.Job = &j
		}
	}
	if d.Job.Status == store.JobQueued && e.Kind == "step" {
		j := *d.Job
		j.Status = store.JobRunning
		if j.StartedAt == nil {
			t := e.CreatedAt
			j.StartedAt = &t
		}
		d.Job = &j
	}
	return *d
}

func stepOf(d JobData, e store.JobEvent) *store.JobStep {
	if e.Kind != "step" && e.Kind != "wait" {
		return nil
	}
	if e.StepIdx < 0 || e.StepIdx >= len(d.Steps) {
		return nil
	}
	st := d.Steps[e.StepIdx]
	return &st
}

// BannerSocket pushes the migration banners whenever a region changes; a page that
// follows the lists (?lists=1, the regions page) is also told when they change
// (views.ListsChanged), at most about once a second.
func (h *Handlers) BannerSocket() fiber.Handler {
	return h.socket(func(conn *websocket.Conn) {
		conn.SetReadLimit(BrowserReadLimit)
		w := &wsConn{conn: conn}
		sub := h.Hub.SubscribeRegions()
		defer h.Hub.UnsubscribeRegions(sub)
		var lists <-chan hub.Msg // nil: this page does not follow the lists
		if conn.Query("lists") == "1" {
			ls := h.Hub.SubscribeLists()
			defer h.Hub.UnsubscribeLists(ls)
			lists = ls.C
		}
		done := make(chan struct{})
		go w.readLoop(done)
		ping := time.NewTicker(25 * time.Second)
		defer ping.Stop()
		for {
			select {
			case <-done:
				return
			case <-ping.C:
				if w.write(websocket.PingMessage, nil) != nil {
					return
				}
			case <-lists:
				// Coalesce bursts: a list page is fetched again at most about once a second.
				time.Sleep(time.Second)
				if w.write(websocket.TextMessage, render(views.ListsChanged())) != nil {
					return
				}
			case <-sub.C:
				// Coalesce bursts of region changes.
				time.Sleep(200 * time.Millisecond)
				for len(sub.C) > 0 {
					<-sub.C
				}
				ctx, cancel := context.WithTimeout(socketCtx(conn), 5*time.Second)
				bs, err := MigrationBanners(ctx, h.Store)
				cancel()
				if err != nil {
					continue
				}
				if w.write(websocket.TextMessage, render(views.Banners(bs))) != nil {
					return
				}
			}
		}
	})
}

// AgentRegionsKey is the Locals key of the regions an authenticated agent reports for;
// AgentTokenKey of its token (the socket reads its cluster's regions again with it).
const (
	AgentRegionsKey = "agent_regions"
	AgentTokenKey   = "agent_token"
)

// AgentSocket receives the reports of a cluster's agent, for every region of the cluster:
// metric snapshots (not for regions that are not active), pod sessions and events; it
// keeps the agent's last-seen time and its connection state.
func (h *Handlers) AgentSocket() fiber.Handler {
	return h.socket(func(conn *websocket.Conn) {
		regions, _ := conn.Locals(AgentRegionsKey).([]store.AgentRegion)
		token, _ := conn.Locals(AgentTokenKey).(string)
		log := h.Log.With("regions", agentRegionNames(regions))
		ctx := context.Background()
		// Microseconds, as PostgreSQL keeps them: AgentGone compares with what was stored.
		connectedAt := time.Now().UTC().Truncate(time.Microsecond)
		h.Ops.Observability.AgentConnected(agentRegionIDs(regions), connectedAt)
		log.Info("agent connected")
		defer func() {
			h.Ops.Observability.AgentGone(agentRegionIDs(regions), connectedAt)
			log.Info("agent disconnected")
		}()
		conn.SetReadLimit(AgentReadLimit)
		_ = conn.SetReadDeadline(time.Now().Add(90 * time.Second))
		conn.SetPingHandler(func(data string) error {
			_ = conn.SetReadDeadline(time.Now().Add(90 * time.Second))
			return conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(5*time.Second))
		})
		last := time.Now()
		for {
			_, raw, err := conn.ReadMessage()
			if err != nil {
				return
			}
			_ = conn.SetReadDeadline(time.Now().Add(90 * time.Second))
			var m agent.Message
			if err := json.Unmarshal(raw, &m); err != nil {
				log.Warn("agent: bad message", "err", err)
				continue
			}
			refresh := time.Since(last) > 10*time.Second
			if refresh || m.Type == "snapshot" {
				// Regions added to the cluster since the agent connected count too, and a
				// snapshot is kept for the regions that are active now.
				if rs, err := h.Store.RegionsByAgentToken(ctx, token); err == nil {
					regions = rs
				}
			}
			if err := h.Ops.Observability.RecordAgentReport(ctx, regions, m); err != nil {
				log.Warn("agent: store", "type", m.Type, "err", err)
			}
			if refresh {
				h.Ops.Observability.MarkSeen(agentRegionIDs(regions))
				last = time.Now()
			}
		}
	})
}

// agentRegionIDs are the ids of an agent's regions.
func agentRegionIDs(rs []store.AgentRegion) []string {
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.ID
	}
	return ids
}

// agentRegionNames names an agent's regions for the log.
func agentRegionNames(rs []store.AgentRegion) string {
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.Name
	}
	return strings.Join(names, ",")
}
