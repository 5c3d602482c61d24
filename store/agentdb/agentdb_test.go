package agentdb_test

import (
	"context"
	"testing"
	"time"

	"github.com/lib/pq"

	"runr.dev/console/store"
	"runr.dev/console/store/agentdb"
	"runr.dev/console/store/storetest"
)

// The batched connection writes keep the rule of one connection at a time: a connection
// that ended is shown only when no later one was recorded, wherever that was written, and
// every region that changed is announced.
func TestConnectionsKeepTheNewest(t *testing.T) {
	st := storetest.New(t)
	ctx := context.Background()
	db := agentdb.New(st)
	var ids []string
	for _, name := range []string{"a", "b", "c"} {
		r := &store.Region{Name: name, Kubeconfig: "kc"}
		if err := st.CreateRegion(ctx, r); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	l := pq.NewListener(st.URL, 10*time.Millisecond, time.Second, nil)
	defer l.Close()
	if err := l.Listen(store.RegionsChannel); err != nil {
		t.Fatal(err)
	}
	announced := func(n int) map[string]bool {
		t.Helper()
		got := map[string]bool{}
		for len(got) < n {
			select {
			case m := <-l.Notify:
				if m != nil {
					got[m.Extra] = true
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("announced %v, want %d regions", got, n)
			}
		}
		return got
	}
	agent := func(id string) (store.ComponentState, *time.Time) {
		r, err := st.RegionByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return r.Component("agent"), r.AgentLastSeenAt
	}

	t1 := time.Now().UTC().Truncate(time.Microsecond)
	t2 := t1.Add(time.Second)
	if err := db.SetConnected(ctx, []agentdb.Connection{{ids[0], t1}, {ids[1], t1}, {ids[2], t1}}); err != nil {
		t.Fatal(err)
	}
	if got := announced(3); !got[ids[0]] || !got[ids[1]] || !got[ids[2]] {
		t.Fatalf("announced %v", got)
	}
	if c, seen := agent(ids[0]); c.Status != store.ComponentConnected || !c.UpdatedAt.Equal(t1) || seen == nil || !seen.Equal(t1) {
		t.Fatalf("connected: %+v, seen %v", c, seen)
	}
	// b's agent reconnects (at t2, perhaps at another console) before its first
	// connection is seen to end; a connection of t1 written late changes nothing either.
	if err := db.SetConnected(ctx, []agentdb.Connection{{ids[1], t2}}); err != nil {
		t.Fatal(err)
	}
	announced(1)
	if err := db.SetConnected(ctx, []agentdb.Connection{{ids[1], t1}}); err != nil {
		t.Fatal(err)
	}
	if err := db.SetDisconnected(ctx, []agentdb.Connection{{ids[0], t1}, {ids[1], t1}}, t2); err != nil {
		t.Fatal(err)
	}
	if got := announced(1); !got[ids[0]] {
		t.Fatalf("announced %v, want a", got)
	}
	if c, _ := agent(ids[0]); c.Status != store.ComponentDisconnected {
		t.Fatalf("a after its connection ended: %+v", c)
	}
	if c, _ := agent(ids[1]); c.Status != store.ComponentConnected || !c.UpdatedAt.Equal(t2) {
		t.Fatalf("b, connected again at %s: %+v", t2, c)
	}
	if c, _ := agent(ids[2]); c.Status != store.ComponentConnected {
		t.Fatalf("c, never disconnected: %+v", c)
	}

	// Last-seen marks only move forward.
	if err := db.SetSeen(ctx, []string{ids[2]}, t1.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, seen := agent(ids[2]); seen == nil || !seen.Equal(t1) {
		t.Fatalf("an older mark replaced %s: %v", t1, seen)
	}
	if err := db.SetSeen(ctx, []string{ids[2]}, t2); err != nil {
		t.Fatal(err)
	}
	if _, seen := agent(ids[2]); seen == nil || !seen.Equal(t2) {
		t.Fatalf("seen %v, want %s", seen, t2)
	}
}
