package observability

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"runr.dev/console/agent"
	"runr.dev/console/store"
)

// RecordAgentReport stores one report of a cluster's agent for every region of the
// cluster: a metric snapshot (not for a region that is not active), a pod session or a
// Kubernetes event.
func (s *Service) RecordAgentReport(ctx context.Context, regionIDs []string, m agent.Message) error {
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
	var active []*store.Region
	for _, id := range regionIDs {
		r, err := s.recordReport(ctx, id, m, at, raw)
		if r != nil {
			active = append(active, r)
		}
		errs = append(errs, err)
	}
	if s.Meter != nil && len(active) > 0 {
		errs = append(errs, s.Meter(ctx, active, at, m.Snapshot.Projects))
	}
	return errors.Join(errs...)
}

// recordReport stores a report for one region; it returns the region when the report
// is a snapshot the region keeps (it is active).
func (s *Service) recordReport(ctx context.Context, regionID string, m agent.Message, at time.Time, snapshot []byte) (*store.Region, error) {
	switch m.Type {
	case "snapshot":
		if snapshot == nil {
			return nil, nil
		}
		r, err := s.Store.RegionByID(ctx, regionID)
		if err != nil {
			return nil, err
		}
		if r.Status != store.RegionActive {
			return nil, nil // a region that is not active is left out of the snapshots
		}
		return r, s.Store.AddSnapshot(ctx, regionID, at, snapshot)
	case "pod":
		return nil, s.Store.AddPodSession(ctx, regionID, m.Namespace, m.Pod, m.Event, m.Restarts, at)
	case "event":
		return nil, s.Store.AddKubeEvent(ctx, regionID, m.Namespace, m.Object, m.Kind, m.Reason, m.Message, at)
	}
	return nil, nil
}

// AgentSeen records that a cluster's agent reported, for every region of the cluster, and
// its connection state when it changed ("" when it did not), as of at.
func (s *Service) AgentSeen(ctx context.Context, regionIDs []string, status store.ComponentStatus, at time.Time) error {
	var errs []error
	for _, id := range regionIDs {
		errs = append(errs, s.Store.SetAgentSeen(ctx, id, at))
		if status != "" {
			errs = append(errs, s.Store.SetComponent(ctx, id, "agent", store.ComponentState{Status: status, UpdatedAt: at}))
		}
	}
	return errors.Join(errs...)
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
