package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"runr.dev/console/store"
)

// runJob runs one claimed job to its end (or until this console stops).
func (e *Engine) runJob(parent context.Context, j *store.Job) {
	log := e.Log.With("job", j.ID, "kind", j.Kind)
	secret, err := e.Store.JobSecret(j)
	if err != nil {
		e.finish(j, nil, store.JobFailed, fmt.Errorf("read the job's parameters: %w", err))
		return
	}
	jc := &JobContext{eng: e, Job: j, Secret: secret, step: -1, log: log}
	k, ok := e.kinds[j.Kind]
	if !ok {
		e.finish(j, jc, store.JobFailed, fmt.Errorf("this console does not know jobs of kind %q (an older version?)", j.Kind))
		return
	}
	if j.Attempts > maxAttempts {
		e.finish(j, jc, store.JobFailed, fmt.Errorf("the console stopped %d times while running this job; check its logs, then Retry", j.Attempts-1))
		return
	}
	if j.Attempts > 1 {
		jc.Logf("Resuming after the console restarted (attempt %d)", j.Attempts)
	}
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	if k.Deadline > 0 && j.StartedAt != nil {
		dctx, stop := context.WithDeadlineCause(ctx, j.StartedAt.Add(k.Deadline), &DeadlineError{Limit: k.Deadline})
		defer stop()
		ctx = dctx
	}
	go e.keepLease(ctx, cancel, j)

	log.Info("job started", "attempt", j.Attempts)
	err = e.runSteps(ctx, jc, k)
	switch {
	case parent.Err() != nil:
		// The console is shutting down: leave the job running; its lease is released so
		// that the next console resumes it.
		log.Info("job interrupted by shutdown; it resumes on restart")
		return
	case errors.Is(context.Cause(ctx), errCancelled):
		e.finish(j, jc, store.JobCancelled, errors.New("cancelled by a user"))
	case errors.Is(context.Cause(ctx), errLeaseLost):
		log.Warn("job lease lost; another console continues it")
	case errors.As(context.Cause(ctx), new(*DeadlineError)):
		e.finish(j, jc, store.JobFailed, context.Cause(ctx))
	case err != nil:
		e.finish(j, jc, store.JobFailed, err)
	default:
		e.finish(j, jc, store.JobSucceeded, nil)
	}
}

var (
	errCancelled = errors.New("cancelled")
	errLeaseLost = errors.New("lease lost")
)

func (e *Engine) keepLease(ctx context.Context, cancel context.CancelCauseFunc, j *store.Job) {
	t := time.NewTicker(e.Lease / 4)
	defer t.Stop()
	renewed := time.Now() // just after the claim that set the lease
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			at := time.Now()
			cctx, c := context.WithTimeout(ctx, e.Lease/4)
			want, err := e.Store.RenewLease(cctx, j.ID, e.owner, e.Lease)
			c()
			if errors.Is(err, store.ErrNotFound) {
				cancel(errLeaseLost)
				return
			}
			if err != nil {
				// The database cannot be reached: once the lease expires another console
				// takes the job over, so stop it when half the lease went by without a
				// renewal, before it expires, rather than run it twice at once.
				if time.Since(renewed) >= e.Lease/2 {
					cancel(errLeaseLost)
					return
				}
				continue
			}
			renewed = at
			if want {
				cancel(errCancelled)
				return
			}
		}
	}
}

func (e *Engine) runSteps(ctx context.Context, jc *JobContext, k *Kind) error {
	steps, err := plan(jc, k)
	if err != nil {
		return err
	}
	rows, err := e.Store.JobSteps(ctx, jc.Job.ID)
	if err != nil {
		return err
	}
	if len(rows) != len(steps) {
		return fmt.Errorf("the job's steps changed since it was created (%d recorded, %d planned); start it again", len(rows), len(steps))
	}
	pending := func(i int) bool { return rows[i].Status != store.StepDone && rows[i].Status != store.StepSkipped }
	for i := 0; i < len(steps); i++ {
		if !steps[i].Parallel {
			if pending(i) {
				if err := e.runOne(ctx, jc, i, steps[i]); err != nil {
					return err
				}
			}
			continue
		}
		// A run of Parallel steps: each pending one at once, with a JobContext of its own;
		// the job goes on when all of them ended, and a failed one does not stop the others.
		group := i
		for i+1 < len(steps) && steps[i+1].Parallel {
			i++
		}
		errs := make([]error, i+1-group)
		var wg sync.WaitGroup
		for k := group; k <= i; k++ {
			if pending(k) {
				sub := *jc
				wg.Go(func() { errs[k-group] = e.runOne(ctx, &sub, k, steps[k]) })
			}
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	return nil
}

// runOne runs step i and records how it ended; it returns the step's error.
func (e *Engine) runOne(ctx context.Context, jc *JobContext, i int, st Step) error {
	jc.step, jc.lastNote = i, ""
	if _, err := e.Store.SetStep(ctx, jc.Job.ID, i, store.StepRunning, "", ""); err != nil {
		return err
	}
	err := runStep(ctx, jc, st)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	switch {
	case errors.Is(err, ErrSkip):
		_, serr := e.Store.SetStep(sctx, jc.Job.ID, i, store.StepSkipped, jc.lastNote, "")
		return serr
	case err != nil:
		// A shutdown or a lost lease leaves the step to the console that resumes the job;
		// a cancel and a deadline end it here.
		cause := context.Cause(ctx)
		var deadline *DeadlineError
		stopped := errors.Is(cause, errCancelled) || errors.As(cause, &deadline)
		if ctx.Err() != nil && !stopped {
			return err
		}
		msg := err.Error()
		switch {
		case errors.Is(cause, errCancelled):
			msg = "cancelled"
		case deadline != nil:
			msg = "stopped at the job's deadline"
		}
		jc.logLevel("error", msg)
		if _, serr := e.Store.SetStep(sctx, jc.Job.ID, i, store.StepFailed, msg, ""); serr != nil {
			return serr
		}
		return err
	default:
		_, serr := e.Store.SetStep(sctx, jc.Job.ID, i, store.StepDone, jc.lastNote, "")
		return serr
	}
}

// plan asks a kind for a job's steps, turning a panic into an error (the job fails, or is
// not created, and the console keeps running).
func plan(jc *JobContext, k *Kind) (steps []Step, err error) {
	defer func() {
		if r := recover(); r != nil {
			jc.eng.Log.Error("plan panicked", "kind", k.Name, "job", jc.Job.ID, "panic", r)
			steps, err = nil, fmt.Errorf("planning the %s job: internal error (%v); the console logged it", k.Name, r)
		}
	}()
	return k.Plan(jc)
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

func (e *Engine) finish(j *store.Job, jc *JobContext, status store.JobStatus, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if jc != nil {
		if k, ok := e.kinds[j.Kind]; ok && k.Finished != nil {
			func() {
				defer func() {
					if r := recover(); r != nil {
						e.Log.Error("job finish hook panicked", "job", j.ID, "panic", r)
					}
				}()
				k.Finished(ctx, jc, err)
			}()
		}
	}
	if ferr := e.Store.FinishJob(ctx, j.ID, status, msg); ferr != nil {
		e.Log.Error("jobs: finish", "job", j.ID, "err", ferr)
	} else if e.Ended != nil {
		e.Ended(j, status)
	}
	e.Log.Info("job finished", "job", j.ID, "kind", j.Kind, "status", status, "err", msg)
}
