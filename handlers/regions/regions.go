package regions

import (
	"github.com/gofiber/fiber/v2"
	"runr.dev/console/handlers"
	"runr.dev/console/ops"
	"runr.dev/console/store"
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

// ModeForm sets the region mode from the General tab (platform administrators).
func (h *Handlers) ModeForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	mode := store.RegionMode(c.FormValue("region_mode"))
	_, err = h.Ops.UpdateRegion(c.UserContext(), h.Actor(c), r, ops.RegionUpdate{RegionMode: &mode})
	return h.FormOutcome(c, r, "general", map[string]string{"region_mode": string(mode)}, err, "Region mode saved.")
}

// Handlers are the pages and endpoints of the regions themselves: the list, a region's
// settings, status, certificate, monitoring, its components' forms and its removal.
type Handlers struct{ *handlers.Handlers }

// New builds the regions' handlers.
func New(h *handlers.Handlers) *Handlers { return &Handlers{Handlers: h} }
