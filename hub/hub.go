// Package hub fans job events and region changes out to the WebSocket subscribers and
// JSON feeds of every console process, from PostgreSQL LISTEN/NOTIFY.
package hub

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/lib/pq"

	"runr.dev/console/store"
)

// Hub fans job events out to WebSocket subscribers and JSON feeds. Events arrive
// through PostgreSQL LISTEN/NOTIFY, so every console replica sees every job's events,
// whichever replica runs the job.
type Hub struct {
	store *store.Store
	log   *slog.Logger

	mu        sync.RWMutex
	jobs      map[string]*feed  // job id -> its recent events and subscribers
	regions   map[*Sub]struct{} // subscribers of region changes (banners)
	listeners map[*Sub]struct{} // subscribers of list changes (live list pages)
	ready     chan struct{}

	// lists are told of every change to what the region lists show (ListsChannel), and
	// whether the listener is connected (while it is not, no change can be heard).
	lists []ListWatcher
	// pages are told of changes on RegionPagesChannel only.
	pages []ListWatcher
}

// ListWatcher is told when the region lists change (Changed) and whether changes can be
// heard at all (Listening): a cache of rendered lists serves only while Listening is true.
type ListWatcher interface {
	Changed()
	Listening(bool)
}

// WatchLists registers w; call it before Run.
func (h *Hub) WatchLists(w ListWatcher) { h.lists = append(h.lists, w) }

// WatchRegionPages registers w for the changes of RegionPagesChannel as well as those of
// ListsChannel; call it before Run.
func (h *Hub) WatchRegionPages(w ListWatcher) {
	h.lists = append(h.lists, w)
	h.pages = append(h.pages, w)
}

func (h *Hub) regionPagesChanged() {
	for _, w := range h.pages {
		w.Changed()
	}
}

func (h *Hub) listsChanged() {
	for _, w := range h.lists {
		w.Changed()
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	for s := range h.listeners {
		select {
		case s.C <- Msg{Event: store.JobEvent{Kind: "lists"}}:
		default: // one change waiting is as good as many
		}
	}
}

func (h *Hub) listening(on bool) {
	for _, w := range h.lists {
		w.Listening(on)
	}
}

// Sub is one subscriber. A region subscriber reads C. A job subscriber is woken on
// Ready when its job has new events and takes them with Take: the events are kept once
// per job for all its subscribers, not queued once per subscriber. A subscriber that
// falls too far behind is closed (it reconnects and reads the history again).
type Sub struct {
	C      chan Msg
	Closed chan struct{}
	once   sync.Once

	feed  *feed
	ready chan struct{}
	next  uint64 // sequence number of the next event it takes (under feed.mu)
}

func (s *Sub) close() { s.once.Do(func() { close(s.Closed) }) }

// Ready receives when the job has events the subscriber has not taken.
func (s *Sub) Ready() <-chan struct{} { return s.ready }

// wake tells the subscriber of new events without waiting (once is enough).
func (s *Sub) wake() {
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// Take returns up to max events the subscriber has not taken, oldest first, and false
// when it fell too far behind (it is closed). The events are shared: do not change them.
func (s *Sub) Take(max int) ([]Msg, bool) {
	f := s.feed
	f.mu.Lock()
	defer f.mu.Unlock()
	if s.next < f.base {
		s.close()
		return nil, false
	}
	from := int(s.next - f.base)
	to := min(len(f.msgs), from+max)
	s.next += uint64(to - from)
	if to < len(f.msgs) {
		s.wake() // more to take
	}
	return f.msgs[from:to:to], true
}

// feed is a job's recent events, kept for its subscribers: from the oldest event one of
// them has not taken, at most SubBuffer.
type feed struct {
	mu   sync.Mutex
	msgs []Msg
	base uint64 // sequence number of msgs[0]
	subs map[*Sub]struct{}
}

// add appends m, forgets what every subscriber took, closes the subscribers that would
// fall more than SubBuffer events behind, and wakes the others.
func (f *feed) add(m Msg) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.msgs = append(f.msgs, m)
	end := f.base + uint64(len(f.msgs))
	oldest := end
	for s := range f.subs {
		if end-s.next > SubBuffer {
			s.close()
			continue
		}
		oldest = min(oldest, s.next)
		s.wake()
	}
	if drop := int(oldest - f.base); drop > 0 {
		f.msgs = f.msgs[drop:]
		f.base = oldest
	}
}

// Msg is one event as it arrived: decoded, and its JSON as PostgreSQL sent it (so that
// JSON subscribers get it without encoding it again, once per subscriber).
type Msg struct {
	Event store.JobEvent
	Raw   []byte
}

// SubBuffer is how many events a subscriber may lag behind.
const SubBuffer = 4096

// New builds a hub; Run starts it.
func New(st *store.Store, log *slog.Logger) *Hub {
	return &Hub{store: st, log: log, jobs: map[string]*feed{}, regions: map[*Sub]struct{}{}, listeners: map[*Sub]struct{}{}, ready: make(chan struct{})}
}

// Ready is closed once the hub listens.
func (h *Hub) Ready() <-chan struct{} { return h.ready }

// Run listens for events until ctx ends.
func (h *Hub) Run(ctx context.Context) {
	l := pq.NewListener(h.store.URL, 100*time.Millisecond, 5*time.Second, func(ev pq.ListenerEventType, err error) {
		if err != nil {
			h.log.Warn("hub: listener", "event", ev, "err", err)
		}
		switch ev {
		case pq.ListenerEventDisconnected, pq.ListenerEventConnectionAttemptFailed:
			h.listening(false)
		case pq.ListenerEventReconnected:
			// Changes made while disconnected were not heard; Notify gets nil as well.
			h.listening(true)
		}
	})
	defer l.Close()
	defer h.listening(false)
	listened := true
	for _, ch := range []string{store.EventsChannel, store.RegionsChannel, store.ListsChannel, store.RegionPagesChannel} {
		if err := l.Listen(ch); err != nil {
			listened = false
			h.log.Error("hub: listen", "channel", ch, "err", err)
		}
	}
	h.listening(listened)
	close(h.ready)
	ping := time.NewTicker(30 * time.Second)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ping.C:
			go l.Ping()
		case n := <-l.Notify:
			if n == nil {
				// The connection was re-established: subscribers may have missed events.
				h.resyncAll()
				h.listsChanged()
				continue
			}
			switch n.Channel {
			case store.EventsChannel:
				// A region page shows its latest job's events.
				h.regionPagesChanged()
				var e store.JobEvent
				if err := json.Unmarshal([]byte(n.Extra), &e); err != nil {
					h.log.Warn("hub: bad event", "err", err)
					continue
				}
				h.publish(Msg{Event: e, Raw: []byte(n.Extra)})
			case store.RegionsChannel:
				h.publishRegion(n.Extra)
			case store.ListsChannel:
				h.listsChanged()
			case store.RegionPagesChannel:
				h.regionPagesChanged()
			}
		}
	}
}

