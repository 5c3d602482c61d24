package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/lib/pq"

	"runr.dev/console/store"
)

// Lease is how long a claimed job stays with its console without a renewal. A console
// that dies loses its jobs to the next one (or to itself, restarted) after this.
var Lease = 15 * time.Second

// maxAttempts is how many times a job is started before a crash loop fails it.
const maxAttempts = 4

// Step is one idempotent part of a job: running it again adopts what exists.
type Step struct {
	Name  string
	Title string
	Run   func(ctx context.Context, jc *JobContext) error
}

// ErrSkip is returned by a step that has nothing to do; the step is shown as skipped.
var ErrSkip = errors.New("skipped")

// Kind describes a kind of job: its steps, planned from its parameters, and what to
// record when it ends.
type Kind struct {
	Name string
	// Plan returns the steps; it must give the same list for the same job.
	Plan func(jc *JobContext) ([]Step, error)
	// Finished runs after the job ended (err nil on success), to record statuses.
	Finished func(ctx context.Context, jc *JobContext, err error)
}

func (s *Service) register(k *Kind) { s.kinds[k.Name] = k }

// planWith plans a job's steps from its decoded parameters.
func planWith[P any](steps func(P) []Step) func(jc *JobContext) ([]Step, error) {
	return func(jc *JobContext) ([]Step, error) {
		var p P
		if err := jc.Params(&p); err != nil {
			return nil, err
		}
		return steps(p), nil
	}
}

// JobRequest asks for a new job.
type JobRequest struct {
	Kind      string
	Title     string
	RegionID  string
	Params    any
	Secret    string
	CreatedBy string
}

// Enqueue records a queued job with its planned steps; a runner picks it up.
func (s *Service) Enqueue(ctx context.Context, req JobRequest) (*store.Job, error) {
	k, ok := s.kinds[req.Kind]
	if !ok {
		return nil, fmt.Errorf("kube: enqueue: unknown job kind %q", req.Kind)
	}
	raw, err := json.Marshal(req.Params)
	if err != nil {
		return nil, fmt.Errorf("kube: enqueue %s: %w", req.Kind, err)
	}
	j := &store.Job{ID: store.NewID(), Kind: req.Kind, Title: req.Title, Params: raw, CreatedBy: req.CreatedBy}
	if req.RegionID != "" {
		j.RegionID = &req.RegionID
	}
	jc := &JobContext{svc: s, Job: j, Secret: req.Secret, step: -1}
	steps, err := k.Plan(jc)
	if err != nil {
		return nil, fmt.Errorf("kube: plan %s: %w", req.Kind, err)
	}
	rows := make([]store.JobStep, len(steps))
	for i, st := range steps {
		rows[i] = store.JobStep{Name: st.Name, Title: st.Title}
	}
	if err := s.Store.CreateJob(ctx, j, rows, req.Secret); err != nil {
		return nil, err
	}
	s.Wake()
	return j, nil
}

// Wake tells an idle runner to look for work now.
func (s *Service) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// RunWorkers runs n job runners until ctx ends. New jobs are noticed at once through
// LISTEN (from any console process) and otherwise every second.
func (s *Service) RunWorkers(ctx context.Context, n int) {
	l := pq.NewListener(s.Store.URL, time.Second, 10*time.Second, nil)
	if err := l.Listen(store.JobsChannel); err != nil {
		s.Log.Warn("jobs: listen failed; polling only", "err", err)
	}
	go func() {
		defer l.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case <-l.Notify:
				s.Wake()
				s.Wake()
			}
		}
	}()
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.worker(ctx)
		}()
	}
	wg.Wait()
	// Give the jobs this process held back at once, so a restart resumes them without
	// waiting for the lease to expire.
	rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Store.ReleaseJobs(rctx, s.owner); err != nil {
		s.Log.Warn("jobs: release on shutdown", "err", err)
	}
}

