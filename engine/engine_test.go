package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"runr.dev/console/engine"
	"runr.dev/console/store"
	"runr.dev/console/store/storetest"
)

// TestStepOutcomesAndLogsArePersisted proves that a job's steps end done, skipped or
// failed as their Run says, that Note becomes the step's message, that Logf, Warnf and
// a failure are persisted as events of their step, that the parameters, the secret and
// Finished reach the kind, and that a failed step stops the job.
func TestStepOutcomesAndLogsArePersisted(t *testing.T) {
	st := storetest.New(t)
	type params struct {
		Fail bool `json:"fail"`
	}
	secrets := make(chan string, 4)
	finished := make(chan error, 4)
	step := func(name string, run func(ctx context.Context, jc *engine.JobContext) error) engine.Step {
		return engine.Step{Name: name, Title: "Step " + name, Run: run}
	}
	k := &engine.Kind{
		Name: "outcomes",
		Plan: engine.PlanWith(func(p params) []engine.Step {
			steps := []engine.Step{
				step("note", func(ctx context.Context, jc *engine.JobContext) error {
					secrets <- jc.Secret
					jc.Logf("hello %d", 1)
					jc.Note("made %s", "x")
					return nil
				}),
				step("warn", func(ctx context.Context, jc *engine.JobContext) error {
					jc.Warnf("careful with %s", "y")
					return nil
				}),
				step("skip", func(ctx context.Context, jc *engine.JobContext) error {
					jc.Note("nothing to do")
					return engine.ErrSkip
				}),
			}
			if p.Fail {
				steps = append(steps, step("fail", func(ctx context.Context, jc *engine.JobContext) error {
					return errors.New("boom")
				}))
			}
			return append(steps, step("last", func(ctx context.Context, jc *engine.JobContext) error { return nil }))
		}),
		Finished: func(ctx context.Context, jc *engine.JobContext, err error) { finished <- err },
	}
	e := newEngine(t, st, "console-a", k)
	start(t, e, 1)

	tests := []struct {
		name       string
		fail       bool
		wantStatus store.JobStatus
		wantError  string
		wantSteps  string
		wantMsgs   []string
	}{
		{"succeeds", false, "succeeded", "", "note=done warn=done skip=skipped last=done",
			[]string{"made x", "", "nothing to do", ""}},
		{"fails at a step", true, "failed", "boom", "note=done warn=done skip=skipped fail=failed last=pending",
			[]string{"made x", "", "nothing to do", "boom", ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j, err := e.Enqueue(context.Background(), engine.Request{Kind: "outcomes", Title: "Outcomes",
				Params: params{Fail: tc.fail}, Secret: "s3cret", CreatedBy: "tester"})
			if err != nil {
				t.Fatal(err)
			}
			j = waitJob(t, st, j.ID, tc.wantStatus)
			if j.Error != tc.wantError {
				t.Errorf("job error %q, want %q", j.Error, tc.wantError)
			}
			if j.Attempts != 1 || j.StartedAt == nil || j.FinishedAt == nil {
				t.Errorf("attempts %d, started %v, finished %v: want 1 attempt with both times", j.Attempts, j.StartedAt, j.FinishedAt)
			}
			if got := receive(t, secrets, "the step's secret"); got != "s3cret" {
				t.Errorf("the step saw secret %q, want s3cret", got)
			}
			ferr := receive(t, finished, "Finished")
			if (ferr == nil) != (tc.wantError == "") || (ferr != nil && ferr.Error() != tc.wantError) {
				t.Errorf("Finished got %v, want error %q", ferr, tc.wantError)
			}
			steps := jobSteps(t, st, j.ID)
			if got := stepStates(steps); got != tc.wantSteps {
				t.Errorf("steps %s, want %s", got, tc.wantSteps)
			}
			for i, s := range steps {
				if s.Message != tc.wantMsgs[i] {
					t.Errorf("step %s message %q, want %q", s.Name, s.Message, tc.wantMsgs[i])
				}
				if s.Status == "done" && (s.StartedAt == nil || s.FinishedAt == nil) {
					t.Errorf("step %s is done without its times", s.Name)
				}
			}
			es := jobEvents(t, st, j.ID)
			for _, want := range []struct {
				step        int
				level, text string
			}{{0, "info", "hello 1"}, {0, "info", "made x"}, {1, "warn", "careful with y"}} {
				found := false
				for _, ev := range es {
					found = found || (ev.Kind == "log" && ev.StepIdx == want.step && ev.Level == want.level && ev.Message == want.text)
				}
				if !found {
					t.Errorf("no %s log %q of step %d in %+v", want.level, want.text, want.step, es)
				}
			}
			if tc.fail && !hasLog(es, "error", "boom") {
				t.Errorf("the failure is not logged as an error event")
			}
			last := es[len(es)-1]
			var end struct{ Status, Error string }
			if err := json.Unmarshal(last.Data, &end); err != nil || last.Kind != "job" || store.JobStatus(end.Status) != tc.wantStatus || end.Error != tc.wantError {
				t.Errorf("last event %s %s, want the job's end (%s)", last.Kind, last.Data, tc.wantStatus)
			}
		})
	}
}

