package handlers

import (
	"regexp"
	"strings"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/store"
	"runr.dev/console/views"
)

var domainRe = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$`)

// ValidateDomain checks a base domain ("" clears it).
func ValidateDomain(d string) string {
	if d == "" {
		return ""
	}
	if len(d) > 200 || !domainRe.MatchString(d) {
		return "Use a domain name such as functions.example.com (lowercase, without a scheme or a trailing dot)."
	}
	return ""
}

// setBaseDomain saves the platform's base domain and brings the regions that follow it along.
func (h *Handlers) setBaseDomain(c *fiber.Ctx, next string) (FieldErrors, error) {
	next = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(next)), ".")
	if m := ValidateDomain(next); m != "" {
		return FieldErrors{"base_domain": m}, nil
	}
	old, err := h.Store.BaseDomain(ctx(c))
	if err != nil {
		return nil, err
	}
	if old == next {
		return nil, nil
	}
	if err := h.Store.SetSetting(ctx(c), "base_domain", next); err != nil {
		return nil, err
	}
	h.Log.Info("base domain changed", "from", old, "to", next, "user", Who(c).User.Email)
	return nil, h.Kube.BaseDomainChanged(ctx(c), old, next, Who(c).User.Email)
}

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
		fe, err := h.setBaseDomain(c, *in.BaseDomain)
		if err != nil {
			return h.Fail(c, err)
		}
		if fe != nil {
			return Invalid(c, fe)
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
	fe, err := h.setBaseDomain(c, v)
	if err != nil {
		return h.Fail(c, err)
	}
	if fe != nil {
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
	if r.DomainMigrationStatus != store.MigrationDNSCheck {
		return Unprocessable(c, "The region has no domain migration to complete.")
	}
	j, err := h.Kube.CompleteDomainMigration(ctx(c), r, Who(c).User.Email)
	if err != nil {
		return h.Fail(c, err)
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"job_id": j.ID})
}
