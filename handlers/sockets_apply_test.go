package handlers

import (
	"encoding/json"
	"testing"
	"time"

	"runr.dev/console/store"
)

// TestApplyEvent proves the replay of events onto a job view: a step event replaces its
// step (and makes a queued job running), a job event sets the status, the error and the
// finished time (cleared again by a retry), and anything else leaves the view alone.
func TestApplyEvent(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	started := created.Add(time.Second)
	at := created.Add(time.Minute)
	stepData := func(st store.JobStep) json.RawMessage {
		raw, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	steps := func(statuses ...store.StepStatus) []store.JobStep {
		out := make([]store.JobStep, len(statuses))
		for i, s := range statuses {
			out[i] = store.JobStep{Idx: i, Name: string(rune('a' + i)), Title: "Step", Status: s}
		}
		return out
	}
	job := func(status store.JobStatus, startedAt, finishedAt *time.Time, errMsg string) *store.Job {
		return &store.Job{ID: "j1", Status: status, Error: errMsg, CreatedAt: created, StartedAt: startedAt, FinishedAt: finishedAt}
	}
	tests := []struct {
		name      string
		job       *store.Job
		steps     []store.JobStep
		event     store.JobEvent
		wantJob   *store.Job
		wantSteps []store.StepStatus
		wantMsg   string // message of step 1 afterwards
	}{
		{
			name: "step event updates its step", job: job("running", &started, nil, ""), steps: steps("done", "pending"),
			event: store.JobEvent{Kind: "step", StepIdx: 1, CreatedAt: at,
				Data: stepData(store.JobStep{Idx: 1, Name: "b", Status: "running", Message: "installing", StartedAt: &at})},
			wantJob: job("running", &started, nil, ""), wantSteps: []store.StepStatus{"done", "running"}, wantMsg: "installing",
		},
		{
			name: "queued job becomes running on its first step event", job: job("queued", nil, nil, ""), steps: steps("pending", "pending"),
			event:   store.JobEvent{Kind: "step", StepIdx: 0, CreatedAt: at, Data: stepData(store.JobStep{Idx: 0, Name: "a", Status: "running"})},
			wantJob: job("running", &at, nil, ""), wantSteps: []store.StepStatus{"running", "pending"},
		},
		{
			name: "retried job keeps its first start when it runs again", job: job("queued", &started, nil, ""), steps: steps("done", "pending"),
			event:   store.JobEvent{Kind: "step", StepIdx: 1, CreatedAt: at, Data: stepData(store.JobStep{Idx: 1, Name: "b", Status: "running"})},
			wantJob: job("running", &started, nil, ""), wantSteps: []store.StepStatus{"done", "running"},
		},
		{
			name: "step event out of range is ignored", job: job("running", &started, nil, ""), steps: steps("done", "running"),
			event:   store.JobEvent{Kind: "step", StepIdx: 5, CreatedAt: at, Data: stepData(store.JobStep{Idx: 5, Name: "z", Status: "failed"})},
			wantJob: job("running", &started, nil, ""), wantSteps: []store.StepStatus{"done", "running"},
		},
		{
			name: "job event ends the job", job: job("running", &started, nil, ""), steps: steps("done", "failed"),
			event:   store.JobEvent{Kind: "job", StepIdx: -1, CreatedAt: at, Data: json.RawMessage(`{"status":"failed","error":"boom"}`)},
			wantJob: job("failed", &started, &at, "boom"), wantSteps: []store.StepStatus{"done", "failed"},
		},
		{
			name: "retry queues the job again without a finished time", job: job("failed", &started, &at, "boom"), steps: steps("done", "pending"),
			event:   store.JobEvent{Kind: "job", StepIdx: -1, CreatedAt: at.Add(time.Minute), Data: json.RawMessage(`{"status":"queued"}`)},
			wantJob: job("queued", &started, nil, ""), wantSteps: []store.StepStatus{"done", "pending"},
		},
		{
			name: "job event without a status is ignored", job: job("running", &started, nil, ""), steps: steps("running"),
			event:   store.JobEvent{Kind: "job", StepIdx: -1, CreatedAt: at, Data: json.RawMessage(`{}`)},
			wantJob: job("running", &started, nil, ""), wantSteps: []store.StepStatus{"running"},
		},
		{
			name: "log and wait events leave the view alone", job: job("queued", nil, nil, ""), steps: steps("pending", "pending"),
			event:   store.JobEvent{Kind: "log", StepIdx: 1, CreatedAt: at, Message: "hello", Data: json.RawMessage(`{}`)},
			wantJob: job("queued", nil, nil, ""), wantSteps: []store.StepStatus{"pending", "pending"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := *tc.job
			d := JobData{Job: tc.job, Steps: tc.steps}
			got := applyEvent(&d, tc.event)
			for _, v := range []JobData{got, d} {
				j := v.Job
				if j.Status != tc.wantJob.Status || j.Error != tc.wantJob.Error ||
					!sameTime(j.StartedAt, tc.wantJob.StartedAt) || !sameTime(j.FinishedAt, tc.wantJob.FinishedAt) {
					t.Errorf("job %s (error %q, started %v, finished %v), want %s (error %q, started %v, finished %v)",
						j.Status, j.Error, j.StartedAt, j.FinishedAt, tc.wantJob.Status, tc.wantJob.Error, tc.wantJob.StartedAt, tc.wantJob.FinishedAt)
				}
				if len(v.Steps) != len(tc.wantSteps) {
					t.Fatalf("%d steps, want %d", len(v.Steps), len(tc.wantSteps))
				}
				for i, s := range v.Steps {
					if s.Status != tc.wantSteps[i] {
						t.Errorf("step %d is %s, want %s", i, s.Status, tc.wantSteps[i])
					}
				}
			}
			if tc.wantMsg != "" && got.Steps[1].Message != tc.wantMsg {
				t.Errorf("step 1 says %q, want %q", got.Steps[1].Message, tc.wantMsg)
			}
			// The job the view held before is not changed behind the caller's back.
			if tc.job.Status != before.Status || !sameTime(tc.job.FinishedAt, before.FinishedAt) {
				t.Errorf("the original job was modified: %+v", tc.job)
			}
		})
	}
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}
