package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/lib/pq"
)

// ReturnLockConn gives a connection that took session advisory locks back to the pool
// holding none: pg_advisory_unlock_all drops every lock of the session however many
// times it was taken (a wait that ended in an error may have taken one), and a
// connection that cannot run it is closed, which ends its session and its locks. A lock
// left on a pooled connection would stay taken until the pool closed that connection,
// minutes later.
func ReturnLockConn(conn *sql.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_unlock_all()`); err != nil {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	_ = conn.Close()
}

// SessionLock is a connection of its own that takes session-level advisory locks, which go
// with the connection if the process dies.
type SessionLock struct{ conn *sql.Conn }

// OpenSessionLock takes a connection for advisory locks from the pool.
func (s *Store) OpenSessionLock(ctx context.Context) (*SessionLock, error) {
	conn, err := s.DB.Conn(ctx)
	if err != nil {
		return nil, wrap("open a lock connection", err)
	}
	return &SessionLock{conn: conn}, nil
}

// TryLock takes the lock of key if it is free, without waiting.
func (l *SessionLock) TryLock(ctx context.Context, key string) (bool, error) {
	var ok bool
	err := l.conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock(hashtext($1))`, key).Scan(&ok)
	return ok, wrap("try lock "+key, err)
}

// LockWithin queues up to d for the lock of key (PostgreSQL hands it over the moment its
// holder lets go); false when the holder kept it that long. The session-level lock stays
// taken after the transaction that set the lock_timeout ends.
func (l *SessionLock) LockWithin(ctx context.Context, key string, d time.Duration) (bool, error) {
	tx, err := l.conn.BeginTx(ctx, nil)
	if err != nil {
		return false, wrap("lock "+key, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`SET LOCAL lock_timeout = '%dms'`, d.Milliseconds())); err != nil {
		return false, wrap("lock "+key, err)
	}
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_lock(hashtext($1))`, key); err != nil {
		var pe *pq.Error
		if errors.As(err, &pe) && pe.Code == "55P03" { // lock_not_available: lock_timeout passed
			return false, nil
		}
		return false, wrap("lock "+key, err)
	}
	if err := tx.Commit(); err != nil {
		return false, wrap("lock "+key, err) // Release drops the lock
	}
	return true, nil
}

// Release gives the connection back holding no lock (ReturnLockConn).
func (l *SessionLock) Release() { ReturnLockConn(l.conn) }
