package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"runr.dev/console/store"
	"runr.dev/console/store/storetest"
)

// LatestJobWithHistory answers in one round trip what LatestJobOf, JobSteps and
// JobEvents answer in three.
func TestLatestJobWithHistory(t *testing.T) {
	st := storetest.New(t)
	ctx := context.Background()
	r := &store.Region{Name: "hist-eu", Kubeconfig: "kc"}
	if err := st.CreateRegion(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := st.LatestJobWithHistory(ctx, r.ID, []string{"apply-settings"}, 10); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("no job: err = %v, want not found", err)
	}
	for n := range 2 {
		j := &store.Job{Kind: "apply-settings", Title: fmt.Sprintf("job %d", n), Params: json.RawMessage(`{"a":1}`)}
		steps := []store.JobStep{{Name: "connect", Title: "Connect"}, {Name: "apply", Title: "Apply"}}
		if err := st.CreateJob(ctx, j, steps, ""); err != nil {
			t.Fatal(err)
		}
		if err := st.SetJobRegion(ctx, j.ID, r.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := st.SetStep(ctx, j.ID, 0, store.StepRunning, "", "waiting for it"); err != nil {
			t.Fatal(err)
		}
		for k := range 5 {
			if _, err := st.AddEvent(ctx, &store.JobEvent{JobID: j.ID, Kind: "log", StepIdx: 0, Level: "info", Message: fmt.Sprintf("line %d «é»", k),
				Data: json.RawMessage(`{"k": [1, "x"]}`)}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := st.SetStep(ctx, j.ID, 0, store.StepDone, "done", ""); err != nil {
			t.Fatal(err)
		}
	}
	want, err := st.LatestJobOf(ctx, r.ID, []string{"apply-settings"})
	if err != nil {
		t.Fatal(err)
	}
	wantSteps, _ := st.JobSteps(ctx, want.ID)
	wantEvents, _ := st.JobEvents(ctx, want.ID, 0, 4)
	j, steps, events, err := st.LatestJobWithHistory(ctx, r.ID, []string{"apply-settings", "other"}, 4)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(j, want) {
		t.Errorf("job\n got %+v\nwant %+v", j, want)
	}
	if len(steps) != len(wantSteps) || len(events) != len(wantEvents) || len(events) != 4 {
		t.Fatalf("%d steps, %d events; want %d, %d (4)", len(steps), len(events), len(wantSteps), len(wantEvents))
	}
	for i := range steps {
		if !sameTime(steps[i].StartedAt, wantSteps[i].StartedAt) || !sameTime(steps[i].FinishedAt, wantSteps[i].FinishedAt) {
			t.Errorf("step %d times: got %v %v, want %v %v", i, steps[i].StartedAt, steps[i].FinishedAt, wantSteps[i].StartedAt, wantSteps[i].FinishedAt)
		}
		steps[i].StartedAt, wantSteps[i].StartedAt, steps[i].FinishedAt, wantSteps[i].FinishedAt = nil, nil, nil, nil
		if !reflect.DeepEqual(steps[i], wantSteps[i]) {
			t.Errorf("step %d\n got %+v\nwant %+v", i, steps[i], wantSteps[i])
		}
	}
	for i := range events {
		var g, w any
		_ = json.Unmarshal(events[i].Data, &g)
		_ = json.Unmarshal(wantEvents[i].Data, &w)
		if !reflect.DeepEqual(g, w) || !events[i].CreatedAt.Equal(wantEvents[i].CreatedAt) {
			t.Errorf("event %d data/time: got %s %v, want %s %v", i, events[i].Data, events[i].CreatedAt, wantEvents[i].Data, wantEvents[i].CreatedAt)
		}
		events[i].Data, wantEvents[i].Data = nil, nil
		events[i].CreatedAt = wantEvents[i].CreatedAt
		if !reflect.DeepEqual(events[i], wantEvents[i]) {
			t.Errorf("event %d\n got %+v\nwant %+v", i, events[i], wantEvents[i])
		}
	}
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}
