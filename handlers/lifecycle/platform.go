package lifecycle

import (
	"github.com/gofiber/fiber/v2"

	"runr.dev/console/handlers"
	"runr.dev/console/ops/reconcile"
	"runr.dev/console/store"
	"runr.dev/console/views"
)

// APIGetSettings is GET /api/settings.
func (h *Handlers) APIGetSettings(c *fiber.Ctx) error {
	vals, err := h.platformValues(c)
	if err != nil {
		return h.Fail(c, err)
	}
	return c.JSON(fiber.Map{"data": fiber.Map{"base_domain": vals["base_domain"], "image_mirror": vals["image_mirror"]}})
}

// platformValues are the platform settings as the form shows them.
func (h *Handlers) platformValues(c *fiber.Ctx) (map[string]string, error) {
	base, err := h.Store.BaseDomain(c.UserContext())
	if err != nil {
		return nil, err
	}
	mirror, err := h.Ops.ConsoleImageMirror(c.UserContext())
	if err != nil {
		return nil, err
	}
	return map[string]string{"base_domain": base, "image_mirror": mirror}, nil
}

// APIPatchSettings is PATCH /api/settings with base_domain and image_mirror.
func (h *Handlers) APIPatchSettings(c *fiber.Ctx) error {
	var in reconcile.PlatformSettingsInput
	if err := handlers.BodyMap(c, &in); err != nil {
		return h.Fail(c, err)
	}
	if err := h.Ops.Reconcile.UpdatePlatformSettings(c.UserContext(), h.Actor(c), in); err != nil {
		return h.Fail(c, err)
	}
	return h.APIGetSettings(c)
}

// PlatformPage shows the platform settings.
func (h *Handlers) PlatformPage(c *fiber.Ctx) error {
	vals, err := h.platformValues(c)
	if err != nil {
		return h.Fail(c, err)
	}
	return handlers.Render(c, fiber.StatusOK, views.Platform(h.Page(c, "Platform", "platform"), views.Form{Values: vals}))
}

// PlatformForm saves the base domain and the image mirror.
func (h *Handlers) PlatformForm(c *fiber.Ctx) error {
	if fe := handlers.InputErrors(c, "base_domain", "image_mirror"); fe != nil {
		return handlers.Render(c, fiber.StatusUnprocessableEntity, views.Platform(h.Page(c, "Platform", "platform"), views.Form{Values: map[string]string{}, Errors: fe}))
	}
	// Each section of the page posts its own field; a field not posted stays as it is.
	vals, err := h.platformValues(c)
	if err != nil {
		return h.Fail(c, err)
	}
	var in reconcile.PlatformSettingsInput
	flash := "Base domain saved; the regions that follow it are being updated."
	posted := c.Request().PostArgs()
	if posted.Has("base_domain") {
		vals["base_domain"] = c.FormValue("base_domain")
		in.BaseDomain = store.Ptr(vals["base_domain"])
	}
	if posted.Has("image_mirror") {
		vals["image_mirror"] = c.FormValue("image_mirror")
		in.ImageMirror = store.Ptr(vals["image_mirror"])
		flash = "Image mirror saved: the regions' next installs pull through it; runr reconcile --step image-mirror moves what runs."
	}
	if err := h.Ops.Reconcile.UpdatePlatformSettings(c.UserContext(), h.Actor(c), in); err != nil {
		fe, _, ok := h.Refusal(c, err)
		if !ok {
			return h.Fail(c, err)
		}
		return handlers.Render(c, fiber.StatusUnprocessableEntity, views.Platform(h.Page(c, "Platform", "platform"), views.Form{Values: vals, Errors: fe}))
	}
	h.Flash(c, flash)
	return handlers.Redirect(c, "/platform")
}

// APICompleteDomainMigration is POST /api/knative-regions/{id}/complete-domain-migration.
func (h *Handlers) APICompleteDomainMigration(c *fiber.Ctx) error {
	return handlers.RegionActionAPI(h.Handlers, c, h.Ops.Domains.CompleteDomainMigration)
}
