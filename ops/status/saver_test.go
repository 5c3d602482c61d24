package status

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"runr.dev/console/config"
	"runr.dev/console/ops/kit"
	"runr.dev/console/store"
	"runr.dev/console/store/storetest"
)

// The checks of a sweep's looks, queued from many checkers at once, are all saved by the
// time the saver is closed, each once.
func TestCheckSaverSavesEveryCheck(t *testing.T) {
	st := storetest.New(t)
	s := &Service{Kit: &kit.Kit{Store: st, Cfg: &config.Config{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	ctx := context.Background()
	const looks, perLook = 40, 3
	var ids []string
	for i := range looks * perLook {
		r := &store.Region{Name: "r" + string(rune('a'+i/26)) + string(rune('a'+i%26)), Kubeconfig: "kc"}
		if err := st.CreateRegion(ctx, r); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	at := time.Now().UTC().Truncate(time.Microsecond)
	saver := s.newCheckSaver(ctx)
	var wg sync.WaitGroup
	for l := range looks {
		wg.Go(func() {
			var cs []tenantCheck
			for _, id := range ids[l*perLook : (l+1)*perLook] {
				cs = append(cs, tenantCheck{check: store.RegionCheck{ID: id, CheckUpdate: store.CheckUpdate{CheckedAt: at}}})
			}
			saver.save(cs)
		})
	}
	wg.Wait()
	saver.close()
	if got := s.ChecksDone(); got != looks*perLook {
		t.Fatalf("%d checks saved, want %d", got, looks*perLook)
	}
	for _, id := range ids {
		r, err := st.RegionByID(ctx, id)
		if err != nil || r.CheckedAt == nil || !r.CheckedAt.Equal(at) {
			t.Fatalf("region %s: checked at %v (%v), want %s", id, r.CheckedAt, err, at)
		}
	}
}
