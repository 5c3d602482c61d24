package pglock_test

import (
	"context"
	"testing"

	"runr.dev/console/store/pglock"
	"runr.dev/console/store/storetest"
)

// A lock's connection goes back to the pool holding no lock, even one its session took
// twice: a lock left on a pooled connection kept its release busy for the five minutes
// until the pool closed that connection (seen once in the concurrent-installs benchmark).
func TestLockConnectionReturnsWithoutLocks(t *testing.T) {
	st := storetest.New(t)
	ctx := context.Background()
	// other is taken first, so that it is another session than conn's.
	other, err := st.DB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := st.DB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(hashtext('helm|returned'))`); err != nil {
			t.Fatal(err)
		}
	}
	pglock.Return(conn)
	var free bool
	if err := other.QueryRowContext(ctx, `SELECT pg_try_advisory_lock(hashtext('helm|returned'))`).Scan(&free); err != nil {
		t.Fatal(err)
	}
	if !free {
		t.Fatal("the lock was still held after its connection went back to the pool")
	}
}
