package observability

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"runr.dev/console/agent"
	"runr.dev/console/store"
	"runr.dev/console/store/agentdb"
)

// RecordAgentReport stores one report of a cluster's agent for every region of the
// cluster (as its connection last read them): a metric snapshot (not for a region that is
// not active), a pod session or a Kubernetes event.
func (s *Service) RecordAgentReport(ctx context.Context, regions []store.AgentRegion, m agent.Message) error {
	at := m.At
	if at.IsZero() {
		at = time.Now().UTC()
	}
	var raw []byte
	if m.Type == "snapshot" && m.Snapshot != nil {
		var err error
		if raw, err = json.Marshal(m.Snapshot); err != nil {
			return err
		}
	}
	var errs []error
	var active []store.AgentRegion
	for _, r := range regions {
		kept, err := s.recordReport(ctx, r, m, at, raw)
		if kept {
			active = append(active, r)
		}
		errs = append(errs, err)
	}
	if s.Meter != nil && len(active) > 0 {
		errs = append(errs, s.Meter(ctx, active, at, m.Snapshot.Projects))
	}
	return errors.Join(errs...)
}

// recordReport stores a report for one region; kept says that the report is a snapshot
// the region keeps (it is active).
func (s *Service) recordReport(ctx context.Context, r store.AgentRegion, m agent.Message, at time.Time, snapshot []byte) (kept bool, err error) {
	switch m.Type {
	case "snapshot":
		if snapshot == nil || r.Status != store.RegionActive {
			return false, nil // a region that is not active is left out of the snapshots
		}
		return true, s.Store.AddSnapshot(ctx, r.ID, at, snapshot)
	case "pod":
		return false, s.Store.AddPodSession(ctx, r.ID, m.Namespace, m.Pod, m.Event, m.Restarts, at)
	case "event":
		return false, s.Store.AddKubeEvent(ctx, r.ID, m.Namespace, m.Object, m.Kind, m.Reason, m.Message, at)
	}
	return false, nil
}

// agentWrites are the agents' connections, ends and reports a console has not written
// yet: it writes them together (store/agentdb), the connections and their ends every
// connectionsEvery, the last-seen marks every seenEvery, so that a fleet of agents
// reconnecting at once costs a few statements a second.
type agentWrites struct {
	mu        sync.Mutex
	connected map[string]time.Time // region → the start of its agent's newest connection
	gone      map[string]time.Time // region → the start of its agent's newest ended connection
	seen      map[string]bool
	start     sync.Once
}

// connectionsEvery is how often a console writes its agents' connections and their ends;
// seenEvery how often their last-seen marks (agent_last_seen_at).
const (
	connectionsEvery = 250 * time.Millisecond
	seenEvery        = 5 * time.Second
)

// AgentConnected records that the agent of these regions connected at at (shown
// connected and seen then, unless a later connection is recorded), within connectionsEvery.
func (s *Service) AgentConnected(regionIDs []string, at time.Time) {
	s.queueLatest(connectionsOf(regionIDs, at), connectedOf)
}

// AgentGone records that an agent's connection, which began at connectedAt, has ended:
// within connectionsEvery its regions show the agent disconnected, unless a later
// connection was recorded.
func (s *Service) AgentGone(regionIDs []string, connectedAt time.Time) {
	s.queueLatest(connectionsOf(regionIDs, connectedAt), goneOf)
}

// MarkSeen notes that the agent of these regions reported now; the mark is written
// within seenEvery, with the marks of the console's other agents in one statement.
func (s *Service) MarkSeen(regionIDs []string) {
	s.queue(func(w *agentWrites) {
		for _, id := range regionIDs {
			w.seen[id] = true
		}
	})
}

// queue adds to the writes not written yet (and starts their writer).
func (s *Service) queue(add func(*agentWrites)) {
	w := &s.agentWrites
	w.start.Do(func() { go s.writeAgents() })
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.connected == nil {
		w.connected, w.gone, w.seen = map[string]time.Time{}, map[string]time.Time{}, map[string]bool{}
	}
	add(w)
}

// writeAgents writes the queued connections every connectionsEvery and the marks every
// seenEvery, for the life of the process.
func (s *Service) writeAgents() {
	lastSeen := time.Now()
	for range time.Tick(connectionsEvery) {
		marks := time.Since(lastSeen) >= seenEvery
		if marks {
			lastSeen = time.Now()
		}
		ctx, cancel := context.WithTimeout(context.Background(), seenEvery)
		s.FlushAgentWrites(ctx, marks)
		cancel()
	}
}

// FlushAgentWrites writes the queued connections and their ends (the connections first:
// a connection that began and ended since the last write ends shown disconnected), and
// the last-seen marks too when marks is set. The console calls it once more as it stops.
func (s *Service) FlushAgentWrites(ctx context.Context, marks bool) {
	w := &s.agentWrites
	w.mu.Lock()
	connected, gone, seen := asConnections(w.connected), asConnections(w.gone), []string(nil)
	clear(w.connected)
	clear(w.gone)
	if marks {
		seen = slices.Collect(maps.Keys(w.seen))
		clear(w.seen)
	}
	w.mu.Unlock()
	// What could not be written is queued again, for the next write. The ends wait for
	// the connections: the end of a connection not shown yet would be overwritten by it.
	db := agentdb.New(s.Store)
	if len(connected) > 0 {
		if err := db.SetConnected(ctx, connected); err != nil {
			s.Log.Warn("agent: connected (written again shortly)", "regions", len(connected), "err", err)
			s.queueLatest(connected, connectedOf)
			s.queueLatest(gone, goneOf)
			gone = nil
		}
	}
	if len(gone) > 0 {
		if err := db.SetDisconnected(ctx, gone, time.Now().UTC()); err != nil {
			s.Log.Warn("agent: disconnected (written again shortly)", "regions", len(gone), "err", err)
			s.queueLatest(gone, goneOf)
		}
	}
	if len(seen) > 0 {
		if err := db.SetSeen(ctx, seen, time.Now().UTC()); err != nil {
			s.Log.Warn("agent: last seen (written with the next marks)", "regions", len(seen), "err", err)
			s.MarkSeen(seen)
		}
	}
}

// queueLatest queues connections (to connectedOf or goneOf), each unless a later one of
// its region is queued already.
func (s *Service) queueLatest(cs []agentdb.Connection, queued func(*agentWrites) map[string]time.Time) {
	s.queue(func(w *agentWrites) {
		m := queued(w)
		for _, c := range cs {
			if c.At.After(m[c.RegionID]) {
				m[c.RegionID] = c.At
			}
		}
	})
}

func connectedOf(w *agentWrites) map[string]time.Time { return w.connected }
func goneOf(w *agentWrites) map[string]time.Time      { return w.gone }

// connectionsOf is one connection per region, all at at.
func connectionsOf(regionIDs []string, at time.Time) []agentdb.Connection {
	out := make([]agentdb.Connection, len(regionIDs))
	for i, id := range regionIDs {
		out[i] = agentdb.Connection{RegionID: id, At: at}
	}
	return out
}

// asConnections lists a region → time map as connections.
func asConnections(m map[string]time.Time) []agentdb.Connection {
	out := make([]agentdb.Connection, 0, len(m))
	for id, at := range m {
		out = append(out, agentdb.Connection{RegionID: id, At: at})
	}
	return out
}
