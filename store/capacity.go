package store

import "context"

// Reservation is what a set of projects requests in all: CPU in millicores, memory in MiB.
type Reservation struct {
	Projects int   `db:"projects"`
	CPUm     int64 `db:"cpu_m"`
	MemoryMi int64 `db:"memory_mi"`
}

// ProjectReservations sums the requests of a region's running projects, split into the
// always-on ones and the others (FaaS), leaving out one project (the one being deployed;
// "" leaves out none).
func (s *Store) ProjectReservations(ctx context.Context, regionID, exceptProject string) (alwaysOn, faas Reservation, err error) {
	var rows []struct {
		AlwaysOn bool `db:"always_on"`
		Reservation
	}
	err = s.db(ctx).SelectContext(ctx, &rows, `SELECT always_on, count(*) AS projects,
		coalesce(sum(cpu_m), 0) AS cpu_m, coalesce(sum(memory_mi), 0) AS memory_mi
		FROM projects WHERE region_id = $1 AND state = 'running' AND id <> $2 GROUP BY always_on`, regionID, exceptProject)
	if err != nil {
		return alwaysOn, faas, wrap("project reservations of region "+regionID, err)
	}
	for _, r := range rows {
		if r.AlwaysOn {
			alwaysOn = r.Reservation
		} else {
			faas = r.Reservation
		}
	}
	return alwaysOn, faas, nil
}
