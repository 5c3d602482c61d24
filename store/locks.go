package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"time"
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
