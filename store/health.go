package store

import "fmt"

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
