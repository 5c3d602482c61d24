package lifecycle

import (
	"github.com/gofiber/fiber/v2"

	"runr.dev/console/handlers"
	"runr.dev/console/ops"
	"runr.dev/console/problem"
	"runr.dev/console/store"
)

// APICheckRegion is POST /api/knative-regions/check: step 1's checklist, creating nothing.
func (h *Handlers) APICheckRegion(c *fiber.Ctx) error {
	var in ops.CheckInput
	if err := handlers.BodyMap(c, &in); err != nil {
		return h.Fail(c, err)
	}
	chk, err := h.Ops.CheckRegion(c.UserContext(), in)
	return handlers.DataAnswer(h.Handlers, c, fiber.StatusOK, chk, err)
}

// APISetupStart is POST /api/registry-setup/start: 202 with the setup token; the
// region and its registry are set up in the background.
func (h *Handlers) APISetupStart(c *fiber.Ctx) error {
	var in ops.SetupInput
	if err := handlers.BodyMap(c, &in); err != nil {
		return h.Fail(c, err)
	}
	st, err := h.Ops.StartSetup(c.UserContext(), h.Actor(c), in)
	if err != nil {
		return h.Fail(c, err)
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"setup_token": st.Token, "setup_id": st.ID, "job_id": *st.JobID})
}

// SetupStatus is the status of a setup, from its job.
type SetupStatus struct {
	Status   string  `json:"status"` // pending | installing | ready | error
	Phase    string  `json:"phase"`
	RegionID *string `json:"region_id"`
	SetupID  string  `json:"setup_id"`
	JobID    string  `json:"job_id"`
	Error    string  `json:"error,omitempty"`
	Progress int     `json:"progress"`
	Wait     string  `json:"wait,omitempty"`
}

// APISetupStatus is GET /api/registry-setup/{token}/status.
func (h *Handlers) APISetupStatus(c *fiber.Ctx) error {
	st, err := h.Store.SetupByToken(c.UserContext(), c.Params("token"))
	if err != nil {
		return h.Fail(c, err)
	}
	d, err := h.JobData(c.UserContext(), handlers.Who(c), *st.JobID)
	if err != nil {
		return h.Fail(c, err)
	}
	out := SetupStatus{SetupID: st.ID, JobID: d.Job.ID, RegionID: st.RegionID, Progress: d.Progress(), Wait: d.CurrentWait()}
	switch d.Job.Status {
	case store.JobQueued:
		out.Status, out.Phase = "pending", "queued"
	case store.JobRunning:
		out.Status = "installing"
	case store.JobSucceeded:
		out.Status, out.Phase = "ready", "done"
	default:
		out.Status, out.Error = "error", d.Job.Error
	}
	if out.Phase == "" {
		for _, s := range d.Steps {
			if s.Status == store.StepRunning || s.Status == store.StepFailed || s.Status == store.StepPending {
				out.Phase = s.Name
				break
			}
		}
	}
	if out.RegionID == nil && d.Job.RegionID != nil {
		out.RegionID = d.Job.RegionID
	}
	return c.JSON(out)
}

// APISetupRetry is POST /api/registry-setup/{token}/retry with the same body as start.
func (h *Handlers) APISetupRetry(c *fiber.Ctx) error {
	st, err := h.Store.SetupByToken(c.UserContext(), c.Params("token"))
	if err != nil {
		return h.Fail(c, err)
	}
	var in ops.SetupInput
	if err := handlers.BodyMap(c, &in); err != nil {
		return h.Fail(c, err)
	}
	j, err := h.Ops.RetrySetup(c.UserContext(), h.Actor(c), st, in)
	if err != nil {
		return h.Fail(c, err)
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"setup_token": st.Token, "setup_id": st.ID, "job_id": j.ID})
}

// APICreateRegion is POST /api/knative-regions: 201 with the region and its jobs.
func (h *Handlers) APICreateRegion(c *fiber.Ctx) error {
	var in ops.RegionInput
	if err := handlers.BodyMap(c, &in); err != nil {
		return h.Fail(c, err)
	}
	r, jobs, err := h.Ops.CreateRegion(c.UserContext(), h.Actor(c), in)
	if err != nil {
		return h.Fail(c, err)
	}
	r, err = h.Store.RegionByID(c.UserContext(), r.ID)
	if err != nil {
		return h.Fail(c, err)
	}
	base, _ := h.Store.BaseDomain(c.UserContext())
	j, err := h.RegionJSON(c, r, base)
	if err != nil {
		return h.Fail(c, err)
	}
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"data": j, "jobs": jobs})
}

// APIKubeconfig is GET /api/knative-regions/{id}/kubeconfig: the only way the stored
// kubeconfig leaves the console (its own permission).
func (h *Handlers) APIKubeconfig(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(c.UserContext(), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	if r.SecretError != "" {
		// An empty file would look like a kubeconfig that lost its contents.
		return h.Fail(c, &problem.Conflict{Reason: "The kubeconfig of " + r.Name + " cannot be read: " + r.SecretError})
	}
	h.Log.Info("kubeconfig downloaded", "region", r.Name, "user", handlers.Who(c).User.Email)
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="`+r.Name+`.kubeconfig.yaml"`)
	c.Type("yaml")
	return c.SendString(r.Kubeconfig)
}
