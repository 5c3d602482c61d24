package regions

import (
	"github.com/gofiber/fiber/v2"

	"runr.dev/console/handlers"
)

// APIGetRegion is GET /api/knative-regions/{id}.
func (h *Handlers) APIGetRegion(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(c.UserContext(), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	base, err := h.BaseDomain(c)
	if err != nil {
		return h.Fail(c, err)
	}
	j, err := h.RegionJSON(c, r, base)
	return handlers.DataAnswer(h.Handlers, c, fiber.StatusOK, j, err)
}

// Handlers are the pages and endpoints of the regions themselves: the list, a region's
// settings, status, certificate, monitoring, its components' forms and its removal.
type Handlers struct{ *handlers.Handlers }

// New builds the regions' handlers.
func New(h *handlers.Handlers) *Handlers { return &Handlers{Handlers: h} }

// CheckNowForm runs the region's status check now.
func (h *Handlers) CheckNowForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	h.Ops.Status.CheckSoon(r.ID)
	return h.FormDone(c, r, "general", "Status check started; the page shows its result in a few seconds.")
}

// APICheckNow is POST /api/knative-regions/{id}/check-status.
func (h *Handlers) APICheckNow(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(c.UserContext(), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	h.Ops.Status.CheckSoon(r.ID)
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"region_id": r.ID})
}
