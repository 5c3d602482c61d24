package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"runr.dev/console/store"
)

// Cond is a wait condition: done, and a detail of the current state.
type Cond = func(ctx context.Context) (bool, string, error)

// JobContext is what a step sees of its job.
type JobContext struct {
	eng    *Engine
	Job    *store.Job
	Secret string
	step   int
	// params, when set, are the parameters of the part of a composed job whose step runs
	// (PlanParts), instead of the job's own.
	params json.RawMessage
	log    interface {
		Info(string, ...any)
		Warn(string, ...any)
		Error(string, ...any)
	}
	lastNote string
}

// Params decodes the job's parameters.
func (jc *JobContext) Params(v any) error {
	raw := jc.Job.Params
	if jc.params != nil {
		raw = jc.params
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decode job parameters: %w", err)
	}
	return nil
}

// Logf persists and publishes a log line of the current step.
func (jc *JobContext) Logf(format string, args ...any) {
	jc.logLevel("info", fmt.Sprintf(format, args...))
}

// Warnf logs a warning of the current step.
func (jc *JobContext) Warnf(format string, args ...any) {
	jc.logLevel("warn", fmt.Sprintf(format, args...))
}

// LastNote is the step's latest Note: its message when it ends.
func (jc *JobContext) LastNote() string { return jc.lastNote }

// Note logs a line and keeps it as the step's message when the step ends.
func (jc *JobContext) Note(format string, args ...any) {
	jc.lastNote = fmt.Sprintf(format, args...)
	jc.logLevel("info", jc.lastNote)
}

func (jc *JobContext) logLevel(level, msg string) {
	if jc.log != nil {
		switch level {
		case "error":
			jc.log.Warn("job step failed", "step", jc.step, "msg", msg)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := jc.eng.Store.AddEvent(ctx, &store.JobEvent{JobID: jc.Job.ID, Kind: "log", StepIdx: jc.step, Level: level, Message: msg}); err != nil && jc.log != nil {
		jc.log.Warn("jobs: log event", "err", err)
	}
}

// WaitTimeoutError is a named wait that ran out of time.
type WaitTimeoutError struct {
	What    string
	Timeout time.Duration
	Detail  string
	Hint    string
}

func (e *WaitTimeoutError) Error() string {
	msg := fmt.Sprintf("Gave up waiting for %s after %s", e.What, secs(e.Timeout))
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	if e.Hint != "" {
		msg += ". " + strings.ToUpper(e.Hint[:1]) + e.Hint[1:]
	}
	return msg
}

func secs(d time.Duration) string {
	if d >= time.Minute && d%time.Minute == 0 {
		return fmt.Sprintf("%d min", int(d.Minutes()))
	}
	return fmt.Sprintf("%d s", int(d.Seconds()))
}

// WaitOpts tunes a named wait.
type WaitOpts struct {
	Timeout time.Duration
	// Hint is the next action, appended to the timeout error.
	Hint string
	// Interval is the longest time between two checks (default 250 ms).
	Interval time.Duration
}

// Wait polls cond until it reports done, naming what it waits for ("waiting for PVC
// runr-registry/storage-test to bind (60 s)") in the step and in the event stream.
// cond returns whether it is done, and a detail of the current state.
func (jc *JobContext) Wait(ctx context.Context, what string, o WaitOpts, cond Cond) error {
	if o.Timeout == 0 {
		o.Timeout = jc.eng.WaitTimeout
	}
	if o.Interval == 0 {
		o.Interval = 250 * time.Millisecond
	}
	label := fmt.Sprintf("waiting for %s (%s)", what, secs(o.Timeout))
	start := time.Now()
	// The condition runs under the wait's deadline too: a slow round cannot overrun it.
	wctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	if done, _, err := cond(wctx); err == nil && done {
		return nil
	}
	jc.waitEvent(ctx, "start", what, label, 0)
	// The re-checks start fast and slow down to the interval: most conditions hold within
	// a moment of the change that started the wait, which a fixed interval overshoots.
	every := min(firstRecheck, o.Interval)
	tick := time.NewTimer(every)
	defer tick.Stop()
	lastDetail := ""
	timedOut := func() error {
		jc.waitEvent(ctx, "gave up", what, "", time.Since(start))
		return &WaitTimeoutError{What: what, Timeout: o.Timeout, Detail: lastDetail, Hint: o.Hint}
	}
	for {
		done, detail, err := cond(wctx)
		if err != nil {
			if ctx.Err() == nil && wctx.Err() != nil {
				return timedOut()
			}
			jc.waitEvent(context.WithoutCancel(ctx), "failed", what, "", time.Since(start))
			return err
		}
		if done {
			jc.waitEvent(ctx, "done", what, "", time.Since(start))
			return nil
		}
		if detail != "" && detail != lastDetail {
			jc.Logf("%s: %s", what, detail)
			lastDetail = detail
		}
		select {
		case <-ctx.Done():
			jc.waitEvent(context.WithoutCancel(ctx), "stopped", what, "", time.Since(start))
			return ctx.Err()
		case <-wctx.Done():
			return timedOut()
		case <-tick.C:
			every = min(2*every, o.Interval)
			tick.Reset(every)
		}
	}
}

// firstRecheck is how soon a wait checks its condition again after the first look; each
// further re-check comes twice as late, up to the wait's interval.
const firstRecheck = 25 * time.Millisecond

// waitEndings say how a wait ended, in its end event: met, given up at its deadline,
// ended by the condition's error, or stopped with the job.
var waitEndings = map[string]string{
	"done":    "%s: done after %.1f s",
	"gave up": "%s: gave up after %.1f s",
	"failed":  "%s: stopped after %.1f s (the check failed)",
	"stopped": "%s: stopped after %.1f s (the job stopped)",
}

// waitEvent records the start of a wait (outcome "start") or its end (an outcome of
// waitEndings); the event's phase is "start" or "end", its outcome says how it ended.
func (jc *JobContext) waitEvent(ctx context.Context, outcome, what, label string, elapsed time.Duration) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	phase, msg := "start", label
	if f, ok := waitEndings[outcome]; ok {
		phase, msg = "end", fmt.Sprintf(f, what, elapsed.Seconds())
	}
	data, _ := json.Marshal(map[string]any{"phase": phase, "outcome": outcome, "what": what, "elapsed_ms": elapsed.Milliseconds()})
	if jc.step >= 0 {
		w := label
		if _, err := jc.eng.Store.SetStep(ctx, jc.Job.ID, jc.step, store.StepRunning, "", w); err != nil && jc.log != nil {
			jc.log.Warn("jobs: wait", "err", err)
		}
	}
	if _, err := jc.eng.Store.AddEvent(ctx, &store.JobEvent{JobID: jc.Job.ID, Kind: "wait", StepIdx: jc.step, Message: msg, Data: data}); err != nil && jc.log != nil {
		jc.log.Warn("jobs: wait event", "err", err)
	}
}