func (s *Service) worker(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for ctx.Err() == nil {
		j, err := s.Store.ClaimJob(ctx, s.owner, Lease)
		if err != nil {
			if !errors.Is(err, store.ErrNotFound) && ctx.Err() == nil {
				s.Log.Warn("jobs: claim", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-s.wake:
			case <-tick.C:
			}
			continue
		}
		s.runJob(ctx, j)
	}
}

// RunJobNow claims and runs one specific queued job in the calling goroutine (the CLI's --wait).
func (s *Service) runJob(parent context.Context, j *store.Job) {
	log := s.Log.With("job", j.ID, "kind", j.Kind)
	secret, err := s.Store.JobSecret(j)
	if err != nil {
		s.finish(j, nil, "failed", fmt.Errorf("read the job's parameters: %w", err))
		return
	}
	jc := &JobContext{svc: s, Job: j, Secret: secret, step: -1, log: log}
	k, ok := s.kinds[j.Kind]
	if !ok {
		s.finish(j, jc, "failed", fmt.Errorf("this console does not know jobs of kind %q (an older version?)", j.Kind))
		return
	}
	if j.Attempts > maxAttempts {
		s.finish(j, jc, "failed", fmt.Errorf("the console stopped %d times while running this job; check its logs, then Retry", j.Attempts-1))
		return
	}
	if j.Attempts > 1 {
		jc.Logf("Resuming after the console restarted (attempt %d)", j.Attempts)
	}
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	go s.keepLease(ctx, cancel, j)

	log.Info("job started", "attempt", j.Attempts)
	err = s.runSteps(ctx, jc, k)
	switch {
	case parent.Err() != nil:
		// The console is shutting down: leave the job running; its lease is released so
		// that the next console resumes it.
		log.Info("job interrupted by shutdown; it resumes on restart")
		return
	case errors.Is(context.Cause(ctx), errCancelled):
		s.finish(j, jc, "cancelled", errors.New("cancelled by a user"))
	case errors.Is(context.Cause(ctx), errLeaseLost):
		log.Warn("job lease lost; another console continues it")
	case err != nil:
		s.finish(j, jc, "failed", err)
	default:
		s.finish(j, jc, "succeeded", nil)
	}
}

var (
	errCancelled = errors.New("cancelled")
	errLeaseLost = errors.New("lease lost")
)

func (s *Service) keepLease(ctx context.Context, cancel context.CancelCauseFunc, j *store.Job) {
	t := time.NewTicker(Lease / 4)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			cctx, c := context.WithTimeout(ctx, Lease/4)
			want, err := s.Store.RenewLease(cctx, j.ID, s.owner, Lease)
			c()
			if errors.Is(err, store.ErrNotFound) {
				cancel(errLeaseLost)
				return
			}
			if want {
				cancel(errCancelled)
				return
			}
		}
	}
}

func (s *Service) runSteps(ctx context.Context, jc *JobContext, k *Kind) error {
	steps, err := k.Plan(jc)
	if err != nil {
		return err
	}
	rows, err := s.Store.JobSteps(ctx, jc.Job.ID)
	if err != nil {
		return err
	}
	if len(rows) != len(steps) {
		return fmt.Errorf("the job's steps changed since it was created (%d recorded, %d planned); start it again", len(rows), len(steps))
	}
	for i, st := range steps {
		if rows[i].Status == "done" || rows[i].Status == "skipped" {
			continue
		}
		jc.step = i
		if _, err := s.Store.SetStep(ctx, jc.Job.ID, i, "running", "", ""); err != nil {
			return err
		}
		err := runStep(ctx, jc, st)
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		switch {
		case errors.Is(err, ErrSkip):
			_, serr := s.Store.SetStep(sctx, jc.Job.ID, i, "skipped", jc.lastNote, "")
			cancel()
			if serr != nil {
				return serr
			}
		case err != nil:
			if ctx.Err() != nil && !errors.Is(context.Cause(ctx), errCancelled) {
				cancel()
				return err
			}
			msg := err.Error()
			if errors.Is(context.Cause(ctx), errCancelled) {
				msg = "cancelled"
			}
			jc.logLevel("error", msg)
			_, serr := s.Store.SetStep(sctx, jc.Job.ID, i, "failed", msg, "")
			cancel()
			if serr != nil {
				return serr
			}
			return err
		default:
			_, serr := s.Store.SetStep(sctx, jc.Job.ID, i, "done", jc.lastNote, "")
			cancel()
			if serr != nil {
				return serr
			}
		}
		jc.lastNote = ""
	}
	return nil
}

// runStep runs one step, turning a panic into a failure of that step.
func runStep(ctx context.Context, jc *JobContext, st Step) (err error) {
	defer func() {
		if r := recover(); r != nil {
			jc.log.Error("step panicked", "step", st.Name, "panic", r)
			err = fmt.Errorf("%s: internal error (%v); the console logged it", st.Title, r)
		}
	}()
	return st.Run(ctx, jc)
}

func (s *Service) finish(j *store.Job, jc *JobContext, status string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if jc != nil {
		if k, ok := s.kinds[j.Kind]; ok && k.Finished != nil {
			func() {
				defer func() {
					if r := recover(); r != nil {
						s.Log.Error("job finish hook panicked", "job", j.ID, "panic", r)
					}
				}()
				k.Finished(ctx, jc, err)
			}()
		}
	}
	if ferr := s.Store.FinishJob(ctx, j.ID, status, msg); ferr != nil {
		s.Log.Error("jobs: finish", "job", j.ID, "err", ferr)
	}
	s.Log.Info("job finished", "job", j.ID, "kind", j.Kind, "status", status, "err", msg)
}

