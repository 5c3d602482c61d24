package ops

import (
	"context"
	"encoding/json"
	"time"

	"runr.dev/console/agent"
	"runr.dev/console/store"
)

// RecordAgentReport stores one report of a region's agent: a metric snapshot (not for a
// region that is not active), a pod session or a Kubernetes event.
func (s *Service) RecordAgentReport(ctx context.Context, regionID string, m agent.Message) error {
	at := m.At
	if at.IsZero() {
		at = time.Now().UTC()
	}
	switch m.Type {
	case "snapshot":
		if m.Snapshot == nil {
			return nil
		}
		r, err := s.Store.RegionByID(ctx, regionID)
		if err != nil {
			return err
		}
		if r.Status != store.RegionActive {
			return nil // a region that is not active is left out of the snapshots
		}
		raw, err := json.Marshal(m.Snapshot)
		if err != nil {
			return err
		}
		return s.Store.AddSnapshot(ctx, regionID, at, raw)
	case "pod":
		return s.Store.AddPodSession(ctx, regionID, m.Namespace, m.Pod, m.Event, m.Restarts, at)
	case "event":
		return s.Store.AddKubeEvent(ctx, regionID, m.Namespace, m.Object, m.Kind, m.Reason, m.Message, at)
	}
	return nil
}