// TestEnqueueRefusesWhatItCannotPlan proves that Enqueue records nothing for an unknown
// kind, a plan that fails, or parameters that cannot be encoded.
func TestEnqueueRefusesWhatItCannotPlan(t *testing.T) {
	st := storetest.New(t)
	failing := &engine.Kind{Name: "bad-plan", Plan: func(*engine.JobContext) ([]engine.Step, error) {
		return nil, errors.New("no cluster named")
	}}
	panicking := &engine.Kind{Name: "panicking-plan", Plan: func(*engine.JobContext) ([]engine.Step, error) {
		var steps []engine.Step
		return steps[:1], nil
	}}
	e := newEngine(t, st, "console-a", failing, panicking, fixed("ok"))
	tests := []struct {
		name, kind string
		params     any
		want       string
	}{
		{"unknown kind", "nope", nil, `unknown job kind "nope"`},
		{"plan fails", "bad-plan", nil, "no cluster named"},
		{"plan panics", "panicking-plan", nil, "internal error"},
		{"params cannot be encoded", "ok", map[string]any{"f": func() {}}, "unsupported type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.Enqueue(context.Background(), engine.Request{Kind: tc.kind, Title: "x", Params: tc.params})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Enqueue: %v, want an error with %q", err, tc.want)
			}
		})
	}
	js, err := st.ListJobs(context.Background(), "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(js) != 0 {
		t.Errorf("%d jobs recorded, want none", len(js))
	}
}

