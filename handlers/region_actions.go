package handlers

import (
	"github.com/gofiber/fiber/v2"

	"runr.dev/console/store"
)

// RegionAnswer answers with the region, and the job that applies a change (if any).
func (h *Handlers) RegionAnswer(c *fiber.Ctx, id string, j *store.Job) error {
	r, err := h.Store.RegionByID(ctx(c), id)
	if err != nil {
		return h.Fail(c, err)
	}
	base, err := h.Store.BaseDomain(ctx(c))
	if err != nil {
		return h.Fail(c, err)
	}
	data, err := h.RegionJSON(c, r, base)
	if err != nil {
		return h.Fail(c, err)
	}
	out := fiber.Map{"data": data}
	if j != nil {
		out["job_id"] = j.ID
	}
	return c.JSON(out)
}
