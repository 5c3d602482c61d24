package observability

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"runr.dev/console/config"
	"runr.dev/console/ops/kit"
	"runr.dev/console/store"
	"runr.dev/console/store/storetest"
)

// A write of the agents' connections that fails is not lost: the next one writes it, and
// the end of a connection waits for the connection, so that a connection that began and
// ended shows the agent disconnected, not connected.
func TestAgentWritesSurviveAFailedWrite(t *testing.T) {
	st := storetest.New(t)
	s := &Service{Kit: &kit.Kit{Store: st, Cfg: &config.Config{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	ctx := context.Background()
	var ids []string
	for _, name := range []string{"stays", "leaves"} {
		r := &store.Region{Name: name, Kubeconfig: "kc"}
		if err := st.CreateRegion(ctx, r); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	at := time.Now().UTC().Truncate(time.Microsecond)
	agent := func(id string) store.ComponentStatus {
		r, err := st.RegionByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return r.Component("agent").Status
	}
	// The background writer is not started: the test writes itself.
	s.agentWrites.start.Do(func() {})

	s.AgentConnected(ids, at)
	s.AgentGone(ids[1:], at)
	failed, cancel := context.WithCancel(ctx)
	cancel()
	s.FlushAgentWrites(failed, true)
	if got := agent(ids[0]); got == store.ComponentConnected {
		t.Fatalf("a write with a cancelled context wrote: %s", got)
	}
	s.FlushAgentWrites(ctx, true)
	if got := agent(ids[0]); got != store.ComponentConnected {
		t.Fatalf("the agent that stays: %s, want connected", got)
	}
	if got := agent(ids[1]); got != store.ComponentDisconnected {
		t.Fatalf("the agent whose connection ended: %s, want disconnected", got)
	}
	r, _ := st.RegionByID(ctx, ids[0])
	if r.AgentLastSeenAt == nil || !r.AgentLastSeenAt.Equal(at) {
		t.Fatalf("seen %v, want %s", r.AgentLastSeenAt, at)
	}
}
