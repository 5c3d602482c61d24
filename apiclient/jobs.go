package apiclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Job states, as the API names them (store.JobStatus).
const (
	JobQueued    = "queued"
	JobRunning   = "running"
	JobSucceeded = "succeeded"
	JobFailed    = "failed"
	JobCancelled = "cancelled"
)

// Step states, as the API names them (store.StepStatus).
const (
	StepPending = "pending"
	StepRunning = "running"
	StepDone    = "done"
	StepSkipped = "skipped"
	StepFailed  = "failed"
)

// Job is GET /api/jobs/{id}: a job with its steps; Raw keeps the API's object.
type Job struct {
	ID         string          `json:"id"`
	Kind       string          `json:"kind"`
	Title      string          `json:"title"`
	RegionID   *string         `json:"region_id"`
	Status     string          `json:"status"`
	Error      string          `json:"error"`
	Attempts   int             `json:"attempts"`
	CreatedBy  string          `json:"created_by"`
	CreatedAt  time.Time       `json:"created_at"`
	StartedAt  *time.Time      `json:"started_at"`
	FinishedAt *time.Time      `json:"finished_at"`
	Steps      []Step          `json:"steps"`
	Progress   int             `json:"progress"`
	Wait       string          `json:"wait"`
	Raw        json.RawMessage `json:"-"`
}

// Done reports a job that ended.
func (j *Job) Done() bool { return Done(j.Status) }

// Done reports whether a job status is an end.
func Done(status string) bool {
	return status == JobSucceeded || status == JobFailed || status == JobCancelled
}

// Step is one step of a job.
type Step struct {
	Idx     int    `json:"idx"`
	Name    string `json:"name"`
	Title   string `json:"title"`
	Status  string `json:"status"`
	Message string `json:"message"`
	Wait    string `json:"wait"`
}

// Event is one event of a job's feed: a step change, a log line, a wait or the job's end.
type Event struct {
	ID        int64           `json:"id"`
	JobID     string          `json:"job_id"`
	CreatedAt time.Time       `json:"created_at"`
	Kind      string          `json:"kind"`
	StepIdx   int             `json:"step_idx"`
	Level     string          `json:"level"`
	Message   string          `json:"message"`
	Data      json.RawMessage `json:"data"`
}

// Event kinds.
const (
	EventStep = "step"
	EventLog  = "log"
	EventWait = "wait"
	EventJob  = "job"
)

// StepOf reads the step a step event carries.
func (e Event) StepOf() (Step, bool) {
	var s Step
	if e.Kind != EventStep || json.Unmarshal(e.Data, &s) != nil {
		return s, false
	}
	return s, true
}

// Job returns one job with its steps.
func (c *Client) Job(ctx context.Context, id string) (*Job, error) {
	var ans struct {
		Data json.RawMessage `json:"data"`
	}
	if err := c.Do(ctx, http.MethodGet, "/api/jobs/"+url.PathEscape(id), nil, &ans); err != nil {
		return nil, err
	}
	j := &Job{}
	if err := json.Unmarshal(ans.Data, j); err != nil {
		return nil, fmt.Errorf("read job %s: %w", id, err)
	}
	j.Raw = ans.Data
	return j, nil
}

// Jobs lists a page of jobs, newest first (of one region when regionID is set).
func (c *Client) Jobs(ctx context.Context, regionID string, page int) ([]Job, int, error) {
	var ans struct {
		Data []json.RawMessage `json:"data"`
		Meta struct {
			Total int `json:"total"`
		} `json:"meta"`
	}
	q := url.Values{"page": {fmt.Sprint(page)}}
	if regionID != "" {
		q.Set("region_id", regionID)
	}
	if err := c.Do(ctx, http.MethodGet, "/api/jobs?"+q.Encode(), nil, &ans); err != nil {
		return nil, 0, err
	}
	out := make([]Job, 0, len(ans.Data))
	for _, raw := range ans.Data {
		var j Job
		if err := json.Unmarshal(raw, &j); err != nil {
			return nil, 0, fmt.Errorf("read the jobs: %w", err)
		}
		j.Raw = raw
		out = append(out, j)
	}
	return out, ans.Meta.Total, nil
}

// Events returns the events after an id; with wait > 0 the console holds the request
// until the next event (at most wait seconds). It also returns the job's status.
func (c *Client) Events(ctx context.Context, id string, after int64, wait int) ([]Event, string, error) {
	var ans struct {
		Data      []Event `json:"data"`
		JobStatus string  `json:"job_status"`
	}
	path := fmt.Sprintf("/api/jobs/%s/events?after=%d&wait=%d", url.PathEscape(id), after, wait)
	if err := c.Do(ctx, http.MethodGet, path, nil, &ans); err != nil {
		return nil, "", err
	}
	return ans.Data, ans.JobStatus, nil
}

// followPatience is how long Follow keeps trying while the console does not answer (a
// console restarting, or a replica going away behind the load balancer).
const followPatience = 2 * time.Minute

// Follow reads a job's events from the start (after 0) and hands each to fn until the
// job ends; it returns the job as it ended. It keeps trying through a console that does
// not answer for a while, since the events are kept in the database.
func (c *Client) Follow(ctx context.Context, id string, fn func(Event)) (*Job, error) {
	var last int64
	var failingSince time.Time
	for {
		es, status, err := c.Events(ctx, id, last, 25)
		if err != nil {
			if !transient(err) || ctx.Err() != nil {
				return nil, err
			}
			if failingSince.IsZero() {
				failingSince = time.Now()
			} else if time.Since(failingSince) > followPatience {
				return nil, fmt.Errorf("follow job %s: the console did not answer for %s: %w", id, followPatience, err)
			}
			if err := sleep(ctx, time.Second); err != nil {
				return nil, err
			}
			continue
		}
		failingSince = time.Time{}
		for _, e := range es {
			last = max(last, e.ID)
			fn(e)
		}
		if Done(status) && len(es) == 0 {
			return c.Job(ctx, id)
		}
	}
}

// transient reports an error worth trying again: no connection, or a console that is
// restarting or overloaded.
func transient(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return e.Status == http.StatusBadGateway || e.Status == http.StatusServiceUnavailable || e.Status == http.StatusGatewayTimeout
	}
	var ue *url.Error
	return errors.As(err, &ue)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
