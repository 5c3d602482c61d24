// Package agentdb is the statements of the agents' connections: which regions' agent is
// connected, since when, and when it last reported. A console writes them in batches
// (one statement for all the agents that connected, left or reported since its last
// write), so that ten thousand agents reconnecting at once cost a few statements a second.
package agentdb

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lib/pq"

	"runr.dev/console/store"
)

// DB is the agent connection columns of a store's regions.
type DB struct{ st *store.Store }

// New returns the agent connection statements of st.
func New(st *store.Store) *DB { return &DB{st: st} }

// Connection is one agent connection of a region: when it began (connected), or the
// beginning of the connection that ended (disconnected).
type Connection struct {
	RegionID string
	At       time.Time
}

// newerConnected is true for a region whose agent shows a connection that began after
// v.at: a later connection (here or at another console) is never overwritten.
const newerConnected = `(r.components->'agent'->>'status' = 'connected' AND (r.components->'agent'->>'updated_at')::timestamptz > v.at)`

// SetConnected records each region's agent as connected since its connection began (and
// seen then), unless a later connection was recorded; the changed regions are announced.
func (d *DB) SetConnected(ctx context.Context, cs []Connection) error {
	ids, ats, states := make([]string, len(cs)), make([]string, len(cs)), make([]string, len(cs))
	for i, c := range cs {
		raw, err := json.Marshal(store.ComponentState{Status: store.ComponentConnected, UpdatedAt: c.At})
		if err != nil {
			return err
		}
		ids[i], ats[i], states[i] = c.RegionID, c.At.Format(time.RFC3339Nano), string(raw)
	}
	_, err := d.st.In(ctx).ExecContext(ctx, `WITH v AS (SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::jsonb[]) AS v(id, at, state)),
		u AS (UPDATE regions r SET components = jsonb_set(r.components, '{agent}', v.state), updated_at = now(),
			agent_last_seen_at = GREATEST(r.agent_last_seen_at, v.at)
			FROM v WHERE r.id = v.id AND `+newerConnected+` IS NOT TRUE RETURNING r.id)
		SELECT count(pg_notify($4, id)) FROM u`, pq.Array(ids), pq.Array(ats), pq.Array(states), store.RegionsChannel)
	return wrap("set agents connected", err)
}

// SetDisconnected records each region's agent as disconnected when its connection that
// began at At ended, unless a later connection was recorded since: a new agent (a rolling
// update, a replacement) connects before the old one's connection is seen to end, here or
// at another console. The changed regions are announced.
func (d *DB) SetDisconnected(ctx context.Context, cs []Connection, now time.Time) error {
	ids, ats := make([]string, len(cs)), make([]string, len(cs))
	for i, c := range cs {
		ids[i], ats[i] = c.RegionID, c.At.Format(time.RFC3339Nano)
	}
	raw, err := json.Marshal(store.ComponentState{Status: store.ComponentDisconnected, UpdatedAt: now})
	if err != nil {
		return err
	}
	_, err = d.st.In(ctx).ExecContext(ctx, `WITH v AS (SELECT * FROM unnest($1::text[], $2::timestamptz[]) AS v(id, at)),
		u AS (UPDATE regions r SET components = jsonb_set(r.components, '{agent}', $3::jsonb), updated_at = now()
			FROM v WHERE r.id = v.id AND `+newerConnected+` IS NOT TRUE RETURNING r.id)
		SELECT count(pg_notify($4, id)) FROM u`, pq.Array(ids), pq.Array(ats), string(raw), store.RegionsChannel)
	return wrap("set agents disconnected", err)
}

// SetSeen records when the agent of each region last reported; a newer time is never
// replaced.
func (d *DB) SetSeen(ctx context.Context, ids []string, at time.Time) error {
	_, err := d.st.In(ctx).ExecContext(ctx, `UPDATE regions SET agent_last_seen_at = $2 WHERE id = ANY($1) AND (agent_last_seen_at IS NULL OR agent_last_seen_at < $2)`, pq.Array(ids), at)
	return wrap("set agents seen", err)
}

func wrap(op string, err error) error {
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	return nil
}
