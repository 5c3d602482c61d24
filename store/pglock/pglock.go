// Package pglock takes PostgreSQL session advisory locks on a connection of their own, so
// that a lock goes with the connection when its holder's process dies, and gives the
// connection back to the pool holding none.
package pglock

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/lib/pq"
)

// Return gives a connection that took session advisory locks back to the pool holding
// none: pg_advisory_unlock_all drops every lock of the session however many times it was
// taken (a wait that ended in an error may have taken one), and a connection that cannot
// run it is closed, which ends its session and its locks. A lock left on a pooled
// connection would stay taken until the pool closed that connection, minutes later.
func Return(conn *sql.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_unlock_all()`); err != nil {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	_ = conn.Close()
}

// Session is a connection of its own that takes session-level advisory locks.
type Session struct{ conn *sql.Conn }

// Open takes a connection for advisory locks from the pool.
func Open(ctx context.Context, db *sql.DB) (*Session, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("open a lock connection: %w", err)
	}
	return &Session{conn: conn}, nil
}

// With runs f while holding the lock of key, waiting for it as long as ctx allows.
func With(ctx context.Context, db *sql.DB, key string, f func() error) error {
	l, err := Open(ctx, db)
	if err != nil {
		return err
	}
	defer l.Release()
	if _, err := l.conn.ExecContext(ctx, `SELECT pg_advisory_lock(hashtext($1))`, key); err != nil {
		return fmt.Errorf("lock %s: %w", key, err)
	}
	return f()
}

// TryLock takes the lock of key if it is free, without waiting.
func (l *Session) TryLock(ctx context.Context, key string) (bool, error) {
	var ok bool
	if err := l.conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock(hashtext($1))`, key).Scan(&ok); err != nil {
		return false, fmt.Errorf("try lock %s: %w", key, err)
	}
	return ok, nil
}

// LockWithin queues up to d for the lock of key (PostgreSQL hands it over the moment its
// holder lets go); false when the holder kept it that long. The session-level lock stays
// taken after the transaction that set the lock_timeout ends.
func (l *Session) LockWithin(ctx context.Context, key string, d time.Duration) (bool, error) {
	tx, err := l.conn.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("lock %s: %w", key, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`SET LOCAL lock_timeout = '%dms'`, d.Milliseconds())); err != nil {
		return false, fmt.Errorf("lock %s: %w", key, err)
	}
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_lock(hashtext($1))`, key); err != nil {
		var pe *pq.Error
		if errors.As(err, &pe) && pe.Code == "55P03" { // lock_not_available: lock_timeout passed
			return false, nil
		}
		return false, fmt.Errorf("lock %s: %w", key, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("lock %s: %w", key, err) // Release drops the lock
	}
	return true, nil
}

// Release gives the connection back holding no lock (Return).
func (l *Session) Release() { Return(l.conn) }
