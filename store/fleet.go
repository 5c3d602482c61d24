package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// ClaimFleetTask claims a fleet task for this interval: it answers true to exactly one
// console process per interval (the first to ask once the last run started at least
// every ago), false to every other.
func (s *Store) ClaimFleetTask(ctx context.Context, name, owner string, every time.Duration) (bool, error) {
	var ok bool
	err := s.DB.QueryRowContext(ctx, `INSERT INTO fleet_tasks (name, owner, started_at) VALUES ($1, $2, now())
		ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, started_at = now()
		WHERE fleet_tasks.started_at <= now() - make_interval(secs => $3)
		RETURNING true`, name, owner, every.Seconds()).Scan(&ok)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return ok, wrap("claim fleet task "+name, err)
}
