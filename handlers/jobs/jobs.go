package jobs

import (
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"
	"runr.dev/console/handlers"
	"runr.dev/console/store"
	"runr.dev/console/views"
)

// JobPage shows one job live.
func (h *Handlers) JobPage(c *fiber.Ctx) error {
	d, err := h.JobData(c.UserContext(), handlers.Who(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	d.OnJobPage = true
	return handlers.Render(c, fiber.StatusOK, views.JobPage(h.Page(c, d.Job.Title, "regions"), d.View()))
}

// RetryJobForm queues a failed job again; it continues where it stopped.
func (h *Handlers) RetryJobForm(c *fiber.Ctx) error {
	if err := h.Store.RetryJob(c.UserContext(), c.Params("id")); err != nil {
		return h.Fail(c, err)
	}
	h.Ops.Engine.Wake()
	return handlers.Redirect(c, handlers.RefererPath(c, "/jobs/"+c.Params("id")))
}

// CancelJobForm asks the runner to stop a job.
func (h *Handlers) CancelJobForm(c *fiber.Ctx) error {
	if err := h.Store.RequestCancel(c.UserContext(), c.Params("id")); err != nil {
		return h.Fail(c, err)
	}
	return handlers.Redirect(c, handlers.RefererPath(c, "/jobs/"+c.Params("id")))
}

// APIGetJob is GET /api/jobs/{id}.
func (h *Handlers) APIGetJob(c *fiber.Ctx) error {
	d, err := h.JobData(c.UserContext(), handlers.Who(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	return c.JSON(fiber.Map{"data": JobJSON{Job: d.Job, Steps: d.Steps, Progress: d.Progress(), Wait: d.CurrentWait()}})
}

// APIJobEvents is GET /api/jobs/{id}/events?after=ID&wait=SECONDS: the events after an
// id; with wait, it holds the request until the next event (long polling).
func (h *Handlers) APIJobEvents(c *fiber.Ctx) error {
	id := c.Params("id")
	after := int64(c.QueryInt("after", 0))
	wait := c.QueryInt("wait", 0)
	if wait < 0 || wait > 60 {
		return handlers.Invalid(c, handlers.FieldErrors{"wait": "Use 0 to 60 seconds."})
	}
	j, err := h.Store.JobByID(c.UserContext(), id)
	if err != nil {
		return h.Fail(c, err)
	}
	var done <-chan struct{}
	var stop func()
	if wait > 0 && h.Hub != nil {
		// Subscribe before reading, so that no event falls between the read and the wait.
		done, stop = h.Hub.Wait(id)
		defer stop()
	}
	es, err := h.Store.JobEvents(c.UserContext(), id, after, handlers.MaxEvents)
	if err != nil {
		return h.Fail(c, err)
	}
	if len(es) == 0 && done != nil && !j.Done() {
		select {
		case <-done:
		case <-time.After(time.Duration(wait) * time.Second):
		}
		// The job before its events: a job read as ended has all its events committed
		// (store.FinishJob), so a feed that stops at an empty answer misses none.
		if j, err = h.Store.JobByID(c.UserContext(), id); err != nil {
			return h.Fail(c, err)
		}
		if es, err = h.Store.JobEvents(c.UserContext(), id, after, handlers.MaxEvents); err != nil {
			return h.Fail(c, err)
		}
	}
	if es == nil {
		es = []store.JobEvent{}
	}
	return c.JSON(fiber.Map{"data": es, "job_status": j.Status})
}

// APIRetryJob is POST /api/jobs/{id}/retry.
func (h *Handlers) APIRetryJob(c *fiber.Ctx) error {
	if err := h.Store.RetryJob(c.UserContext(), c.Params("id")); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return handlers.Unprocessable(c, "Only a failed or cancelled job can be retried.")
		}
		return h.Fail(c, err)
	}
	h.Ops.Engine.Wake()
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"job_id": c.Params("id")})
}

// APICancelJob is POST /api/jobs/{id}/cancel.
func (h *Handlers) APICancelJob(c *fiber.Ctx) error {
	if err := h.Store.RequestCancel(c.UserContext(), c.Params("id")); err != nil {
		return h.Fail(c, err)
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"job_id": c.Params("id")})
}

// JobsPage is the job history, of one region with ?region=ID.
func (h *Handlers) JobsPage(c *fiber.Ctx) error {
	l := views.JobList{RegionID: c.Query("region")}
	if l.RegionID != "" {
		r, err := h.Store.RegionByID(c.UserContext(), l.RegionID)
		if err != nil {
			return h.Fail(c, err)
		}
		l.RegionName = r.Name
	}
	page, offset := handlers.PageParam(c, jobsPageSize)
	js, n, err := h.Store.ListJobsPage(c.UserContext(), l.RegionID, jobsPageSize, offset)
	if err != nil {
		return h.Fail(c, err)
	}
	l.Jobs, l.Page, l.Pages = jobRows(js), page, handlers.Pages(n, jobsPageSize)
	return handlers.Render(c, fiber.StatusOK, views.JobsPage(h.Page(c, "Jobs", "jobs"), l))
}

// APIListJobs is GET /api/jobs?region_id=ID&page=N.
func (h *Handlers) APIListJobs(c *fiber.Ctx) error {
	page, offset := handlers.PageParam(c, jobsPageSize)
	js, n, err := h.Store.ListJobsPage(c.UserContext(), c.Query("region_id"), jobsPageSize, offset)
	if err != nil {
		return h.Fail(c, err)
	}
	if js == nil {
		js = []store.Job{}
	}
	return c.JSON(fiber.Map{"data": js, "meta": fiber.Map{"page": page, "per_page": jobsPageSize, "total": n}})
}

// Handlers are the pages and endpoints of jobs: the list, one job with its live log, and
// retrying or cancelling it.
type Handlers struct{ *handlers.Handlers }

// New builds the jobs' handlers.
func New(h *handlers.Handlers) *Handlers { return &Handlers{Handlers: h} }

// JobJSON is a job with its steps, for the API.
type JobJSON struct {
	*store.Job
	Steps    []store.JobStep `json:"steps"`
	Progress int             `json:"progress"`
	Wait     string          `json:"wait"`
}

const jobsPageSize = 50

// jobRows are the lines of the job history.
func jobRows(js []store.Job) []views.JobRow {
	out := make([]views.JobRow, len(js))
	for i, j := range js {
		out[i] = views.JobRow{ID: j.ID, Title: j.Title, Status: string(j.Status), Failed: j.Status == store.JobFailed, Error: j.Error,
			StartedAt: j.StartedAt, FinishedAt: j.FinishedAt, CreatedBy: j.CreatedBy}
	}
	return out
}
