package store

import (
	"context"
	"fmt"
)

// healthRank orders the health states from the best: ok, unknown, degraded, down. The
// SQL below is written from it (rankCaseSQL), so Go and SQL rank alike.
var healthRank = map[HealthState]int{HealthOK: 0, HealthUnknown: 1, HealthDegraded: 2, HealthDown: 3}

// rankCaseSQL is a SQL CASE giving the healthRank of a state expression, or otherwise.
func rankCaseSQL(expr string, otherwise int) string {
	q := `CASE ` + expr
	for _, s := range []HealthState{HealthOK, HealthUnknown, HealthDegraded, HealthDown} {
		q += fmt.Sprintf(` WHEN '%s' THEN %d`, s, healthRank[s])
	}
	return q + fmt.Sprintf(` ELSE %d END`, otherwise)
}

// layerRankSQL ranks one layer of regions.health (a layer never checked is unknown).
func layerRankSQL(layer string) string {
	return rankCaseSQL(`r.health->'`+layer+`'->>'state'`, healthRank[HealthUnknown])
}

// healthRankSQL is a region's rank at a glance: its worst layer's.
var healthRankSQL = `GREATEST(` + layerRankSQL("api") + `, ` + layerRankSQL("components") + `, ` + layerRankSQL("external") + `)`

// Glance is the region's health at a glance: the worst of its last check's layers (the
// cluster API, the components with the agent, the external path), with that layer's
// reason; a region never checked is unknown and says so.
func (h Health) Glance() HealthLayer {
	layers := []struct {
		title string
		l     HealthLayer
	}{{"Cluster API", h.API}, {"Components", h.Components}, {"External path", h.External}}
	if h.API.State == "" {
		return HealthLayer{State: HealthUnknown, Reason: "not checked yet"}
	}
	worst := -1
	var out HealthLayer
	for _, x := range layers {
		state := x.l.State
		if state == "" {
			state = HealthUnknown
		}
		if r := healthRank[state]; r > worst {
			worst = r
			out = HealthLayer{State: state, Reason: x.title + ": " + x.l.Reason, CheckedAt: x.l.CheckedAt}
		}
	}
	if out.State == HealthOK {
		out.Reason = "the cluster API, the components and the external path are ok"
	}
	return out
}

// HealthFilters are the values of RegionFilter.Health: a state, or "attention" for the
// regions that are down or degraded.
var HealthFilters = []string{"attention", string(HealthDown), string(HealthDegraded), string(HealthUnknown), string(HealthOK)}

// healthWhereSQL is the condition of a health filter on the rank ($n is the filter).
func healthWhereSQL(param string) string {
	return fmt.Sprintf(`(%s = '' OR (%s = 'attention' AND %s >= %d) OR %s = %s)`, param, param, healthRankSQL,
		healthRank[HealthDegraded], healthRankSQL, rankCaseSQL(param, -1))
}

// FleetOverview is the regions page's summary at a glance: how many regions are in each
// health state, the regions that need attention (the worst first) and the jobs that are
// queued or running now.
type FleetOverview struct {
	ByHealth map[HealthState]int
	// Attention lists at most the n regions asked for (id, name and health only);
	// AttentionTotal counts them all.
	Attention      []Region
	AttentionTotal int
	// Running lists at most n jobs, the oldest first; RunningTotal counts them all.
	Running      []Job
	RunningTotal int
}

// Total is the number of regions the overview counts.
func (f FleetOverview) Total() int {
	n := 0
	for _, c := range f.ByHealth {
		n += c
	}
	return n
}

// FleetOverview reads the overview of the regions the caller's walls show; a tenant
// (tenantID not "") counts only its own regions, not the platform regions assigned to it
// (their health is the platform's to watch).
func (s *Store) FleetOverview(ctx context.Context, tenantID string, n int) (FleetOverview, error) {
	own := `($1 = '' OR r.tenant_id = $1)`
	var counts []struct {
		Rank  int `db:"rank"`
		Count int `db:"n"`
	}
	if err := s.db(ctx).SelectContext(ctx, &counts, `SELECT `+healthRankSQL+` AS rank, count(*) AS n FROM regions r
		WHERE `+own+` GROUP BY 1`, tenantID); err != nil {
		return FleetOverview{}, wrap("fleet overview: counts", err)
	}
	out := FleetOverview{ByHealth: map[HealthState]int{}}
	for _, c := range counts {
		for state, rank := range healthRank {
			if rank == c.Rank {
				out.ByHealth[state] = c.Count
			}
		}
		if c.Rank >= healthRank[HealthDegraded] {
			out.AttentionTotal += c.Count
		}
	}
	if err := s.db(ctx).SelectContext(ctx, &out.Attention, fmt.Sprintf(`SELECT r.id, r.name, r.health FROM regions r
		WHERE %s AND %s >= %d ORDER BY %s DESC, r.name LIMIT %d`, own, healthRankSQL, healthRank[HealthDegraded], healthRankSQL, n), tenantID); err != nil {
		return FleetOverview{}, wrap("fleet overview: attention", err)
	}
	active := `j.status IN ('` + string(JobQueued) + `', '` + string(JobRunning) + `') AND ($1 = '' OR j.tenant_id = $1)`
	if err := s.db(ctx).GetContext(ctx, &out.RunningTotal, `SELECT count(*) FROM jobs j WHERE `+active, tenantID); err != nil {
		return FleetOverview{}, wrap("fleet overview: running jobs", err)
	}
	if err := s.db(ctx).SelectContext(ctx, &out.Running, fmt.Sprintf(`SELECT j.id, j.kind, j.title, j.region_id, j.status, j.created_at, j.started_at
		FROM jobs j WHERE %s ORDER BY j.created_at, j.id LIMIT %d`, active, n), tenantID); err != nil {
		return FleetOverview{}, wrap("fleet overview: running jobs", err)
	}
	return out, nil
}
