package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"runr.dev/console/store"
	"runr.dev/console/store/storetest"
)

// TestJobsPinnedToARelease: a job pinned to a release is claimed only by a console of that
// release (an old console draining during an upgrade never takes the new release's
// reconcile), a job pinned to none by any; one left by a release no console runs any more
// is abandoned only while nobody holds it.
func TestJobsPinnedToARelease(t *testing.T) {
	st := storetest.New(t)
	ctx := context.Background()
	pinned := &store.Job{Kind: "reconcile", Title: "pinned", Release: "1.1.0"}
	if err := st.CreateJob(ctx, pinned, nil, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ClaimJob(ctx, "old-console", "1.0.0", time.Minute); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a console of 1.0.0 claimed a job of 1.1.0: %v", err)
	}
	if _, err := st.ClaimJobByID(ctx, pinned.ID, "old-console", "1.0.0", time.Minute); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a console of 1.0.0 claimed the job of 1.1.0 by its id: %v", err)
	}
	free := &store.Job{Kind: "apply-settings", Title: "any"}
	if err := st.CreateJob(ctx, free, nil, ""); err != nil {
		t.Fatal(err)
	}
	if j, err := st.ClaimJob(ctx, "old-console", "1.0.0", time.Minute); err != nil || j.ID != free.ID {
		t.Fatalf("a job pinned to no release: %v %+v", err, j)
	}
	// Held by a console of its release: not abandoned.
	if _, err := st.ClaimJobByID(ctx, pinned.ID, "new-console", "1.1.0", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := st.AbandonJob(ctx, pinned.ID, "1.1.0", "left"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a held job was abandoned: %v", err)
	}
	// Queued and left: abandoned, failed with the reason.
	left := &store.Job{Kind: "reconcile", Title: "left", Release: "0.9.0"}
	if err := st.CreateJob(ctx, left, nil, ""); err != nil {
		t.Fatal(err)
	}
	if err := st.AbandonJob(ctx, left.ID, "0.9.0", "left by 0.9.0"); err != nil {
		t.Fatal(err)
	}
	if j, err := st.JobByID(ctx, left.ID); err != nil || j.Status != store.JobFailed || j.Error != "left by 0.9.0" {
		t.Fatalf("the left job: %v %+v", err, j)
	}
}
