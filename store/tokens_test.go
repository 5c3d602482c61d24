package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/lib/pq"

	"runr.dev/console/store"
	"runr.dev/console/store/storetest"
)

// Recording a token's use is not announced to the consoles (it would drop every kept
// list and credential once a minute per token in use); creating, changing and revoking
// a token are. PostgreSQL delivers notifications in commit order, so a marker sent after
// the recorded use must be the first notification heard.
func TestTokenUseIsNotAnnounced(t *testing.T) {
	st := storetest.New(t)
	ctx := context.Background()
	u, err := st.CreateUser(ctx, "quiet@example.com", "", "admin", "password-of-quiet")
	if err != nil {
		t.Fatal(err)
	}
	tok, plain, err := st.CreateAPIToken(ctx, u.ID, "ci", []string{"regions.view"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * store.TokenUseInterval)
	if _, err := st.DB.ExecContext(ctx, `UPDATE api_tokens SET last_used_at = $2 WHERE id = $1`, tok.ID, old); err != nil {
		t.Fatal(err)
	}

	l := pq.NewListener(st.URL, 10*time.Millisecond, time.Second, nil)
	defer l.Close()
	if err := l.Listen(store.ListsChannel); err != nil {
		t.Fatal(err)
	}
	next := func(what string) string {
		t.Helper()
		select {
		case n := <-l.Notify:
			if n == nil {
				t.Fatalf("%s: the listener reconnected", what)
			}
			return n.Extra
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no notification", what)
		}
		return ""
	}

	got, _, err := st.APITokenUser(ctx, plain)
	if err != nil || got.LastUsedAt == nil || !got.LastUsedAt.After(old) {
		t.Fatalf("the use was not recorded: %v %+v", err, got)
	}
	var recorded time.Time
	if err := st.DB.GetContext(ctx, &recorded, `SELECT last_used_at FROM api_tokens WHERE id = $1`, tok.ID); err != nil || !recorded.After(old) {
		t.Fatalf("last_used_at in the database: %v %v", recorded, err)
	}
	if _, err := st.DB.ExecContext(ctx, `SELECT pg_notify($1, 'marker')`, store.ListsChannel); err != nil {
		t.Fatal(err)
	}
	if p := next("after a recorded use"); p != "marker" {
		t.Fatalf("recording a use was announced (heard %q before the marker)", p)
	}

	if _, err := st.DB.ExecContext(ctx, `UPDATE api_tokens SET scopes = '{regions.manage}' WHERE id = $1`, tok.ID); err != nil {
		t.Fatal(err)
	}
	if p := next("after a change of scopes"); p != "" {
		t.Fatalf("a change of scopes was not announced (heard %q)", p)
	}
	if err := st.DeleteAPIToken(ctx, tok.ID, u.ID); err != nil {
		t.Fatal(err)
	}
	if p := next("after a revocation"); p != "" {
		t.Fatalf("a revocation was not announced (heard %q)", p)
	}
}