// TestWait proves the named waits: a condition met at once records no wait, one met
// later records its start and end and logs each new detail once, the step shows what
// it waits for while it waits, a slow condition cannot overrun the deadline (it ends
// with *WaitTimeoutError carrying the hint), the engine's default deadline applies, and
// a condition's error ends the wait with that error.
func TestWait(t *testing.T) {
	st := storetest.New(t)
	type result struct {
		err     error
		elapsed time.Duration
	}
	results := make(chan result, 1)
	type waitCase struct {
		name        string
		what        string
		opts        engine.WaitOpts
		cond        func(jobID string) engine.Cond
		wantErr     string // "" for none
		wantTimeout bool
		maxElapsed  time.Duration
		wantPhases  string
		wantLogs    []string
	}
	var seenWait atomic.Value // the step's persisted wait, read by a condition
	cases := []waitCase{
		{
			name: "met at once", what: "nothing", opts: engine.WaitOpts{Timeout: 5 * time.Second},
			cond: func(string) engine.Cond {
				return func(context.Context) (bool, string, error) { return true, "", nil }
			},
			maxElapsed: time.Second,
		},
		{
			name: "met after a few rounds", what: "pods", opts: engine.WaitOpts{Timeout: 5 * time.Second, Interval: 20 * time.Millisecond},
			cond: func(jobID string) engine.Cond {
				details := []string{"1 of 3 ready", "1 of 3 ready", "2 of 3 ready", "2 of 3 ready"}
				n := 0
				return func(ctx context.Context) (bool, string, error) {
					if n == 2 {
						steps, err := st.JobSteps(ctx, jobID)
						if err != nil {
							return false, "", err
						}
						seenWait.Store(steps[0].Wait)
					}
					if n == len(details) {
						return true, "", nil
					}
					n++
					return false, details[n-1], nil
				}
			},
			maxElapsed: 3 * time.Second, wantPhases: "start end",
			wantLogs: []string{"pods: 1 of 3 ready", "pods: 2 of 3 ready"},
		},
		{
			// The re-checks start fast (25 ms, 50 ms, …) and slow down to the interval:
			// with a fixed 2-s interval the third look would come after 4 s.
			name: "re-checks start fast", what: "the pod", opts: engine.WaitOpts{Timeout: 10 * time.Second, Interval: 2 * time.Second},
			cond: func(string) engine.Cond {
				n := 0
				return func(context.Context) (bool, string, error) {
					n++
					return n == 3, "", nil
				}
			},
			maxElapsed: time.Second, wantPhases: "start end",
		},
		{
			name: "slow condition keeps the deadline", what: "the slow thing",
			opts: engine.WaitOpts{Timeout: time.Second, Hint: "check the thing", Interval: 20 * time.Millisecond},
			cond: func(string) engine.Cond {
				return func(ctx context.Context) (bool, string, error) {
					select {
					case <-ctx.Done():
						return false, "", ctx.Err()
					case <-time.After(30 * time.Second):
						return true, "", nil
					}
				}
			},
			wantErr: "Gave up waiting for the slow thing after 1 s. Check the thing", wantTimeout: true,
			maxElapsed: 3 * time.Second, wantPhases: "start end",
		},
		{
			name: "default deadline with the last detail", what: "PVC storage to bind",
			cond: func(string) engine.Cond {
				return func(context.Context) (bool, string, error) { return false, "phase Pending", nil }
			},
			wantErr: "Gave up waiting for PVC storage to bind after 1 s (phase Pending)", wantTimeout: true,
			maxElapsed: 3 * time.Second, wantPhases: "start end", wantLogs: []string{"PVC storage to bind: phase Pending"},
		},
		{
			name: "condition error", what: "the API", opts: engine.WaitOpts{Timeout: 5 * time.Second, Interval: 20 * time.Millisecond},
			cond: func(string) engine.Cond {
				n := 0
				return func(context.Context) (bool, string, error) {
					if n++; n > 2 {
						return false, "", errors.New("api down")
					}
					return false, "", nil
				}
			},
			wantErr: "api down", maxElapsed: 3 * time.Second, wantPhases: "start end",
		},
	}
	byName := map[string]waitCase{}
	for _, c := range cases {
		byName[c.name] = c
	}
	k := &engine.Kind{Name: "wait", Plan: engine.PlanWith(func(p struct{ Case string }) []engine.Step {
		c := byName[p.Case]
		return []engine.Step{{Name: "wait", Title: "Wait", Run: func(ctx context.Context, jc *engine.JobContext) error {
			t0 := time.Now()
			err := jc.Wait(ctx, c.what, c.opts, c.cond(jc.Job.ID))
			results <- result{err, time.Since(t0)}
			return err
		}}}
	})}
	e := engine.New(st, newLogger(t), "console-a", time.Second)
	e.Register(k)
	start(t, e, 1)

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := enqueue(t, e, "wait", struct{ Case string }{tc.name})
			r := receive(t, results, "the wait")
			if r.elapsed > tc.maxElapsed {
				t.Errorf("the wait took %s, want at most %s", r.elapsed, tc.maxElapsed)
			}
			var wte *engine.WaitTimeoutError
			switch {
			case tc.wantErr == "" && r.err != nil:
				t.Fatalf("Wait: %v, want nil", r.err)
			case tc.wantErr != "" && (r.err == nil || r.err.Error() != tc.wantErr):
				t.Fatalf("Wait: %v, want %q", r.err, tc.wantErr)
			case errors.As(r.err, &wte) != tc.wantTimeout:
				t.Fatalf("Wait: %T, want a *WaitTimeoutError: %v", r.err, tc.wantTimeout)
			}
			status := store.JobSucceeded
			if tc.wantErr != "" {
				status = store.JobFailed
			}
			waitJob(t, st, j.ID, status)
			steps := jobSteps(t, st, j.ID)
			if steps[0].Message != tc.wantErr || steps[0].Wait != "" {
				t.Errorf("step message %q and wait %q, want %q and no wait", steps[0].Message, steps[0].Wait, tc.wantErr)
			}
			es := jobEvents(t, st, j.ID)
			var phases []string
			logs := map[string]int{}
			for _, ev := range es {
				switch ev.Kind {
				case "wait":
					if ev.StepIdx != 0 {
						t.Errorf("wait event of step %d, want 0", ev.StepIdx)
					}
					var d struct{ Phase, What string }
					if err := json.Unmarshal(ev.Data, &d); err != nil {
						t.Fatal(err)
					}
					// The end of a wait says how it ended: never "done" for a wait given up.
					if d.Phase == "end" && strings.Contains(ev.Message, "done after") != (tc.wantErr == "") {
						t.Errorf("end of the wait says %q; the wait's error is %q", ev.Message, tc.wantErr)
					}
					if d.What != tc.what {
						t.Errorf("wait event names %q, want %q", d.What, tc.what)
					}
					phases = append(phases, d.Phase)
				case "log":
					logs[ev.Message]++
				}
			}
			if got := strings.Join(phases, " "); got != tc.wantPhases {
				t.Errorf("wait phases %q, want %q", got, tc.wantPhases)
			}
			for _, l := range tc.wantLogs {
				if logs[l] != 1 {
					t.Errorf("log %q appears %d times, want once (logs %v)", l, logs[l], logs)
				}
			}
		})
	}
	if got, want := seenWait.Load(), "waiting for pods (5 s)"; got != want {
		t.Errorf("while waiting the step showed wait %q, want %q", got, want)
	}
}

