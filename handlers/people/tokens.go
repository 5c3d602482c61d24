package people

import (
	"slices"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/accounts"
	"runr.dev/console/handlers"
	"runr.dev/console/perm"
	"runr.dev/console/views"
)

// grantor is who creates a token in this request: the user, with the permissions the
// request holds.
func grantor(p *handlers.Principal) accounts.Grantor {
	return accounts.Grantor{User: p.User, Perms: p.Perms, Star: p.MayHandOutStar()}
}

// TokensPage lists the user's tokens.
func (h *Handlers) TokensPage(c *fiber.Ctx) error {
	return h.renderTokens(c, fiber.StatusOK, views.Form{}, "")
}

func (h *Handlers) renderTokens(c *fiber.Ctx, status int, f views.Form, created string) error {
	ts, err := h.Store.ListAPITokens(c.UserContext(), handlers.Who(c).User.ID)
	if err != nil {
		return h.Fail(c, err)
	}
	// What a token may be given: the role's permissions the user holds (a tenant's user
	// not the platform's, and none of a module's while it is off).
	held := perm.OfUser(handlers.Who(c).User, nil)
	absent := perm.Absent(h.Cfg.Tenancy, h.Cfg.Billing)
	var perms []views.Option
	for _, p := range perm.OfRole(handlers.Who(c).User.Role) {
		if held[p] && !slices.Contains(absent, p) {
			perms = append(perms, views.Option{Value: p, Label: perm.Describe(p)})
		}
	}
	return handlers.Render(c, status, views.Tokens(h.Page(c, "API tokens", "tokens"), tokenRows(ts), f, created, perms))
}

// CreateTokenForm creates a token from the console; it is shown once.
func (h *Handlers) CreateTokenForm(c *fiber.Ctx) error {
	form, err := c.MultipartForm()
	var scopes []string
	if err == nil {
		scopes = form.Value["scopes"]
	} else {
		args := c.Request().PostArgs()
		for _, v := range args.PeekMulti("scopes") {
			scopes = append(scopes, string(v))
		}
	}
	in := accounts.TokenInput{Name: c.FormValue("name"), Scopes: scopes}
	if fe := handlers.InputErrors(c, "name", "scopes", "expires_in_days"); fe != nil {
		return h.renderTokens(c, fiber.StatusUnprocessableEntity, views.Form{Values: map[string]string{}, Errors: fe}, "")
	}
	lifetime := c.FormValue("expires_in_days")
	if lifetime != "" {
		days, err := strconv.Atoi(lifetime)
		if err != nil {
			days = -1 // refused on its field below, with the other fields kept
		}
		in.ExpiresInDays = &days
	}
	_, plain, err := accounts.CreateToken(c.UserContext(), h.Store, grantor(handlers.Who(c)), in)
	if fe, _, ok := h.Refusal(c, err); ok {
		f := views.Form{Values: map[string]string{"name": in.Name, "scopes": strings.Join(scopes, ","), "expires_in_days": lifetime}, Errors: fe}
		return h.renderTokens(c, fiber.StatusUnprocessableEntity, f, "")
	} else if err != nil {
		return h.Fail(c, err)
	}
	// The token is shown in this answer only, never parked in the session.
	return h.renderTokens(c, fiber.StatusCreated, views.Form{}, plain)
}

// DeleteTokenForm revokes one of the user's tokens.
func (h *Handlers) DeleteTokenForm(c *fiber.Ctx) error {
	if err := h.Store.DeleteAPIToken(c.UserContext(), c.Params("id"), handlers.Who(c).User.ID); err != nil {
		return h.Fail(c, err)
	}
	h.Flash(c, "Token revoked.")
	return handlers.Redirect(c, "/tokens")
}

// APIListTokens is GET /api/tokens: the caller's tokens, without their values.
func (h *Handlers) APIListTokens(c *fiber.Ctx) error {
	ts, err := h.Store.ListAPITokens(c.UserContext(), handlers.Who(c).User.ID)
	return handlers.DataAnswer(h.Handlers, c, fiber.StatusOK, ts, err)
}

// APICreateToken is POST /api/tokens; the token is in the answer once.
func (h *Handlers) APICreateToken(c *fiber.Ctx) error {
	var in accounts.TokenInput
	if err := handlers.BodyMap(c, &in); err != nil {
		return h.Fail(c, err)
	}
	t, plain, err := accounts.CreateToken(c.UserContext(), h.Store, grantor(handlers.Who(c)), in)
	if err != nil {
		return h.Fail(c, err)
	}
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"data": t, "token": plain})
}

// APIDeleteToken is DELETE /api/tokens/{id}.
func (h *Handlers) APIDeleteToken(c *fiber.Ctx) error {
	if err := h.Store.DeleteAPIToken(c.UserContext(), c.Params("id"), handlers.Who(c).User.ID); err != nil {
		return h.Fail(c, err)
	}
	return c.SendStatus(fiber.StatusNoContent)
}
