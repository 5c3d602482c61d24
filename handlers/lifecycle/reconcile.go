package lifecycle

import (
	"github.com/gofiber/fiber/v2"

	"runr.dev/console/handlers"
	"runr.dev/console/ops/reconcile"
)

// APIReconcilePlan is GET /api/reconcile?region=NAME&step=STEP: the dry run, per region
// and step what a reconcile would change (nothing is changed).
func (h *Handlers) APIReconcilePlan(c *fiber.Ctx) error {
	plan, err := h.Ops.Reconcile.Plan(c.UserContext(), h.Actor(c), reconcile.Input{Region: c.Query("region"), Step: c.Query("step")})
	return handlers.ListAnswer(h.Handlers, c, plan, err)
}

// APIReconcile is POST /api/reconcile with {"region": …, "step": …} (both optional): 202
// with the reconcile job.
func (h *Handlers) APIReconcile(c *fiber.Ctx) error {
	var in reconcile.Input
	if err := handlers.OptionalBody(c, &in); err != nil {
		return h.Fail(c, err)
	}
	j, err := h.Ops.Reconcile.Start(c.UserContext(), h.Actor(c), in)
	return h.Accepted(c, j, err)
}
