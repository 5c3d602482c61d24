package hub_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"runr.dev/console/crypt"
	"runr.dev/console/hub"
	"runr.dev/console/store"
	"runr.dev/console/store/storetest"
)

// setup runs a hub on one connection pool of a fresh database and returns another pool
// on the same database, the way another console process publishes.
func setup(t *testing.T) (*hub.Hub, *store.Store) {
	t.Helper()
	url := storetest.NewURL(t)
	cipher, err := crypt.NewCipher(storetest.AppKey)
	if err != nil {
		t.Fatal(err)
	}
	open := func() *store.Store {
		st, err := store.Open(context.Background(), url, cipher)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	stHub, stPub := open(), open()
	h := hub.New(stHub, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	select {
	case <-h.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("the hub did not start listening")
	}
	return h, stPub
}

func newJob(t *testing.T, st *store.Store) string {
	t.Helper()
	j := &store.Job{Kind: "test", Title: "Test"}
	if err := st.CreateJob(context.Background(), j, nil, ""); err != nil {
		t.Fatal(err)
	}
	return j.ID
}

func addEvent(t *testing.T, st *store.Store, jobID, msg string) *store.JobEvent {
	t.Helper()
	e := &store.JobEvent{JobID: jobID, Kind: "log", StepIdx: 2, Level: "warn", Message: msg, Data: json.RawMessage(`{"n":1}`)}
	if _, err := st.AddEvent(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	return e
}

func next(t *testing.T, s *hub.Sub, what string) hub.Msg {
	t.Helper()
	select {
	case m := <-s.C:
		return m
	case <-s.Closed:
		t.Fatalf("the subscriber was closed while waiting for %s", what)
	case <-time.After(10 * time.Second):
		t.Fatalf("gave up waiting for %s", what)
	}
	return hub.Msg{}
}

// nextJob waits for a job subscriber's next event.
func nextJob(t *testing.T, s *hub.Sub, what string) hub.Msg {
	t.Helper()
	for {
		msgs, ok := s.Take(1)
		if !ok {
			t.Fatalf("the subscriber fell behind while waiting for %s", what)
		}
		if len(msgs) == 1 {
			return msgs[0]
		}
		select {
		case <-s.Ready():
		case <-s.Closed:
			t.Fatalf("the subscriber was closed while waiting for %s", what)
		case <-time.After(10 * time.Second):
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

func closed(s *hub.Sub) bool {
	select {
	case <-s.Closed:
		return true
	default:
		return false
	}
}

func waitClosed(t *testing.T, s *hub.Sub, what string) {
	t.Helper()
	select {
	case <-s.Closed:
	case <-time.After(10 * time.Second):
		t.Fatalf("gave up waiting for %s to be closed", what)
	}
}

// TestSubscriberGetsItsJobsEvents proves that a subscriber receives, decoded and as raw
// JSON, the events of its job published from another connection, and none of another
// job's.
func TestSubscriberGetsItsJobsEvents(t *testing.T) {
	h, st := setup(t)
	mine, other := newJob(t, st), newJob(t, st)
	sub := h.Subscribe(mine)
	defer h.Unsubscribe(mine, sub)

	addEvent(t, st, other, "not for you")
	want := addEvent(t, st, mine, "for you")
	m := nextJob(t, sub, "the job's event")
	e := m.Event
	if e.ID != want.ID || e.JobID != mine || e.Kind != "log" || e.StepIdx != 2 || e.Level != "warn" || e.Message != "for you" {
		t.Errorf("got event %+v, want %+v", e, want)
	}
	var raw store.JobEvent
	if err := json.Unmarshal(m.Raw, &raw); err != nil {
		t.Fatalf("raw event %s: %v", m.Raw, err)
	}
	if raw.ID != want.ID || raw.Message != "for you" {
		t.Errorf("raw event %s does not match %+v", m.Raw, want)
	}
	var data struct{ N int }
	if err := json.Unmarshal(e.Data, &data); err != nil || data.N != 1 {
		t.Errorf("event data %s, want {\"n\": 1}", e.Data)
	}
	// Notifications arrive in commit order: had the other job's event been delivered, it
	// would be ahead of this one.
	if msgs, _ := sub.Take(10); len(msgs) > 0 {
		t.Errorf("an unexpected event reached the subscriber: %+v", msgs[0].Event)
	}
}

// TestRegionSubscribersGetRegionChanges proves that region subscribers are told of a
// changed region (store.NotifyRegion) while job subscribers are not, and that an
// unsubscribed region subscriber is closed and gets nothing more.
func TestRegionSubscribersGetRegionChanges(t *testing.T) {
	h, st := setup(t)
	job := newJob(t, st)
	jobSub := h.Subscribe(job)
	defer h.Unsubscribe(job, jobSub)
	rs, gone := h.SubscribeRegions(), h.SubscribeRegions()
	defer h.UnsubscribeRegions(rs)
	h.UnsubscribeRegions(gone)
	if !closed(gone) {
		t.Errorf("an unsubscribed region subscriber is not closed")
	}

	if err := st.NotifyRegion(context.Background(), "region-1"); err != nil {
		t.Fatal(err)
	}
	m := next(t, rs, "the region change")
	if m.Event.Kind != "region" || m.Event.Message != "region-1" {
		t.Errorf("got %+v, want the change of region-1", m.Event)
	}
	addEvent(t, st, job, "after the region change")
	if m := nextJob(t, jobSub, "the job's event"); m.Event.Kind != "log" || m.Event.Message != "after the region change" {
		t.Errorf("the job subscriber got %+v first, want only its job's event", m.Event)
	}
	select {
	case m := <-gone.C:
		t.Errorf("an unsubscribed region subscriber got %+v", m.Event)
	default:
	}
}

// publishMany publishes n events of a job from one statement, in the format of
// store.AddEvent, and returns once they are committed.
func publishMany(t *testing.T, st *store.Store, jobID string, n int) {
	t.Helper()
	var got int
	err := st.DB.Get(&got, `WITH ins AS (
			INSERT INTO job_events (job_id, kind, message) SELECT $1, 'log', 'line ' || g FROM generate_series(1, $2) g RETURNING *)
		SELECT count(pg_notify($3, json_build_object('id', ins.id, 'job_id', ins.job_id, 'created_at', ins.created_at,
			'kind', ins.kind, 'step_idx', ins.step_idx, 'level', ins.level, 'message', ins.message, 'data', ins.data)::text)) FROM ins`,
		jobID, n, store.EventsChannel)
	if err != nil || got != n {
		t.Fatalf("publish %d events: %d, %v", n, got, err)
	}
}

// TestSlowSubscriberIsClosed proves that a subscriber that does not read is kept while
// it is up to SubBuffer events behind and closed when it falls further behind, while a
// subscriber that reads gets every event in order.
func TestSlowSubscriberIsClosed(t *testing.T) {
	h, st := setup(t)
	job := newJob(t, st)
	slow, fast := h.Subscribe(job), h.Subscribe(job)
	defer h.Unsubscribe(job, slow)
	defer h.Unsubscribe(job, fast)

	var mu sync.Mutex
	received := 0
	var lastID int64
	ordered := true
	reader := make(chan struct{})
	go func() {
		defer close(reader)
		for {
			select {
			case <-fast.Ready():
				msgs, _ := fast.Take(256)
				mu.Lock()
				for _, m := range msgs {
					received++
					ordered = ordered && m.Event.ID > lastID
					lastID = m.Event.ID
				}
				mu.Unlock()
			case <-fast.Closed:
				return
			}
		}
	}()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return received
	}
	waitCount := func(n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for count() < n {
			if time.Now().After(deadline) {
				t.Fatalf("the reading subscriber got %d events, want %d", count(), n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	publishMany(t, st, job, hub.SubBuffer)
	// The hub hands each event to every subscriber before the next: once the reader has
	// them all, the slow one has been offered them all too.
	waitCount(hub.SubBuffer)
	if closed(slow) {
		t.Fatalf("a subscriber exactly SubBuffer events behind was closed")
	}

	addEvent(t, st, job, "one too many")
	waitClosed(t, slow, "the slow subscriber")
	if _, ok := slow.Take(1); ok {
		t.Errorf("the closed slow subscriber could still take events")
	}
	waitCount(hub.SubBuffer + 1)
	if closed(fast) {
		t.Errorf("the reading subscriber was closed")
	}
	mu.Lock()
	defer mu.Unlock()
	if !ordered {
		t.Errorf("the reading subscriber got events out of order")
	}
}

// TestWaitWakesOnTheNextEvent proves that Wait's channel stays open until the job's next
// event and closes then, and that its stop function may be called more than once.
func TestWaitWakesOnTheNextEvent(t *testing.T) {
	h, st := setup(t)
	job, other := newJob(t, st), newJob(t, st)
	done, stop := h.Wait(job)
	defer stop()

	// An event of another job, seen by that job's subscriber, does not wake the caller.
	otherSub := h.Subscribe(other)
	defer h.Unsubscribe(other, otherSub)
	addEvent(t, st, other, "elsewhere")
	nextJob(t, otherSub, "the other job's event")
	select {
	case <-done:
		t.Fatal("Wait woke before its job had an event")
	default:
	}

	addEvent(t, st, job, "progress")
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not wake on its job's event")
	}
	stop()
	stop()
}

// TestLostListenerClosesSubscribers proves that when the hub's listening connection is
// lost, its job subscribers are closed (they reload the history they may have missed),
// and that once it has listened again new subscribers get events again.
func TestLostListenerClosesSubscribers(t *testing.T) {
	h, st := setup(t)
	job := newJob(t, st)
	sub := h.Subscribe(job)
	defer h.Unsubscribe(job, sub)

	var killed int
	if err := st.DB.Get(&killed, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND query ILIKE 'listen%'`); err != nil {
		t.Fatal(err)
	}
	if killed != 1 {
		t.Fatalf("terminated %d listening connections, want the hub's one", killed)
	}
	waitClosed(t, sub, "the subscriber of the lost connection")

	again := h.Subscribe(job)
	defer h.Unsubscribe(job, again)
	addEvent(t, st, job, "after the reconnection")
	if m := nextJob(t, again, "an event after the reconnection"); m.Event.Message != "after the reconnection" {
		t.Errorf("got %+v", m.Event)
	}
}
