package store

import (
	"context"
	"fmt"
)

// DefaultLogRetentionDays is how long a region's history (Kubernetes events, pod sessions,
// metric snapshots) is kept when its region_log_settings row does not say otherwise.
const DefaultLogRetentionDays = 7

// HistoryPruned counts the rows the daily retention deleted, by table.
type HistoryPruned struct {
	Events, Sessions, Snapshots int64
}

// PruneRegionHistory deletes the agent's reports (Kubernetes events, pod sessions, metric
// snapshots) older than each active region's retention (region_log_settings, default
// DefaultLogRetentionDays). Regions that are not active are left out: their history stays
// as it is while an administrator works on them.
func (s *Store) PruneRegionHistory(ctx context.Context) (HistoryPruned, error) {
	var out HistoryPruned
	for _, t := range []struct {
		table, at string
		n         *int64
	}{{"kube_events", "at", &out.Events}, {"pod_sessions", "at", &out.Sessions}, {"metric_snapshots", "taken_at", &out.Snapshots}} {
		res, err := s.db(ctx).ExecContext(ctx, fmt.Sprintf(`DELETE FROM %[1]s x USING regions r LEFT JOIN region_log_settings l ON l.region_id = r.id
			WHERE x.region_id = r.id AND r.region_status = 'active'
			AND x.%[2]s < now() - make_interval(days => coalesce(l.retention_days, $1))`, t.table, t.at), DefaultLogRetentionDays)
		if err != nil {
			return out, wrap("prune "+t.table, err)
		}
		if *t.n, err = res.RowsAffected(); err != nil {
			return out, wrap("prune "+t.table, err)
		}
	}
	return out, nil
}
