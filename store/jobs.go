package store

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/lib/pq"
)

// Job is a background install or action with ordered steps.
type Job struct {
	ID              string          `db:"id" json:"id"`
	Kind            string          `db:"kind" json:"kind"`
	Title           string          `db:"title" json:"title"`
	RegionID        *string         `db:"region_id" json:"region_id"`
	Params          json.RawMessage `db:"params" json:"params"`
	SecretParams    string          `db:"secret_params" json:"-"`
	Status          JobStatus       `db:"status" json:"status"`
	Error           string          `db:"error" json:"error"`
	Attempts        int             `db:"attempts" json:"attempts"`
	LeaseOwner      string          `db:"lease_owner" json:"-"`
	LeaseUntil      *time.Time      `db:"lease_until" json:"-"`
	CancelRequested bool            `db:"cancel_requested" json:"cancel_requested"`
	CreatedBy       string          `db:"created_by" json:"created_by"`
	CreatedAt       time.Time       `db:"created_at" json:"created_at"`
	StartedAt       *time.Time      `db:"started_at" json:"started_at"`
	FinishedAt      *time.Time      `db:"finished_at" json:"finished_at"`
	// TenantID is the tenant whose job it is (nil: the platform's).
	TenantID *string `db:"tenant_id" json:"-"`
	// Release is the console release the job must run with ("": any).
	Release string `db:"release" json:"release,omitempty"`
}

// Region returns the job's region id ("" when none).
func (j *Job) Region() string { return deref(j.RegionID) }

// Tenant returns the id of the tenant whose job it is ("" for the platform's).
func (j *Job) Tenant() string {
	if j == nil {
		return ""
	}
	return deref(j.TenantID)
}

// Done reports whether the job has ended.
func (j *Job) Done() bool { return j.Status.Done() }

// JobStep is one ordered step of a job.
type JobStep struct {
	JobID      string     `db:"job_id" json:"-"`
	Idx        int        `db:"idx" json:"idx"`
	Name       string     `db:"name" json:"name"`
	Title      string     `db:"title" json:"title"`
	Status     StepStatus `db:"status" json:"status"`
	Message    string     `db:"message" json:"message"`
	Wait       string     `db:"wait" json:"wait"`
	StartedAt  *time.Time `db:"started_at" json:"started_at"`
	FinishedAt *time.Time `db:"finished_at" json:"finished_at"`
}

// JobEvent is one persisted progress event: a step change, a log line, a wait or the job's end.
type JobEvent struct {
	ID        int64           `db:"id" json:"id"`
	JobID     string          `db:"job_id" json:"job_id"`
	CreatedAt time.Time       `db:"created_at" json:"created_at"`
	Kind      string          `db:"kind" json:"kind"` // step | log | wait | job
	StepIdx   int             `db:"step_idx" json:"step_idx"`
	Level     string          `db:"level" json:"level"`
	Message   string          `db:"message" json:"message"`
	Data      json.RawMessage `db:"data" json:"data"`
}

// EventsChannel is the PostgreSQL NOTIFY channel of job events.
const EventsChannel = "runr_job_events"

// JobsChannel is the NOTIFY channel that announces new or retried jobs.
const JobsChannel = "runr_jobs"

// maxMessage caps a log line so that its event fits in one NOTIFY payload.
const maxMessage = 2000

