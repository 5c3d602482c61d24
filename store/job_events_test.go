package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"runr.dev/console/store"
	"runr.dev/console/store/storetest"
)

// A reader that follows a job's events by id (the JSON feed's after=ID) sees every
// event, also when the job's steps emit them from several goroutines at once: a job's
// event ids are committed in order.
func TestJobEventsFollowedByIDMissNone(t *testing.T) {
	st := storetest.New(t)
	ctx := context.Background()
	j := &store.Job{Kind: "apply-settings", Title: "events"}
	if err := st.CreateJob(ctx, j, []store.JobStep{{Name: "a", Title: "A"}}, ""); err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 60
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range each {
				if _, err := st.AddEvent(ctx, &store.JobEvent{JobID: j.ID, Kind: "log", Message: fmt.Sprintf("%d/%d", w, k)}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	writing := make(chan struct{})
	go func() { wg.Wait(); close(writing) }()
	var last int64
	seen := 0
	for done := false; !done; {
		select {
		case <-writing:
			done = true // one more read after the last write
		default:
		}
		es, err := st.JobEvents(ctx, j.ID, last, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			if e.ID <= last {
				t.Fatalf("event %d after %d", e.ID, last)
			}
			last = e.ID
			seen++
		}
	}
	if seen != writers*each {
		t.Fatalf("the reader saw %d of %d events", seen, writers*each)
	}
}

// A job read as ended has its last event already: FinishJob writes both at once.
func TestFinishedJobHasItsLastEvent(t *testing.T) {
	st := storetest.New(t)
	ctx := context.Background()
	for n := range 20 {
		j := &store.Job{Kind: "apply-settings", Title: fmt.Sprintf("finish %d", n)}
		if err := st.CreateJob(ctx, j, []store.JobStep{{Name: "a", Title: "A"}}, ""); err != nil {
			t.Fatal(err)
		}
		go func() {
			time.Sleep(time.Duration(n%5) * time.Millisecond)
			if err := st.FinishJob(ctx, j.ID, store.JobSucceeded, ""); err != nil {
				t.Error(err)
			}
		}()
		for {
			got, err := st.JobByID(ctx, j.ID)
			if err != nil {
				t.Fatal(err)
			}
			es, err := st.JobEvents(ctx, j.ID, 0, 10)
			if err != nil {
				t.Fatal(err)
			}
			if got.Done() {
				if len(es) != 1 || es[0].Kind != "job" {
					t.Fatalf("job %d ended without its last event: %+v", n, es)
				}
				break
			}
		}
	}
	if err := st.FinishJob(ctx, "no-such-job", store.JobFailed, "x"); err == nil {
		t.Fatal("finishing a job that does not exist must fail")
	}
}

// A job read with its history is one snapshot: it is never read as running together
// with the event that ended it. The job socket starts from such a read and skips the
// events it has; it showed a finished job as running for good when the job, its steps
// and its events were three reads and the job ended between the first and the last.
func TestJobWithHistoryIsOneSnapshot(t *testing.T) {
	st := storetest.New(t)
	ctx := context.Background()
	for n := range 20 {
		j := &store.Job{Kind: "apply-settings", Title: fmt.Sprintf("snapshot %d", n)}
		if err := st.CreateJob(ctx, j, []store.JobStep{{Name: "a", Title: "A"}}, ""); err != nil {
			t.Fatal(err)
		}
		go func() {
			time.Sleep(time.Duration(n%5) * time.Millisecond)
			if err := st.FinishJob(ctx, j.ID, store.JobSucceeded, ""); err != nil {
				t.Error(err)
			}
		}()
		for {
			got, steps, events, err := st.JobWithHistory(ctx, j.ID, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(steps) != 1 || steps[0].JobID != j.ID {
				t.Fatalf("job %d: steps %+v", n, steps)
			}
			ended := len(events) > 0 && events[len(events)-1].Kind == "job"
			if ended != got.Done() {
				t.Fatalf("job %d read as %s with events %+v", n, got.Status, events)
			}
			if ended {
				break
			}
		}
	}
	if _, _, _, err := st.JobWithHistory(ctx, "no-such-job", 10); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a job that does not exist: want ErrNotFound, got %v", err)
	}
}