// JobContext is what a step sees of its job.
type JobContext struct {
	svc    *Service
	Job    *store.Job
	Secret string
	step   int
	log    interface {
		Info(string, ...any)
		Warn(string, ...any)
		Error(string, ...any)
	}
	lastNote string
}

// Params decodes the job's parameters.
func (jc *JobContext) Params(v any) error {
	if err := json.Unmarshal(jc.Job.Params, v); err != nil {
		return fmt.Errorf("decode job parameters: %w", err)
	}
	return nil
}

// Region loads the job's region, fresh.
func (jc *JobContext) Region(ctx context.Context) (*store.Region, error) {
	if jc.Job.Region() == "" {
		return nil, errors.New("this job has no region")
	}
	r, err := jc.svc.Store.RegionByID(ctx, jc.Job.Region())
	if err == nil && r.SecretError != "" {
		// A job acting on blank secrets could overwrite them: it stops, retryable once
		// the console has the key again.
		return nil, fmt.Errorf("region %s: %s", r.Name, r.SecretError)
	}
	return r, err
}

// Logf persists and publishes a log line of the current step.
func (jc *JobContext) Logf(format string, args ...any) {
	jc.logLevel("info", fmt.Sprintf(format, args...))
}

// Warnf logs a warning of the current step.
func (jc *JobContext) Warnf(format string, args ...any) {
	jc.logLevel("warn", fmt.Sprintf(format, args...))
}

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
	if _, err := jc.svc.Store.AddEvent(ctx, &store.JobEvent{JobID: jc.Job.ID, Kind: "log", StepIdx: jc.step, Level: level, Message: msg}); err != nil && jc.log != nil {
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
	Hint     string
	Interval time.Duration
}

// Wait polls cond until it reports done, naming what it waits for ("waiting for PVC
// runr-registry/storage-test to bind (60 s)") in the step and in the event stream.
// cond returns whether it is done, and a detail of the current state.
func (jc *JobContext) Wait(ctx context.Context, what string, o WaitOpts, cond func(ctx context.Context) (bool, string, error)) error {
	if o.Timeout == 0 {
		o.Timeout = jc.svc.Cfg.InstallTimeout
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
	tick := time.NewTicker(o.Interval)
	defer tick.Stop()
	lastDetail := ""
	timedOut := func() error {
		jc.waitEvent(ctx, "end", what, "", time.Since(start))
		return &WaitTimeoutError{What: what, Timeout: o.Timeout, Detail: lastDetail, Hint: o.Hint}
	}
	for {
		done, detail, err := cond(wctx)
		if err != nil {
			if ctx.Err() == nil && wctx.Err() != nil {
				return timedOut()
			}
			jc.waitEvent(context.WithoutCancel(ctx), "end", what, "", time.Since(start))
			return err
		}
		if done {
			jc.waitEvent(ctx, "end", what, "", time.Since(start))
			return nil
		}
		if detail != "" && detail != lastDetail {
			jc.Logf("%s: %s", what, detail)
			lastDetail = detail
		}
		select {
		case <-ctx.Done():
			jc.waitEvent(context.WithoutCancel(ctx), "end", what, "", time.Since(start))
			return ctx.Err()
		case <-wctx.Done():
			return timedOut()
		case <-tick.C:
		}
	}
}

func (jc *JobContext) waitEvent(ctx context.Context, phase, what, label string, elapsed time.Duration) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	data, _ := json.Marshal(map[string]any{"phase": phase, "what": what, "elapsed_ms": elapsed.Milliseconds()})
	msg := label
	if phase == "end" {
		msg = fmt.Sprintf("%s: done after %.1f s", what, elapsed.Seconds())
	}
	if jc.step >= 0 {
		w := label
		if _, err := jc.svc.Store.SetStep(ctx, jc.Job.ID, jc.step, "running", "", w); err != nil && jc.log != nil {
			jc.log.Warn("jobs: wait", "err", err)
		}
	}
	if _, err := jc.svc.Store.AddEvent(ctx, &store.JobEvent{JobID: jc.Job.ID, Kind: "wait", StepIdx: jc.step, Message: msg, Data: data}); err != nil && jc.log != nil {
		jc.log.Warn("jobs: wait event", "err", err)
	}
}

// errorf builds a user-facing error for a step: what failed and what to do next.
func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// short trims a long error for a one-line message.
func short(err error) string {
	s := err.Error()
	if i := strings.Index(s, "\n"); i > 0 {
		s = s[:i]
	}
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return s
}