// TestCancel proves that a running job whose cancel is requested stops its step and
// ends cancelled without running the next step, and that a queued job cancelled before
// it starts never runs.
func TestCancel(t *testing.T) {
	t.Run("running", func(t *testing.T) {
		st := storetest.New(t)
		var c counts
		started := make(chan string, 1)
		finished := make(chan error, 1)
		k := fixed("cancel-me", counted(&c, "one", blockUntilDone(started)), counted(&c, "two", nil))
		k.Finished = func(ctx context.Context, jc *engine.JobContext, err error) { finished <- err }
		e := newEngine(t, st, "console-a", k)
		e.Lease = time.Second // renewals, which notice the cancel, every 250 ms
		start(t, e, 1)
		j := enqueue(t, e, "cancel-me", nil)
		receive(t, started, "the step to start")
		if err := st.RequestCancel(context.Background(), j.ID); err != nil {
			t.Fatal(err)
		}
		j = waitJob(t, st, j.ID, "cancelled")
		if j.Error != "cancelled by a user" {
			t.Errorf("job error %q", j.Error)
		}
		steps := jobSteps(t, st, j.ID)
		if got := stepStates(steps); got != "one=failed two=pending" {
			t.Errorf("steps %s, want one=failed two=pending", got)
		}
		if steps[0].Message != "cancelled" {
			t.Errorf("the stopped step says %q, want cancelled", steps[0].Message)
		}
		if n := c.get(j.ID + "/two"); n != 0 {
			t.Errorf("the step after the cancelled one ran %d times", n)
		}
		if err := receive(t, finished, "Finished"); err == nil {
			t.Errorf("Finished got no error for a cancelled job")
		}
	})
	t.Run("queued", func(t *testing.T) {
		st := storetest.New(t)
		var c counts
		e := newEngine(t, st, "console-a", fixed("work", counted(&c, "one", nil)))
		j := enqueue(t, e, "work", nil)
		if err := st.RequestCancel(context.Background(), j.ID); err != nil {
			t.Fatal(err)
		}
		waitJob(t, st, j.ID, "cancelled")
		start(t, e, 1)
		// A job queued after it runs: the runner has looked at the queue.
		next := enqueue(t, e, "work", nil)
		waitJob(t, st, next.ID, "succeeded")
		if n := c.get(j.ID + "/one"); n != 0 {
			t.Errorf("the cancelled job ran %d times", n)
		}
		if got := waitJob(t, st, j.ID, "cancelled"); got.Attempts != 0 {
			t.Errorf("the cancelled job was claimed %d times", got.Attempts)
		}
	})
}

