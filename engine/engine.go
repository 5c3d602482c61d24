// Package engine runs jobs: a registry of kinds, runners that claim queued jobs with a
// lease, steps persisted as they run, retry that continues where a job stopped, cancel,
// progress events and named waits. It knows nothing of regions: a job names the subject
// it acts on, and its steps are the business of whoever registered its kind.
package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/lib/pq"

	"runr.dev/console/store"
)

// DefaultLease is how long a claimed job stays with its console without a renewal. A
// console that dies loses its jobs to the next one (or to itself, restarted) after this.
const DefaultLease = 15 * time.Second

// maxAttempts is how many times a job is started before a crash loop fails it.
const maxAttempts = 4

// Step is one idempotent part of a job: running it again adopts what exists.
type Step struct {
	Name  string
	Title string
	Run   func(ctx context.Context, jc *JobContext) error
	// Parallel steps next to each other run at once (independent releases of one install);
	// the step after them starts when all of them ended.
	Parallel bool
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
	// Deadline, when set, is how long a job of the kind may run from its start (a resumed
	// job keeps its start; a retry starts anew): past it the job stops and fails, saying so.
	Deadline time.Duration
}

// DeadlineError is a job stopped at its kind's deadline.
type DeadlineError struct {
	Limit time.Duration
}

func (e *DeadlineError) Error() string {
	limit := e.Limit.String()
	if e.Limit >= time.Minute && e.Limit%time.Minute == 0 {
		limit = fmt.Sprintf("%d minutes", int(e.Limit/time.Minute))
	}
	return fmt.Sprintf("Stopped: a job of this kind runs at most %s, and this one ran that long. What it did is kept; Retry goes on from the step it stopped in", limit)
}

// InParallel is the step marked to run at once with its Parallel neighbours.
func (s Step) InParallel() Step {
	s.Parallel = true
	return s
}

// PlanWith plans a job's steps from its decoded parameters.
func PlanWith[P any](steps func(P) []Step) func(jc *JobContext) ([]Step, error) {
	return func(jc *JobContext) ([]Step, error) {
		var p P
		if err := jc.Params(&p); err != nil {
			return nil, err
		}
		return steps(p), nil
	}
}

// Fixed plans the same steps for every job of a kind.
func Fixed(steps ...Step) func(jc *JobContext) ([]Step, error) {
	return func(*JobContext) ([]Step, error) { return steps, nil }
}

// Request asks for a new job.
type Request struct {
	Kind  string
	Title string
	// Subject is the id of what the job acts on (kept with the job, for its history).
	Subject   string
	Params    any
	Secret    string
	CreatedBy string
	// PinRelease makes the job run only in a process of the engine's Release (its steps do
	// what this release does: a reconcile must not be taken by an older console).
	PinRelease bool
}

// Engine registers kinds of jobs, records new ones and runs them.
type Engine struct {
	Store *store.Store
	Log   *slog.Logger
	// Lease is how long a claimed job stays with this console without a renewal.
	Lease time.Duration
	// WaitTimeout is the deadline of a named wait that sets none.
	WaitTimeout time.Duration
	// Release is the release of the program this engine runs in: it runs the jobs pinned to
	// it and those pinned to none.
	Release string
	// Ended, when set, is told of every job this engine finished, after it is recorded
	// (the console checks a region's status again after a job that changed it).
	Ended func(j *store.Job, status store.JobStatus)

	owner string
	kinds map[string]*Kind
	wake  chan struct{}
}

// New builds an engine; owner names this console process in job leases.
func New(st *store.Store, log *slog.Logger, owner string, waitTimeout time.Duration) *Engine {
	return &Engine{Store: st, Log: log, Lease: DefaultLease, WaitTimeout: waitTimeout, owner: owner,
		kinds: map[string]*Kind{}, wake: make(chan struct{}, 1)}
}

// Owner is this console process's identity in job leases.
func (e *Engine) Owner() string { return e.owner }

// Register adds a kind of job.
func (e *Engine) Register(k *Kind) { e.kinds[k.Name] = k }

// Kind is the registered kind of that name (nil when none is).
func (e *Engine) Kind(name string) *Kind { return e.kinds[name] }

// Enqueue records a queued job with its planned steps; a runner picks it up.
func (e *Engine) Enqueue(ctx context.Context, req Request) (*store.Job, error) {
	k, ok := e.kinds[req.Kind]
	if !ok {
		return nil, fmt.Errorf("engine: enqueue: unknown job kind %q", req.Kind)
	}
	raw, err := json.Marshal(req.Params)
	if err != nil {
		return nil, fmt.Errorf("engine: enqueue %s: %w", req.Kind, err)
	}
	j := &store.Job{ID: store.NewID(), Kind: req.Kind, Title: req.Title, Params: raw, CreatedBy: req.CreatedBy}
	if req.PinRelease {
		j.Release = e.Release
	}
	if req.Subject != "" {
		j.RegionID = &req.Subject
	}
	jc := &JobContext{eng: e, Job: j, Secret: req.Secret, step: -1}
	steps, err := plan(jc, k)
	if err != nil {
		return nil, fmt.Errorf("engine: plan %s: %w", req.Kind, err)
	}
	rows := make([]store.JobStep, len(steps))
	for i, st := range steps {
		rows[i] = store.JobStep{Name: st.Name, Title: st.Title}
	}
	if err := e.Store.CreateJob(ctx, j, rows, req.Secret); err != nil {
		return nil, err
	}
	e.Wake()
	return j, nil
}

// Wake tells an idle runner to look for work now.
func (e *Engine) Wake() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Run runs n job runners until ctx ends. New jobs are noticed at once through LISTEN
// (from any console process) and otherwise every second.
func (e *Engine) Run(ctx context.Context, n int) {
	l := pq.NewListener(e.Store.URL, time.Second, 10*time.Second, nil)
	if err := l.Listen(store.JobsChannel); err != nil {
		e.Log.Warn("jobs: listen failed; polling only", "err", err)
	}
	go func() {
		defer l.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case <-l.Notify:
				e.Wake()
			}
		}
	}()
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.worker(ctx)
		}()
	}
	wg.Wait()
	// Give the jobs this process held back at once, so a restart resumes them without
	// waiting for the lease to expire.
	rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.Store.ReleaseJobs(rctx, e.owner); err != nil {
		e.Log.Warn("jobs: release on shutdown", "err", err)
	}
}

// RunNow runs one job in this process, now, unless a console took it already (false):
// a command that queues a job and carries it out itself (runr reconcile) uses it.
func (e *Engine) RunNow(ctx context.Context, id string) (bool, error) {
	j, err := e.Store.ClaimJobByID(ctx, id, e.owner, e.Release, e.Lease)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	e.runJob(ctx, j)
	if ctx.Err() != nil {
		// Interrupted: give the job back so that a console resumes it at once.
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := e.Store.ReleaseJobs(rctx, e.owner); err != nil {
			e.Log.Warn("jobs: release after an interruption", "err", err)
		}
	}
	return true, nil
}

func (e *Engine) worker(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for ctx.Err() == nil {
		j, err := e.Store.ClaimJob(ctx, e.owner, e.Release, e.Lease)
		if err != nil {
			if !errors.Is(err, store.ErrNotFound) && ctx.Err() == nil {
				e.Log.Warn("jobs: claim", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-e.wake:
			case <-tick.C:
			}
			continue
		}
		// Another job may be waiting: the next idle runner looks at once.
		e.Wake()
		e.runJob(ctx, j)
	}
}
