package kit

import (
	"context"
	"io"
	"log/slog"
	"sort"
	"sync"
	"testing"
	"time"

	"runr.dev/console/config"
	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/store"
	"runr.dev/console/store/storetest"
)

// Jobs that change one release take its lock one at a time, and a waiting job takes it
// the moment the holder lets go: it queues in PostgreSQL instead of polling (a poll that
// backs off to a second left releases idle for up to that long between holders).
func TestReleaseLockIsHandedOverAtOnce(t *testing.T) {
	st := storetest.New(t)
	s := New(st, &config.Config{InstallTimeout: time.Minute}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	c := &kube.Cluster{KC: &kube.Kubeconfig{Server: "https://lock.test:6443"}}
	const hold = 1200 * time.Millisecond
	type held struct{ from, to time.Time }
	var mu sync.Mutex
	var spans []held
	s.Engine.Register(&engine.Kind{Name: "lock-test", Plan: func(*engine.JobContext) ([]engine.Step, error) {
		return []engine.Step{{Name: "hold", Title: "Hold the release lock", Run: func(ctx context.Context, jc *engine.JobContext) error {
			unlock, err := s.lockRelease(ctx, jc, c, "ns", "rel")
			if err != nil {
				return err
			}
			from := time.Now()
			time.Sleep(hold)
			to := time.Now()
			unlock()
			mu.Lock()
			spans = append(spans, held{from, to})
			mu.Unlock()
			return nil
		}}}, nil
	}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ids []string
	for range 3 {
		j, err := s.Enqueue(ctx, engine.Request{Kind: "lock-test", Title: "lock"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	go s.Engine.Run(ctx, 3)
	deadline := time.Now().Add(30 * time.Second)
	for _, id := range ids {
		for {
			j, err := st.JobByID(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if j.Status.Done() {
				if j.Status != store.JobSucceeded {
					t.Fatalf("job %s: %s %s", id, j.Status, j.Error)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the jobs did not finish")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].from.Before(spans[j].from) })
	for i := 1; i < len(spans); i++ {
		gap := spans[i].from.Sub(spans[i-1].to)
		if gap < 0 {
			t.Fatalf("two jobs held the lock at once: %v", spans)
		}
		if gap > 250*time.Millisecond {
			t.Fatalf("the lock stayed idle %s between two holders (want it handed over at once)", gap)
		}
	}
}