func (h *Hub) publish(m Msg) {
	h.mu.RLock()
	f := h.jobs[m.Event.JobID]
	h.mu.RUnlock()
	if f != nil {
		f.add(m)
	}
}

func (h *Hub) publishRegion(id string) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for s := range h.regions {
		select {
		case s.C <- Msg{Event: store.JobEvent{Kind: "region", Message: id}}:
		default:
		}
	}
}

// resyncAll closes every job subscriber so that it reloads the history.
func (h *Hub) resyncAll() {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, f := range h.jobs {
		f.mu.Lock()
		for s := range f.subs {
			s.close()
		}
		f.mu.Unlock()
	}
}

// Subscribe registers a subscriber of a job's events: it gets those published from now.
func (h *Hub) Subscribe(jobID string) *Sub {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := h.jobs[jobID]
	if f == nil {
		f = &feed{subs: map[*Sub]struct{}{}}
		h.jobs[jobID] = f
	}
	s := &Sub{Closed: make(chan struct{}), feed: f, ready: make(chan struct{}, 1)}
	f.mu.Lock()
	s.next = f.base + uint64(len(f.msgs))
	f.subs[s] = struct{}{}
	f.mu.Unlock()
	return s
}

// Unsubscribe removes a job subscriber.
func (h *Hub) Unsubscribe(jobID string, s *Sub) {
	h.mu.Lock()
	if f := h.jobs[jobID]; f != nil {
		f.mu.Lock()
		delete(f.subs, s)
		if len(f.subs) == 0 {
			delete(h.jobs, jobID)
		}
		f.mu.Unlock()
	}
	h.mu.Unlock()
	s.close()
}

// SubscribeRegions registers a subscriber of region changes.
func (h *Hub) SubscribeRegions() *Sub {
	s := &Sub{C: make(chan Msg, 16), Closed: make(chan struct{})}
	h.mu.Lock()
	h.regions[s] = struct{}{}
	h.mu.Unlock()
	return s
}

// UnsubscribeRegions removes a region subscriber.
func (h *Hub) UnsubscribeRegions(s *Sub) {
	h.mu.Lock()
	delete(h.regions, s)
	h.mu.Unlock()
	s.close()
}

// SubscribeLists registers a subscriber of list changes (any change to what the region
// lists show, jobs included); changes not yet taken coalesce into one.
func (h *Hub) SubscribeLists() *Sub {
	s := &Sub{C: make(chan Msg, 1), Closed: make(chan struct{})}
	h.mu.Lock()
	h.listeners[s] = struct{}{}
	h.mu.Unlock()
	return s
}

// UnsubscribeLists removes a list subscriber.
func (h *Hub) UnsubscribeLists(s *Sub) {
	h.mu.Lock()
	delete(h.listeners, s)
	h.mu.Unlock()
	s.close()
}

// Wait implements handlers.EventWaiter: the channel closes at the job's next event.
func (h *Hub) Wait(jobID string) (<-chan struct{}, func()) {
	s := h.Subscribe(jobID)
	done := make(chan struct{})
	stop := make(chan struct{})
	go func() {
		select {
		case <-s.Ready():
		case <-s.Closed:
		case <-stop:
		}
		close(done)
	}()
	var once sync.Once
	return done, func() {
		once.Do(func() {
			close(stop)
			h.Unsubscribe(jobID, s)
		})
	}
}
