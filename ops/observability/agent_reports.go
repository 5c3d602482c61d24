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

// AgentSeen records that a cluster's agent reported, for every region of the cluster, and
// its connection state when it changed ("" when it did not), as of at.
func (s *Service) AgentSeen(ctx context.Context, regionIDs []string, status store.ComponentStatus, at time.Time) error {
	errs := []error{s.Store.SetAgentsSeen(ctx, regionIDs, at)}
	if status != "" {
		for _, id := range regionIDs {
			errs = append(errs, s.Store.SetComponent(ctx, id, "agent", store.ComponentState{Status: status, UpdatedAt: at}), s.Store.NotifyRegion(ctx, id))
		}
	}
	return errors.Join(errs...)
}

// seenMarks are the regions whose agent reported since they were last written: a
// console writes the marks of all its connected agents together, every seenEvery.
type seenMarks struct {
	mu    sync.Mutex
	ids   map[string]bool
	start sync.Once
}

// seenEvery is how often a console writes its agents' marks (agent_last_seen_at).
const seenEvery = 5 * time.Second

// MarkSeen notes that the agent of these regions reported now; the mark is written
// within seenEvery, with the marks of the console's other agents in one statement.
func (s *Service) MarkSeen(regionIDs []string) {
	s.seen.start.Do(func() { go s.writeSeen() })
	s.seen.mu.Lock()
	defer s.seen.mu.Unlock()
	if s.seen.ids == nil {
		s.seen.ids = map[string]bool{}
	}
	for _, id := range regionIDs {
		s.seen.ids[id] = true
	}
}

// writeSeen writes the marks every seenEvery, for the life of the process.
func (s *Service) writeSeen() {
	for range time.Tick(seenEvery) {
		s.seen.mu.Lock()
		ids := slices.Collect(maps.Keys(s.seen.ids))
		clear(s.seen.ids)
		s.seen.mu.Unlock()
		if len(ids) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), seenEvery)
		if err := s.Store.SetAgentsSeen(ctx, ids, time.Now().UTC()); err != nil {
			s.Log.Warn("agent: last seen", "regions", len(ids), "err", err)
		}
		cancel()
	}
}

// AgentGone records that an agent's connection, recorded as connected at connectedAt, has
// ended: its regions show the agent disconnected unless a newer connection came since.
func (s *Service) AgentGone(ctx context.Context, regionIDs []string, connectedAt time.Time) error {
	var errs []error
	for _, id := range regionIDs {
		errs = append(errs, s.Store.SetAgentDisconnected(ctx, id, connectedAt))
	}
	return errors.Join(errs...)
}
