package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/lib/pq"
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

// ClaimSweepRound claims the status sweep's round for this interval with the cluster keys
// found failing by this process, or, when another process has claimed it, returns the keys
// that process recorded: every process sweeping in one round divides the fleet alike.
func (s *Store) ClaimSweepRound(ctx context.Context, owner string, every time.Duration, failing []string) ([]string, error) {
	var keys pq.StringArray
	err := s.DB.QueryRowContext(ctx, `INSERT INTO fleet_tasks (name, owner, started_at, data) VALUES ('sweep', $1, now(), coalesce($2::text[], '{}'))
		ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, started_at = now(), data = EXCLUDED.data
		WHERE fleet_tasks.started_at <= now() - make_interval(secs => $3)
		RETURNING data`, owner, pq.StringArray(failing), every.Seconds()).Scan(&keys)
	if errors.Is(err, sql.ErrNoRows) {
		// Claimed by another process (committed: a separate statement sees it).
		err = s.DB.QueryRowContext(ctx, `SELECT data FROM fleet_tasks WHERE name = 'sweep'`).Scan(&keys)
	}
	return keys, wrap("claim the sweep's round", err)
}