// TestRetryContinuesWhereItStopped proves that a job that failed at step 2 of 3 is
// retried from step 2: step 1 is not run again, steps 2 and 3 run once more.
func TestRetryContinuesWhereItStopped(t *testing.T) {
	st := storetest.New(t)
	var c counts
	var failing atomic.Bool
	failing.Store(true)
	e := newEngine(t, st, "console-a", fixed("flaky",
		counted(&c, "one", nil),
		counted(&c, "two", func(context.Context, *engine.JobContext) error {
			if failing.Load() {
				return errors.New("disk full")
			}
			return nil
		}),
		counted(&c, "three", nil)))
	start(t, e, 1)
	j := enqueue(t, e, "flaky", nil)
	waitJob(t, st, j.ID, "failed")
	if got := stepStates(jobSteps(t, st, j.ID)); got != "one=done two=failed three=pending" {
		t.Fatalf("after the failure: %s", got)
	}

	failing.Store(false)
	if err := st.RetryJob(context.Background(), j.ID); err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, st, j.ID, "succeeded")
	if got := stepStates(jobSteps(t, st, j.ID)); got != "one=done two=done three=done" {
		t.Errorf("after the retry: %s", got)
	}
	for step, want := range map[string]int{"one": 1, "two": 2, "three": 1} {
		if n := c.get(j.ID + "/" + step); n != want {
			t.Errorf("step %s ran %d times, want %d", step, n, want)
		}
	}
	if j.Error != "" || j.Attempts != 1 {
		t.Errorf("retried job: error %q, attempts %d; want no error and a fresh attempt count", j.Error, j.Attempts)
	}
}

// TestParallelSteps proves that Parallel steps next to each other run at once, each
// with its own step in the events, that a failed one lets the others finish and keeps
// the next step from starting, and that a retry runs only the failed one, then the rest.
func TestParallelSteps(t *testing.T) {
	st := storetest.New(t)
	var c counts
	var failing atomic.Bool
	failing.Store(true)
	// b and c each wait until the other started: they only both end if they run at once.
	bStarted, cStarted := make(chan struct{}), make(chan struct{})
	meet := func(mine, other chan struct{}) func(context.Context, *engine.JobContext) error {
		return func(ctx context.Context, jc *engine.JobContext) error {
			close(mine)
			select {
			case <-other:
				jc.Note("met the other step")
				return nil
			case <-time.After(10 * time.Second):
				return errors.New("the other step never started beside this one")
			}
		}
	}
	par := func(s engine.Step) engine.Step { s.Parallel = true; return s }
	e := newEngine(t, st, "console-a", fixed("fan",
		counted(&c, "a", nil),
		par(counted(&c, "b", meet(bStarted, cStarted))),
		par(counted(&c, "c", meet(cStarted, bStarted))),
		par(counted(&c, "d", func(context.Context, *engine.JobContext) error {
			if failing.Load() {
				return errors.New("chart not found")
			}
			return nil
		})),
		counted(&c, "e", nil)))
	start(t, e, 1)
	j := enqueue(t, e, "fan", nil)
	j = waitJob(t, st, j.ID, "failed")
	steps := jobSteps(t, st, j.ID)
	if got := stepStates(steps); got != "a=done b=done c=done d=failed e=pending" {
		t.Fatalf("after the failure: %s", got)
	}
	if steps[1].Message != "met the other step" || steps[2].Message != "met the other step" || j.Error != "chart not found" {
		t.Errorf("messages %q %q, job error %q", steps[1].Message, steps[2].Message, j.Error)
	}
	for _, ev := range jobEvents(t, st, j.ID) {
		if ev.Kind == "log" && ev.Message == "met the other step" && ev.StepIdx != 1 && ev.StepIdx != 2 {
			t.Errorf("a parallel step's line was recorded for step %d", ev.StepIdx)
		}
	}
	failing.Store(false)
	if err := st.RetryJob(context.Background(), j.ID); err != nil {
		t.Fatal(err)
	}
	waitJob(t, st, j.ID, "succeeded")
	for step, want := range map[string]int{"a": 1, "b": 1, "c": 1, "d": 2, "e": 1} {
		if n := c.get(j.ID + "/" + step); n != want {
			t.Errorf("step %s ran %d times, want %d", step, n, want)
		}
	}
}

// TestPanickingStepFailsThatStep proves that a step that panics fails that step and its
// job with "internal error", the later steps do not run, a panicking Finished hook does
// not keep the job from being recorded, and the (only) runner goes on with the next job.
func TestPanickingStepFailsThatStep(t *testing.T) {
	st := storetest.New(t)
	var c counts
	panics := fixed("panics",
		counted(&c, "one", nil),
		counted(&c, "two", func(context.Context, *engine.JobContext) error { panic("kaboom") }),
		counted(&c, "three", nil))
	panics.Finished = func(context.Context, *engine.JobContext, error) { panic("the hook too") }
	e := newEngine(t, st, "console-a", panics, fixed("fine", counted(&c, "one", nil)))
	bad := enqueue(t, e, "panics", nil)
	good := enqueue(t, e, "fine", nil)
	start(t, e, 1)

	waitJob(t, st, good.ID, "succeeded")
	j := waitJob(t, st, bad.ID, "failed")
	if !strings.Contains(j.Error, "internal error") || !strings.Contains(j.Error, "kaboom") {
		t.Errorf("job error %q, want an internal error naming the panic", j.Error)
	}
	steps := jobSteps(t, st, bad.ID)
	if got := stepStates(steps); got != "one=done two=failed three=pending" {
		t.Errorf("steps %s", got)
	}
	if !strings.Contains(steps[1].Message, "internal error") {
		t.Errorf("the panicking step says %q, want an internal error", steps[1].Message)
	}
	if n := c.get(bad.ID + "/three"); n != 0 {
		t.Errorf("the step after the panic ran %d times", n)
	}
}

