package handlers

import (
	"github.com/gofiber/fiber/v2"

	"runr.dev/console/views"
)

// APIGetSettings is GET /api/settings.
func (h *Handlers) APIGetSettings(c *fiber.Ctx) error {
	base, err := h.Store.BaseDomain(ctx(c))
	if err != nil {
		return h.Fail(c, err)
	}
	return c.JSON(fiber.Map{"data": fiber.Map{"base_domain": base}})
}

// APIPatchSettings is PATCH /api/settings with base_domain.
func (h *Handlers) APIPatchSettings(c *fiber.Ctx) error {
	var in struct {
		BaseDomain *string `json:"base_domain"`
	}
	if err := bodyMap(c, &in); err != nil {
		return h.Fail(c, err)
	}
	if in.BaseDomain != nil {
		if err := h.Kube.SetBaseDomain(ctx(c), h.actor(c), *in.BaseDomain); err != nil {
			return h.Fail(c, err)
		}
	}
	return h.APIGetSettings(c)
}

// PlatformPage shows the platform settings.
func (h *Handlers) PlatformPage(c *fiber.Ctx) error {
	base, err := h.Store.BaseDomain(ctx(c))
	if err != nil {
		return h.Fail(c, err)
	}
	return Render(c, fiber.StatusOK, views.Platform(h.page(c, "Platform", "platform"), views.Form{Values: map[string]string{"base_domain": base}}))
}

// PlatformForm saves the base domain.
func (h *Handlers) PlatformForm(c *fiber.Ctx) error {
	if fe := inputErrors(c, "base_domain"); fe != nil {
		return Render(c, fiber.StatusUnprocessableEntity, views.Platform(h.page(c, "Platform", "platform"), views.Form{Values: map[string]string{}, Errors: fe}))
	}
	v := c.FormValue("base_domain")
	if err := h.Kube.SetBaseDomain(ctx(c), h.actor(c), v); err != nil {
		fe, _, ok := h.refusal(c, err)
		if !ok {
			return h.Fail(c, err)
		}
		return Render(c, fiber.StatusUnprocessableEntity, views.Platform(h.page(c, "Platform", "platform"), views.Form{Values: map[string]string{"base_domain": v}, Errors: fe}))
	}
	h.flash(c, "Base domain saved; the regions that follow it are being updated.")
	return redirect(c, "/platform")
}

// APICompleteDomainMigration is POST /api/knative-regions/{id}/complete-domain-migration.
func (h *Handlers) APICompleteDomainMigration(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	j, err := h.Kube.CompleteDomainMigration(ctx(c), h.actor(c), r)
	return h.Accepted(c, j, err)
}
