package handlers

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/ops"
	"runr.dev/console/ops/isolation"
	"runr.dev/console/ops/knative"
	"runr.dev/console/ops/redis"
	"runr.dev/console/store"
	"runr.dev/console/views"
)

// maxEvents is how many events a page or a feed returns at once.
const maxEvents = 5000

// JobData loads what the live view of a job needs.
func (h *Handlers) JobData(ctx context.Context, p *Principal, id string) (JobData, error) {
	j, steps, events, err := h.Store.JobWithHistory(ctx, id, maxEvents)
	if err != nil {
		return JobData{}, err
	}
	return h.jobDataOf(ctx, p, j, steps, events), nil
}

// jobDataOf is JobData of a job, its steps and its events already read.
func (h *Handlers) jobDataOf(ctx context.Context, p *Principal, j *store.Job, steps []store.JobStep, events []store.JobEvent) JobData {
	id := j.ID
	d := JobData{Job: j, Steps: steps, Events: events}
	d.CanRetry = p.Can(store.PermRegionsManage)
	d.NextURL, d.NextLabel = nextAfter(j)
	if j.Kind == ops.KindRegistrySetup && d.CanRetry && p.Can(store.PermRegistryManage) {
		// A failed setup's fields can be changed on its page before a retry.
		if st, err := h.Store.SetupByJob(ctx, id); err == nil {
			d.SetupURL = "/regions/setups/" + st.Token
		}
	}
	return d
}

// nextAfter is where the wizard continues after a job.
func nextAfter(j *store.Job) (string, string) {
	if j.Region() == "" {
		return "", ""
	}
	switch j.Kind {
	case ops.KindRegistrySetup, knative.KindInstallOperator, knative.KindInstallServing, redis.KindRedisInstall, isolation.KindSandboxInstall:
		return "/regions/" + j.Region() + "/wizard", "Continue"
	}
	return "/regions/" + j.Region(), "Back to the region"
}

// JobPage shows one job live.
func (h *Handlers) JobPage(c *fiber.Ctx) error {
	d, err := h.JobData(ctx(c), Who(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	d.OnJobPage = true
	return Render(c, fiber.StatusOK, views.JobPage(h.Page(c, d.Job.Title, "regions"), d.View()))
}

// RetryJobForm queues a failed job again; it continues where it stopped.
func (h *Handlers) RetryJobForm(c *fiber.Ctx) error {
	if err := h.Store.RetryJob(ctx(c), c.Params("id")); err != nil {
		return h.Fail(c, err)
	}
	h.Ops.Engine.Wake()
	return Redirect(c, refererPath(c, "/jobs/"+c.Params("id")))
}

// CancelJobForm asks the runner to stop a job.
func (h *Handlers) CancelJobForm(c *fiber.Ctx) error {
	if err := h.Store.RequestCancel(ctx(c), c.Params("id")); err != nil {
		return h.Fail(c, err)
	}
	return Redirect(c, refererPath(c, "/jobs/"+c.Params("id")))
}

// JobJSON is a job with its steps, for the API.
type JobJSON struct {
	*store.Job
	Steps    []store.JobStep `json:"steps"`
	Progress int             `json:"progress"`
	Wait     string          `json:"wait"`
}

// APIGetJob is GET /api/jobs/{id}.
func (h *Handlers) APIGetJob(c *fiber.Ctx) error {
	d, err := h.JobData(ctx(c), Who(c), c.Params("id"))
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
		return Invalid(c, FieldErrors{"wait": "Use 0 to 60 seconds."})
	}
	j, err := h.Store.JobByID(ctx(c), id)
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
	es, err := h.Store.JobEvents(ctx(c), id, after, maxEvents)
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
		if j, err = h.Store.JobByID(ctx(c), id); err != nil {
			return h.Fail(c, err)
		}
		if es, err = h.Store.JobEvents(ctx(c), id, after, maxEvents); err != nil {
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
	if err := h.Store.RetryJob(ctx(c), c.Params("id")); err != nil {
		if isNotFoundErr(err) {
			return Unprocessable(c, "Only a failed or cancelled job can be retried.")
		}
		return h.Fail(c, err)
	}
	h.Ops.Engine.Wake()
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"job_id": c.Params("id")})
}

// APICancelJob is POST /api/jobs/{id}/cancel.
func (h *Handlers) APICancelJob(c *fiber.Ctx) error {
	if err := h.Store.RequestCancel(ctx(c), c.Params("id")); err != nil {
		return h.Fail(c, err)
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"job_id": c.Params("id")})
}

const jobsPageSize = 50

// JobsPage is the job history, of one region with ?region=ID.
func (h *Handlers) JobsPage(c *fiber.Ctx) error {
	l := views.JobList{RegionID: c.Query("region")}
	if l.RegionID != "" {
		r, err := h.Store.RegionByID(ctx(c), l.RegionID)
		if err != nil {
			return h.Fail(c, err)
		}
		l.RegionName = r.Name
	}
	page, offset := pageParam(c, jobsPageSize)
	js, n, err := h.Store.ListJobsPage(ctx(c), l.RegionID, jobsPageSize, offset)
	if err != nil {
		return h.Fail(c, err)
	}
	l.Jobs, l.Page, l.Pages = jobRows(js), page, pages(n, jobsPageSize)
	return Render(c, fiber.StatusOK, views.JobsPage(h.Page(c, "Jobs", "jobs"), l))
}

// APIListJobs is GET /api/jobs?region_id=ID&page=N.
func (h *Handlers) APIListJobs(c *fiber.Ctx) error {
	page, offset := pageParam(c, jobsPageSize)
	js, n, err := h.Store.ListJobsPage(ctx(c), c.Query("region_id"), jobsPageSize, offset)
	if err != nil {
		return h.Fail(c, err)
	}
	if js == nil {
		js = []store.Job{}
	}
	return c.JSON(fiber.Map{"data": js, "meta": fiber.Map{"page": page, "per_page": jobsPageSize, "total": n}})
}