// CreateJob inserts a queued job with its steps and announces it.
func (s *Store) CreateJob(ctx context.Context, j *Job, steps []JobStep, secret string) error {
	orDefault(&j.ID, NewID())
	if len(j.Params) == 0 {
		j.Params = json.RawMessage(`{}`)
	}
	tx, err := s.begin(ctx)
	if err != nil {
		return wrap("create job", err)
	}
	defer tx.Rollback()
	if err := tx.GetContext(ctx, j, `INSERT INTO jobs (id, kind, title, region_id, params, secret_params, created_by, release)
		VALUES ($1,$2,$3,$4,$5,$6,$7,$8) RETURNING *`,
		j.ID, j.Kind, j.Title, j.RegionID, []byte(j.Params), s.Cipher.Encrypt(secret), j.CreatedBy, j.Release); err != nil {
		return wrap("create job", err)
	}
	for i, st := range steps {
		if _, err := tx.ExecContext(ctx, `INSERT INTO job_steps (job_id, idx, name, title) VALUES ($1,$2,$3,$4)`,
			j.ID, i, st.Name, st.Title); err != nil {
			return wrap("create job step", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `SELECT pg_notify($1, $2)`, JobsChannel, j.ID); err != nil {
		return wrap("create job", err)
	}
	return wrap("create job", tx.Commit())
}

// ClaimJobByID takes one job for owner, a console of release, when it is queued, or
// running with an expired lease, and any release or this one may run it; ErrNotFound when
// another console holds it, it ended or it is another release's.
func (s *Store) ClaimJobByID(ctx context.Context, id, owner, release string, lease time.Duration) (*Job, error) {
	j := &Job{}
	err := s.DB.GetContext(ctx, j, `UPDATE jobs SET status = 'running', lease_owner = $2,
			lease_until = now() + $3::interval, attempts = attempts + 1, started_at = coalesce(started_at, now())
		WHERE id = (
			SELECT id FROM jobs WHERE id = $1 AND (status = 'queued' OR (status = 'running' AND lease_until < now()))
				AND release IN ('', $4)
			FOR UPDATE SKIP LOCKED)
		RETURNING *`, id, owner, lease.String(), release)
	return j, wrap("claim job "+id, err)
}

// JobSecret returns the decrypted secret parameters of a job.
func (s *Store) JobSecret(j *Job) (string, error) { return s.Cipher.Decrypt(j.SecretParams) }

// SetJobSecret replaces a job's secret parameters (a retry with a new body).
func (s *Store) SetJobSecret(ctx context.Context, id, secret string, params json.RawMessage) error {
	_, err := s.db(ctx).ExecContext(ctx, `UPDATE jobs SET secret_params = $2, params = $3 WHERE id = $1`, id, s.Cipher.Encrypt(secret), []byte(params))
	return wrap("set job secret", err)
}

// ClaimJob takes the oldest queued job, or a running one whose lease expired (its console died),
// for owner, a console of release: of the jobs any release or this one may run. It returns
// ErrNotFound when there is nothing to do.
func (s *Store) ClaimJob(ctx context.Context, owner, release string, lease time.Duration) (*Job, error) {
	j := &Job{}
	err := s.db(ctx).GetContext(ctx, j, `UPDATE jobs SET status = 'running', lease_owner = $1,
			lease_until = now() + $2::interval, attempts = attempts + 1, started_at = coalesce(started_at, now())
		WHERE id = (
			SELECT id FROM jobs
			WHERE (status = 'queued' OR (status = 'running' AND lease_until < now())) AND release IN ('', $3)
			ORDER BY created_at
			FOR UPDATE SKIP LOCKED LIMIT 1)
		RETURNING *`, owner, lease.String(), release)
	return j, wrap("claim job", err)
}

// RenewLease extends a job's lease and reports whether a cancel was requested.
// ErrNotFound means the lease was lost.
func (s *Store) RenewLease(ctx context.Context, id, owner string, lease time.Duration) (cancel bool, err error) {
	err = s.db(ctx).GetContext(ctx, &cancel, `UPDATE jobs SET lease_until = now() + $3::interval
		WHERE id = $1 AND lease_owner = $2 AND status = 'running' RETURNING cancel_requested`, id, owner, lease.String())
	return cancel, wrap("renew lease of job "+id, err)
}

// ReleaseJobs gives back the leases of owner's running jobs (a clean shutdown), so that
// another console, or this one after a restart, resumes them at once.
func (s *Store) ReleaseJobs(ctx context.Context, owner string) error {
	_, err := s.db(ctx).ExecContext(ctx, `UPDATE jobs SET lease_until = now() - interval '1 second'
		WHERE lease_owner = $1 AND status = 'running'`, owner)
	return wrap("release jobs", err)
}

// FinishJob ends a job with a status and an error message, and emits the job event, in
// one statement: whoever reads the job as ended also finds its last event.
func (s *Store) FinishJob(ctx context.Context, id string, status JobStatus, errMsg string) error {
	_, err := s.insertEvent(ctx, `WITH fin AS (UPDATE jobs SET status = $8::text, error = $9::text, finished_at = now(), lease_owner = ''
			WHERE id = $1 RETURNING id), `, []any{status, truncate(errMsg, 4000)}, &JobEvent{JobID: id, Kind: "job", StepIdx: -1,
		Level: levelOf(status), Message: errMsg, Data: mustJSON(map[string]string{"status": string(status), "error": errMsg})})
	return wrap("finish job "+id, err)
}

// AbandonJob fails a job pinned to release that no console holds (queued, or its lease
// expired): no console of that release is left to run it. ErrNotFound when a console holds
// it, it ended or it is pinned to another release.
func (s *Store) AbandonJob(ctx context.Context, id, release, reason string) error {
	_, err := s.insertEvent(ctx, `WITH fin AS (UPDATE jobs SET status = 'failed', error = $9::text, finished_at = now(), lease_owner = ''
			WHERE id = $1 AND release = $8::text AND (status = 'queued' OR (status = 'running' AND lease_until < now())) RETURNING id), `,
		[]any{release, truncate(reason, 4000)}, &JobEvent{JobID: id, Kind: "job", StepIdx: -1, Level: "error", Message: reason,
			Data: mustJSON(map[string]string{"status": string(JobFailed), "error": reason})})
	return wrap("abandon job "+id, err)
}

func levelOf[T JobStatus | StepStatus](status T) string {
	if string(status) == string(JobFailed) {
		return "error"
	}
	return "info"
}

// RetryJob queues a failed or cancelled job again; its finished steps are kept, so it
// continues where it stopped.
func (s *Store) RetryJob(ctx context.Context, id string) error {
	tx, err := s.begin(ctx)
	if err != nil {
		return wrap("retry job", err)
	}
	defer tx.Rollback()
	// A retry starts anew: its start (which a kind's deadline counts from) is its claim's.
	res, err := tx.ExecContext(ctx, `UPDATE jobs SET status = 'queued', error = '', attempts = 0, cancel_requested = false,
		started_at = NULL, finished_at = NULL WHERE id = $1 AND status IN ('failed', 'cancelled')`, id)
	if err := affected("retry job "+id, res, err); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE job_steps SET status = 'pending', message = '', wait = ''
		WHERE job_id = $1 AND status IN ('failed', 'running')`, id); err != nil {
		return wrap("retry job", err)
	}
	if _, err := tx.ExecContext(ctx, `SELECT pg_notify($1, $2)`, JobsChannel, id); err != nil {
		return wrap("retry job", err)
	}
	if err := tx.Commit(); err != nil {
		return wrap("retry job", err)
	}
	_, err = s.AddEvent(ctx, &JobEvent{JobID: id, Kind: "job", StepIdx: -1, Message: "Retry requested",
		Data: mustJSON(map[string]string{"status": "queued"})})
	return err
}

// RequestCancel asks the runner to stop a job; a queued job is cancelled at once.
func (s *Store) RequestCancel(ctx context.Context, id string) error {
	var status JobStatus
	err := s.db(ctx).GetContext(ctx, &status, `UPDATE jobs SET cancel_requested = true WHERE id = $1 RETURNING status`, id)
	if err != nil {
		return wrap("cancel job "+id, err)
	}
	if status == JobQueued {
		return s.FinishJob(ctx, id, JobCancelled, "cancelled before it started")
	}
	return nil
}

// JobByID returns one job.
func (s *Store) JobByID(ctx context.Context, id string) (*Job, error) {
	j := &Job{}
	err := s.db(ctx).GetContext(ctx, j, `SELECT * FROM jobs WHERE id = $1`, id)
	return j, wrap("job "+id, err)
}

// ListJobs returns the newest jobs, of one region when regionID is set.
func (s *Store) ListJobs(ctx context.Context, regionID string, limit int) ([]Job, error) {
	js, _, err := s.ListJobsPage(ctx, regionID, limit, 0)
	return js, err
}

// ListJobsPage returns a page of jobs, newest first (of one region when regionID is
// set), and how many there are.
func (s *Store) ListJobsPage(ctx context.Context, regionID string, limit, offset int) ([]Job, int, error) {
	var js []Job
	err := s.db(ctx).SelectContext(ctx, &js, `SELECT id, kind, title, region_id, status, error, attempts, created_by, created_at, started_at, finished_at
		FROM jobs WHERE $1 = '' OR region_id = $1 ORDER BY created_at DESC LIMIT $2 OFFSET $3`, regionID, limit, offset)
	if err != nil {
		return nil, 0, wrap("list jobs", err)
	}
	var n int
	if err := s.db(ctx).GetContext(ctx, &n, `SELECT count(*) FROM jobs WHERE $1 = '' OR region_id = $1`, regionID); err != nil {
		return nil, 0, wrap("count jobs", err)
	}
	return js, n, nil
}

// ActiveJob returns the region's newest unfinished job of a kind ("" for any kind).
func (s *Store) ActiveJob(ctx context.Context, regionID, kind string) (*Job, error) {
	j := &Job{}
	err := s.db(ctx).GetContext(ctx, j, `SELECT * FROM jobs WHERE region_id = $1 AND ($2 = '' OR kind = $2)
		AND status IN ('queued', 'running') ORDER BY created_at DESC LIMIT 1`, regionID, kind)
	return j, wrap("active job", err)
}

// ActiveJobOfKind returns the newest unfinished job of a kind, whatever its region (a
// job that acts on every region, such as a reconcile).
func (s *Store) ActiveJobOfKind(ctx context.Context, kind string) (*Job, error) {
	j := &Job{}
	err := s.DB.GetContext(ctx, j, `SELECT * FROM jobs WHERE kind = $1 AND status IN ('queued', 'running') ORDER BY created_at DESC LIMIT 1`, kind)
	return j, wrap("active job of kind "+kind, err)
}

// LatestJob returns the region's newest job of a kind.
func (s *Store) LatestJob(ctx context.Context, regionID, kind string) (*Job, error) {
	j := &Job{}
	err := s.db(ctx).GetContext(ctx, j, `SELECT * FROM jobs WHERE region_id = $1 AND kind = $2 ORDER BY created_at DESC LIMIT 1`, regionID, kind)
	return j, wrap("latest job", err)
}

// JobSteps returns a job's steps in order.
func (s *Store) JobSteps(ctx context.Context, jobID string) ([]JobStep, error) {
	var st []JobStep
	err := s.db(ctx).SelectContext(ctx, &st, `SELECT * FROM job_steps WHERE job_id = $1 ORDER BY idx`, jobID)
	return st, wrap("job steps", err)
}

// SetStep changes a step's status, message and wait, and emits the step event.
func (s *Store) SetStep(ctx context.Context, jobID string, idx int, status StepStatus, message, wait string) (*JobStep, error) {
	st := &JobStep{}
	err := s.db(ctx).GetContext(ctx, st, `UPDATE job_steps SET status = $3, message = $4, wait = $5,
		started_at = CASE WHEN $3 = 'running' AND (started_at IS NULL OR status <> 'running') THEN now() ELSE started_at END,
		finished_at = CASE WHEN $3 IN ('done', 'failed', 'skipped') THEN now() WHEN $3 = 'running' THEN NULL ELSE finished_at END
		WHERE job_id = $1 AND idx = $2 RETURNING *`, jobID, idx, status, truncate(message, maxMessage), truncate(wait, 500))
	if err != nil {
		return nil, wrap("set step", err)
	}
	_, err = s.AddEvent(ctx, &JobEvent{JobID: jobID, Kind: "step", StepIdx: idx, Level: levelOf(status), Message: message, Data: mustJSON(st)})
	return st, err
}

// AddEvent persists an event and publishes it on EventsChannel in the same statement.
func (s *Store) AddEvent(ctx context.Context, e *JobEvent) (int64, error) {
	return s.insertEvent(ctx, "WITH ", nil, e)
}

// eventLocks serialise the event inserts of a job in this process (a job runs in one
// process at a time, under its lease), so that a job's event ids are committed in
// order: a reader that saw id N never finds a smaller id committed later, which the
// feeds (after=ID) and the WebSocket replay depend on.
var eventLocks [64]sync.Mutex

// insertEvent inserts e, after the data-modifying CTEs of prefix (which ends in
// "WITH " or ", " and whose extra arguments start at $8); the insert happens only when
// prefix's CTE named fin returns a row, if there is one.
func (s *Store) insertEvent(ctx context.Context, prefix string, extra []any, e *JobEvent) (int64, error) {
	orDefault(&e.Level, "info")
	if len(e.Data) == 0 {
		e.Data = json.RawMessage(`{}`)
	}
	e.Message = truncate(e.Message, maxMessage)
	from := ""
	if extra != nil {
		from = " FROM fin"
	}
	h := fnv.New32a()
	h.Write([]byte(e.JobID))
	mu := &eventLocks[h.Sum32()%uint32(len(eventLocks))]
	mu.Lock()
	defer mu.Unlock()
	args := append([]any{e.JobID, e.Kind, e.StepIdx, e.Level, e.Message, []byte(e.Data), EventsChannel}, extra...)
	err := s.db(ctx).GetContext(ctx, e, prefix+`ins AS (
			INSERT INTO job_events (job_id, kind, step_idx, level, message, data)
			SELECT $1::text, $2::text, $3::int, $4::text, $5::text, $6::jsonb`+from+` RETURNING *)
		SELECT ins.* FROM ins CROSS JOIN LATERAL (SELECT pg_notify($7, json_build_object('id', ins.id, 'job_id', ins.job_id,
			'created_at', ins.created_at, 'kind', ins.kind, 'step_idx', ins.step_idx, 'level', ins.level,
			'message', ins.message, 'data', ins.data)::text)) AS notified`, args...)
	if err != nil {
		return 0, wrap("add event", err)
	}
	return e.ID, nil
}

// JobEvents returns the events of a job after an id, oldest first.
func (s *Store) JobEvents(ctx context.Context, jobID string, after int64, limit int) ([]JobEvent, error) {
	var es []JobEvent
	err := s.db(ctx).SelectContext(ctx, &es, `SELECT * FROM job_events WHERE job_id = $1 AND id > $2 ORDER BY id LIMIT $3`, jobID, after, limit)
	return es, wrap("job events", err)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut on a rune boundary.
	for n > 0 && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n] + "…"
}

func mustJSON(v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return raw
}

// SetJobRegion attaches a job to the region it created.
func (s *Store) SetJobRegion(ctx context.Context, jobID, regionID string) error {
	_, err := s.db(ctx).ExecContext(ctx, `UPDATE jobs SET region_id = $2 WHERE id = $1`, jobID, regionID)
	return wrap("set job region", err)
}

// LatestJobWithHistory returns the region's newest job of any of the kinds with its
// steps and its first maxEvents events (see jobWithHistory).
func (s *Store) LatestJobWithHistory(ctx context.Context, regionID string, kinds []string, maxEvents int) (*Job, []JobStep, []JobEvent, error) {
	return s.jobWithHistory(ctx, "latest job", `j.region_id = $2 AND j.kind = ANY($3) ORDER BY j.created_at DESC LIMIT 1`,
		maxEvents, regionID, pq.StringArray(kinds))
}

// JobWithHistory returns a job with its steps and its first maxEvents events (see
// jobWithHistory).
func (s *Store) JobWithHistory(ctx context.Context, id string, maxEvents int) (*Job, []JobStep, []JobEvent, error) {
	return s.jobWithHistory(ctx, "job "+id, `j.id = $2`, maxEvents, id)
}

// jobWithHistory reads the job that where selects (its arguments are $2 on; $1 is
// maxEvents), its steps and its first maxEvents events in one statement, so in one snapshot: a
// job read as running never comes with the event that ended it, which a reader that
// skips the events it already has would then never be sent again. PostgreSQL builds the
// steps' and events' JSON, which is decoded as the NOTIFY payloads are.
func (s *Store) jobWithHistory(ctx context.Context, what, where string, maxEvents int, args ...any) (*Job, []JobStep, []JobEvent, error) {
	var row struct {
		Job
		StepsJSON  []byte `db:"steps_json"`
		EventsJSON []byte `db:"events_json"`
	}
	err := s.db(ctx).GetContext(ctx, &row, `SELECT j.*,
		(SELECT coalesce(json_agg(st ORDER BY st.idx), '[]') FROM job_steps st WHERE st.job_id = j.id) AS steps_json,
		(SELECT coalesce(json_agg(ev ORDER BY ev.id), '[]') FROM (SELECT * FROM job_events e WHERE e.job_id = j.id ORDER BY e.id LIMIT $1) ev) AS events_json
		FROM jobs j WHERE `+where, append([]any{maxEvents}, args...)...)
	if err != nil {
		return nil, nil, nil, wrap(what, err)
	}
	var steps []JobStep
	var events []JobEvent
	if err := json.Unmarshal(row.StepsJSON, &steps); err != nil {
		return nil, nil, nil, fmt.Errorf("store: %s steps: %w", what, err)
	}
	if err := json.Unmarshal(row.EventsJSON, &events); err != nil {
		return nil, nil, nil, fmt.Errorf("store: %s events: %w", what, err)
	}
	for i := range steps {
		steps[i].JobID = row.Job.ID
	}
	j := row.Job
	return &j, steps, events, nil
}

// LatestJobOf returns the region's newest job of any of the kinds.
func (s *Store) LatestJobOf(ctx context.Context, regionID string, kinds []string) (*Job, error) {
	j := &Job{}
	err := s.db(ctx).GetContext(ctx, j, `SELECT * FROM jobs WHERE region_id = $1 AND kind = ANY($2) ORDER BY created_at DESC LIMIT 1`,
		regionID, pq.StringArray(kinds))
	return j, wrap("latest job", err)
}
