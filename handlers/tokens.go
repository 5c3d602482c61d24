package handlers

import (
	"errors"
	"strings"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/store"
	"runr.dev/console/views"
)

func errorsIsConflict(err error) bool { return errors.Is(err, store.ErrConflict) }

// ParseScopes validates a list of scopes: permission names, or "*".
func ParseScopes(raw []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, r := range raw {
		for _, s := range strings.Split(r, ",") {
			s = strings.TrimSpace(s)
			if s == "" || seen[s] {
				continue
			}
			if s != "*" && !store.ValidPermission(s) {
				return nil, errors.New("unknown scope " + s + ": use permission names such as regions.view, or *")
			}
			seen[s] = true
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("give at least one scope, or * for everything your role allows")
	}
	return out, nil
}

// TokenInput is the body of POST /api/tokens.
type TokenInput struct {
	Name   string   `json:"name"`
	Scopes []string `json:"scopes"`
}

// mayHandOutStar reports whether the caller may create a "*" token: a signed-in user,
// or a token that has "*" itself.
func (p *Principal) mayHandOutStar() bool {
	if p.TokenID == "" {
		return true
	}
	for _, s := range p.Scopes {
		if s == "*" {
			return true
		}
	}
	return false
}

func validateToken(p *Principal, in TokenInput) ([]string, FieldErrors) {
	errs := FieldErrors{}
	in.Name = strings.TrimSpace(in.Name)
	if in.Name == "" || len(in.Name) > 100 {
		errs["name"] = "Give the token a name of up to 100 characters."
	}
	scopes, err := ParseScopes(in.Scopes)
	if err == nil {
		err = store.CapScopes(p.Perms, p.mayHandOutStar(), scopes)
	}
	if err != nil {
		errs["scopes"] = err.Error()
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return scopes, nil
}

// TokensPage lists the user's tokens.
func (h *Handlers) TokensPage(c *fiber.Ctx) error {
	return h.renderTokens(c, fiber.StatusOK, views.Form{}, "")
}

func (h *Handlers) renderTokens(c *fiber.Ctx, status int, f views.Form, created string) error {
	ts, err := h.Store.ListAPITokens(ctx(c), Who(c).User.ID)
	if err != nil {
		return h.Fail(c, err)
	}
	perms := store.RolePermissions(Who(c).User.Role)
	return Render(c, status, views.Tokens(h.page(c, "API tokens", "tokens"), tokenRows(ts), f, created, perms))
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
	in := TokenInput{Name: c.FormValue("name"), Scopes: scopes}
	if fe := inputErrors(c, "name", "scopes"); fe != nil {
		return h.renderTokens(c, fiber.StatusUnprocessableEntity, views.Form{Values: map[string]string{}, Errors: fe}, "")
	}
	sc, errs := validateToken(Who(c), in)
	if errs != nil {
		f := views.Form{Values: map[string]string{"name": in.Name, "scopes": strings.Join(scopes, ",")}, Errors: errs}
		return h.renderTokens(c, fiber.StatusUnprocessableEntity, f, "")
	}
	_, plain, err := h.Store.CreateAPIToken(ctx(c), Who(c).User.ID, strings.TrimSpace(in.Name), sc)
	if err != nil {
		return h.Fail(c, err)
	}
	// The token is shown in this answer only, never parked in the session.
	return h.renderTokens(c, fiber.StatusCreated, views.Form{}, plain)
}

// DeleteTokenForm revokes one of the user's tokens.
func (h *Handlers) DeleteTokenForm(c *fiber.Ctx) error {
	if err := h.Store.DeleteAPIToken(ctx(c), c.Params("id"), Who(c).User.ID); err != nil {
		return h.Fail(c, err)
	}
	h.flash(c, "Token revoked.")
	return redirect(c, "/tokens")
}

// APIListTokens is GET /api/tokens: the caller's tokens, without their values.
func (h *Handlers) APIListTokens(c *fiber.Ctx) error {
	ts, err := h.Store.ListAPITokens(ctx(c), Who(c).User.ID)
	if err != nil {
		return h.Fail(c, err)
	}
	return c.JSON(fiber.Map{"data": ts})
}

// APICreateToken is POST /api/tokens; the token is in the answer once.
func (h *Handlers) APICreateToken(c *fiber.Ctx) error {
	var in TokenInput
	if err := bodyMap(c, &in); err != nil {
		return h.Fail(c, err)
	}
	sc, errs := validateToken(Who(c), in)
	if errs != nil {
		return Invalid(c, errs)
	}
	t, plain, err := h.Store.CreateAPIToken(ctx(c), Who(c).User.ID, strings.TrimSpace(in.Name), sc)
	if err != nil {
		return h.Fail(c, err)
	}
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"data": t, "token": plain})
}

// APIDeleteToken is DELETE /api/tokens/{id}.
func (h *Handlers) APIDeleteToken(c *fiber.Ctx) error {
	if err := h.Store.DeleteAPIToken(ctx(c), c.Params("id"), Who(c).User.ID); err != nil {
		return h.Fail(c, err)
	}
	return c.SendStatus(fiber.StatusNoContent)
}