// TestResumeAfterRestart proves that a job left running by an engine whose context
// ended (a console shutting down) is resumed at once by a new engine: the interrupted
// step runs again, the finished one does not, and its attempt count grows.
func TestResumeAfterRestart(t *testing.T) {
	url := storetest.NewURL(t)
	stA, stB := openStore(t, url), openStore(t, url)
	var c counts
	started := make(chan string, 1)
	k := func() *engine.Kind {
		return fixed("long",
			counted(&c, "one", nil),
			engine.Step{Name: "two", Title: "Two", Run: func(ctx context.Context, jc *engine.JobContext) error {
				if c.inc(jc.Job.ID+"/two") == 1 {
					return blockUntilDone(started)(ctx, jc)
				}
				return nil
			}})
	}
	// Both consoles keep the default lease: only the release on shutdown lets B resume
	// the job in time.
	a := newEngine(t, stA, "console-a", k())
	stopA := start(t, a, 2)
	j := enqueue(t, a, "long", nil)
	receive(t, started, "step two to start")
	stopA()

	left, err := stB.JobByID(context.Background(), j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if left.Status != "running" || left.Attempts != 1 {
		t.Fatalf("after the shutdown the job is %s (attempt %d), want running (attempt 1)", left.Status, left.Attempts)
	}
	if got := stepStates(jobSteps(t, stB, j.ID)); got != "one=done two=running" {
		t.Fatalf("after the shutdown: %s, want the interrupted step still running", got)
	}

	b := newEngine(t, stB, "console-b", k())
	start(t, b, 2)
	// Well within the 15 s lease: console-a gave the job back when it stopped.
	j = waitJobWithin(t, stB, j.ID, "succeeded", 5*time.Second)
	if j.Attempts != 2 {
		t.Errorf("attempts %d, want 2", j.Attempts)
	}
	if n := c.get(j.ID + "/one"); n != 1 {
		t.Errorf("the finished step ran %d times, want 1", n)
	}
	if n := c.get(j.ID + "/two"); n != 2 {
		t.Errorf("the interrupted step ran %d times, want 2", n)
	}
	if !hasLog(jobEvents(t, stB, j.ID), "info", "Resuming after the console restarted (attempt 2)") {
		t.Errorf("no resume line in the job's log")
	}
}

// TestExpiredLeaseIsTakenOver proves that a job claimed by a console that died (it never
// renews its lease) stays with it until the lease expires, and is then taken over and
// finished by another console.
func TestExpiredLeaseIsTakenOver(t *testing.T) {
	st := storetest.New(t)
	var c counts
	var firstRun atomic.Value
	k := fixed("work",
		counted(&c, "one", func(context.Context, *engine.JobContext) error {
			firstRun.CompareAndSwap(nil, time.Now())
			return nil
		}),
		counted(&c, "two", nil))
	b := newEngine(t, st, "console-b", k)
	j := enqueue(t, b, "work", nil)
	ghost, err := st.ClaimJob(context.Background(), "console-dead", "", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if ghost.ID != j.ID || ghost.LeaseUntil == nil {
		t.Fatalf("the dead console claimed %s (lease %v), want %s", ghost.ID, ghost.LeaseUntil, j.ID)
	}
	start(t, b, 2)
	j = waitJob(t, st, j.ID, "succeeded")
	ran := firstRun.Load().(time.Time)
	if ran.Before(*ghost.LeaseUntil) {
		t.Errorf("console-b ran the job at %s, before the dead console's lease expired (%s)", ran, ghost.LeaseUntil)
	}
	if j.Attempts != 2 {
		t.Errorf("attempts %d, want 2", j.Attempts)
	}
	if c.get(j.ID+"/one") != 1 || c.get(j.ID+"/two") != 1 {
		t.Errorf("steps ran %v, want each once", c.m)
	}
}

// TestRunnerThatCannotRenewItsLeaseStops proves that a runner that loses the database
// stops its step before its lease expires, and that another console then takes the job
// over and finishes it: the job never runs in two places at once.
func TestRunnerThatCannotRenewItsLeaseStops(t *testing.T) {
	url := storetest.NewURL(t)
	stA, stB := openStore(t, url), openStore(t, url)
	startedA := make(chan string, 1)
	stoppedA := make(chan time.Time, 1)
	var c counts
	var firstRunB atomic.Value
	ka := fixed("work",
		engine.Step{Name: "one", Title: "One", Run: func(ctx context.Context, jc *engine.JobContext) error {
			err := blockUntilDone(startedA)(ctx, jc)
			stoppedA <- time.Now()
			return err
		}},
		engine.Step{Name: "two", Title: "Two", Run: func(context.Context, *engine.JobContext) error { return nil }})
	kb := fixed("work",
		counted(&c, "one", func(context.Context, *engine.JobContext) error {
			firstRunB.CompareAndSwap(nil, time.Now())
			return nil
		}),
		counted(&c, "two", nil))
	const lease = 3 * time.Second
	a := newEngine(t, stA, "console-a", ka)
	a.Lease = lease
	start(t, a, 1)
	j := enqueue(t, a, "work", nil)
	receive(t, startedA, "console-a to start the job")
	stA.Close() // console-a can no longer reach the database
	b := newEngine(t, stB, "console-b", kb)
	b.Lease = lease
	start(t, b, 1)

	stopped := receive(t, stoppedA, "console-a to stop its step")
	j = waitJob(t, stB, j.ID, "succeeded")
	if j.Attempts != 2 {
		t.Errorf("attempts %d, want 2", j.Attempts)
	}
	if c.get(j.ID+"/one") != 1 || c.get(j.ID+"/two") != 1 {
		t.Errorf("console-b ran the steps %v, want each once", c.m)
	}
	if ran := firstRunB.Load().(time.Time); !stopped.Before(ran) {
		t.Errorf("console-b started the job at %s while console-a still ran it (stopped at %s)", ran.Format(time.StampMilli), stopped.Format(time.StampMilli))
	}
}

// TestTwoEnginesRunEachJobOnce proves that two engines on one database, with several
// runners each, run every step of every job exactly once.
func TestTwoEnginesRunEachJobOnce(t *testing.T) {
	url := storetest.NewURL(t)
	stA, stB := openStore(t, url), openStore(t, url)
	var c counts
	var byEngine [2]atomic.Int32
	kind := func(i int) *engine.Kind {
		work := func(context.Context, *engine.JobContext) error {
			byEngine[i].Add(1)
			time.Sleep(5 * time.Millisecond) // a little work, so that runners overlap
			return nil
		}
		return fixed("count", counted(&c, "one", work), counted(&c, "two", work), counted(&c, "three", work))
	}
	a := newEngine(t, stA, "console-a", kind(0))
	b := newEngine(t, stB, "console-b", kind(1))
	start(t, a, 3)
	start(t, b, 3)
	var ids []string
	for i := 0; i < 20; i++ {
		e := a
		if i%2 == 1 {
			e = b
		}
		ids = append(ids, enqueue(t, e, "count", nil).ID)
	}
	eventually(t, 15*time.Second, "every job to end", func() bool {
		var n int
		if err := stA.DB.Get(&n, `SELECT count(*) FROM jobs WHERE status IN ('succeeded', 'failed', 'cancelled')`); err != nil {
			t.Fatal(err)
		}
		return n == len(ids)
	})
	for _, id := range ids {
		j := waitJob(t, stA, id, "succeeded")
		if j.Attempts != 1 {
			t.Errorf("job %s claimed %d times", id, j.Attempts)
		}
		for _, s := range []string{"one", "two", "three"} {
			if n := c.get(id + "/" + s); n != 1 {
				t.Errorf("job %s step %s ran %d times", id, s, n)
			}
		}
	}
	t.Logf("step runs: console-a %d, console-b %d", byEngine[0].Load(), byEngine[1].Load())
}

// TestJobsThatCannotRunFailWithAReason proves that a job of a kind this console does not
// know, a job whose plan changed since it was recorded, and a job whose console kept
// dying while running it fail with a message saying so, without running a step.
func TestJobsThatCannotRunFailWithAReason(t *testing.T) {
	var c counts
	var planned atomic.Int32
	planned.Store(2)
	changing := &engine.Kind{Name: "changing", Plan: func(*engine.JobContext) ([]engine.Step, error) {
		steps := make([]engine.Step, planned.Load())
		for i := range steps {
			steps[i] = counted(&c, fmt.Sprint(i), nil)
		}
		return steps, nil
	}}
	work := fixed("work", counted(&c, "one", nil))
	tests := []struct {
		name  string
		setup func(t *testing.T, st *store.Store, e *engine.Engine) string
		want  string
	}{
		{"unknown kind", func(t *testing.T, st *store.Store, e *engine.Engine) string {
			j := &store.Job{Kind: "from-a-newer-console", Title: "x"}
			if err := st.CreateJob(context.Background(), j, []store.JobStep{{Name: "one", Title: "One"}}, ""); err != nil {
				t.Fatal(err)
			}
			return j.ID
		}, `does not know jobs of kind "from-a-newer-console"`},
		{"plan changed", func(t *testing.T, st *store.Store, e *engine.Engine) string {
			j := enqueue(t, e, "changing", nil)
			planned.Store(3)
			return j.ID
		}, "the job's steps changed since it was created (2 recorded, 3 planned)"},
		{"crash loop", func(t *testing.T, st *store.Store, e *engine.Engine) string {
			j := enqueue(t, e, "work", nil)
			for i := 0; i < 4; i++ { // four consoles claimed it and died
				if _, err := st.ClaimJob(context.Background(), fmt.Sprint("dead-", i), "", -time.Second); err != nil {
					t.Fatal(err)
				}
			}
			return j.ID
		}, "the console stopped 4 times while running this job"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := storetest.New(t)
			e := newEngine(t, st, "console-a", changing, work)
			id := tc.setup(t, st, e)
			start(t, e, 1)
			j := waitJob(t, st, id, "failed")
			if !strings.Contains(j.Error, tc.want) {
				t.Errorf("job error %q, want %q", j.Error, tc.want)
			}
			for _, s := range jobSteps(t, st, id) {
				if s.Status != "pending" {
					t.Errorf("step %s is %s, want pending", s.Name, s.Status)
				}
				if n := c.get(id + "/" + s.Name); n != 0 {
					t.Errorf("step %s ran %d times", s.Name, n)
				}
			}
		})
	}
}

// TestDeadlineStopsAJob: a job of a kind with a deadline that runs past it stops in the
// step it was in, fails saying why, and a retry starts its time anew and goes on from
// that step.
func TestDeadlineStopsAJob(t *testing.T) {
	st := storetest.New(t)
	var c counts
	finished := make(chan error, 2)
	k := fixed("slow", counted(&c, "one", nil), counted(&c, "two", func(ctx context.Context, jc *engine.JobContext) error {
		if c.get(jc.Job.ID+"/two") > 1 {
			return nil // the retry's run is quick
		}
		<-ctx.Done()
		return ctx.Err()
	}))
	k.Deadline = 2 * time.Second
	k.Finished = func(ctx context.Context, jc *engine.JobContext, err error) { finished <- err }
	e := newEngine(t, st, "console-a", k)
	start(t, e, 1)
	j := enqueue(t, e, "slow", nil)
	j = waitJob(t, st, j.ID, "failed")
	if !strings.Contains(j.Error, "runs at most 2s") {
		t.Errorf("job error %q, want the deadline named", j.Error)
	}
	if got := stepStates(jobSteps(t, st, j.ID)); got != "one=done two=failed" {
		t.Errorf("steps %s, want one=done two=failed", got)
	}
	var de *engine.DeadlineError
	if err := receive(t, finished, "Finished"); !errors.As(err, &de) || de.Limit != 2*time.Second {
		t.Errorf("Finished got %v, want the deadline", err)
	}
	if err := st.RetryJob(context.Background(), j.ID); err != nil {
		t.Fatal(err)
	}
	waitJob(t, st, j.ID, "succeeded")
	if one, two := c.get(j.ID+"/one"), c.get(j.ID+"/two"); one != 1 || two != 2 {
		t.Errorf("runs one=%d two=%d, want 1 and 2 (the retry goes on from the stopped step)", one, two)
	}
}
