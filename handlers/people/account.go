package people

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/accounts"
	"runr.dev/console/handlers"
	"runr.dev/console/store"
	"runr.dev/console/views"
)

// AccountPage shows the signed-in user's account: e-mail and role, the password form
// and "sign out other sessions".
func (h *Handlers) AccountPage(c *fiber.Ctx) error {
	return h.renderAccount(c, fiber.StatusOK, views.Form{})
}

func (h *Handlers) renderAccount(c *fiber.Ctx, status int, f views.Form) error {
	u := handlers.Who(c).User
	page := h.Page(c, "Account", "account")
	d := views.AccountData{Email: u.Email, Name: u.Name, Role: u.Role, Tenant: page.Tenant}
	return handlers.Render(c, status, views.Account(page, d, f))
}

// ChangePasswordForm changes the user's password from the Account page: every other
// session of the user is signed out, this one stays signed in (with a new token).
// Passwords are never written back into the form.
func (h *Handlers) ChangePasswordForm(c *fiber.Ctx) error {
	if fe := handlers.InputErrors(c, "current_password", "new_password", "confirm_password"); fe != nil {
		return h.renderAccount(c, fiber.StatusUnprocessableEntity, views.Form{Errors: fe})
	}
	in := accounts.PasswordInput{Current: c.FormValue("current_password"), New: c.FormValue("new_password"), Confirm: c.FormValue("confirm_password")}
	gen, wait, err := h.changePassword(c, in)
	if wait > 0 {
		return h.renderAccount(c, fiber.StatusTooManyRequests, views.Form{Error: tooManyWrongPasswords(c, wait)})
	}
	if fe, msg, ok := h.Refusal(c, err); ok {
		return h.renderAccount(c, fiber.StatusUnprocessableEntity, views.Form{Errors: fe, Error: msg})
	} else if err != nil {
		return h.Fail(c, err)
	}
	if err := h.keepSession(c, gen); err != nil {
		return h.Fail(c, err)
	}
	h.Flash(c, "Password changed. Every other session of yours is signed out; this one stays signed in.")
	return handlers.Redirect(c, "/account")
}

// EndOtherSessionsForm signs out every other session of the user from the Account page;
// this one stays signed in (with a new token).
func (h *Handlers) EndOtherSessionsForm(c *fiber.Ctx) error {
	if err := h.endOtherSessions(c); err != nil {
		return h.Fail(c, err)
	}
	h.Flash(c, "Every other session of yours is signed out; this one stays signed in.")
	return handlers.Redirect(c, "/account")
}

// APIChangePassword is POST /api/me/password with {current_password, new_password}: the
// caller's sessions are signed out (a browser session that asks stays signed in).
func (h *Handlers) APIChangePassword(c *fiber.Ctx) error {
	var in accounts.PasswordInput
	if err := handlers.BodyMap(c, &in); err != nil {
		return h.Fail(c, err)
	}
	in.Confirm = in.New // the API has no confirmation field
	gen, wait, err := h.changePassword(c, in)
	if wait > 0 {
		return handlers.JSONError(c, fiber.StatusTooManyRequests, tooManyWrongPasswords(c, wait))
	}
	if err != nil {
		return h.Fail(c, err)
	}
	if err := h.keepSession(c, gen); err != nil {
		return h.Fail(c, err)
	}
	return c.JSON(fiber.Map{"data": fiber.Map{"sessions_ended": true}})
}

// APIEndOtherSessions is POST /api/me/sessions/end-others: every browser session of the
// caller is signed out (a browser session that asks stays signed in). API tokens stay.
func (h *Handlers) APIEndOtherSessions(c *fiber.Ctx) error {
	if err := h.endOtherSessions(c); err != nil {
		return h.Fail(c, err)
	}
	return c.JSON(fiber.Map{"data": fiber.Map{"sessions_ended": true}})
}

func (h *Handlers) endOtherSessions(c *fiber.Ctx) error {
	gen, err := accounts.EndOtherSessions(c.UserContext(), h.Store, handlers.Who(c).User.ID)
	if err != nil {
		return err
	}
	h.Log.Info("other sessions signed out", "user", handlers.Who(c).User.Email, "token", handlers.Who(c).TokenID != "")
	return h.keepSession(c, gen)
}

// changePassword runs the use case under the per-account delay of sign-ins (after 5 wrong
// current passwords in 15 minutes, 1 s, 2 s, … up to 30 s between attempts, counted for
// the user whatever the session or token), so that a stolen session or token is no way
// round the sign-in's limits. wait > 0 refuses the attempt before any check.
func (h *Handlers) changePassword(c *fiber.Ctx, in accounts.PasswordInput) (gen int, wait time.Duration, err error) {
	p := handlers.Who(c)
	key := "password|" + p.User.ID
	n, last, err := h.Store.LoginFailures(c.UserContext(), key, handlers.LoginWindow)
	if err != nil {
		return 0, 0, err
	}
	if wait := time.Until(last.Add(handlers.AccountDelay(n))); wait > 0 {
		return 0, wait, nil
	}
	gen, err = accounts.ChangePassword(c.UserContext(), h.Store, p.User.ID, in)
	switch {
	case errors.Is(err, accounts.ErrWrongPassword):
		h.Log.Info("password change refused: wrong current password", "user", p.User.Email, "ip", handlers.ClientIP(c, h.Cfg), "token", p.TokenID != "", "failures", n+1)
		if rerr := h.Store.RecordLoginFailure(c.UserContext(), key, handlers.LoginWindow); rerr != nil {
			return 0, 0, rerr
		}
	case err == nil:
		h.Log.Info("password changed; other sessions signed out", "user", p.User.Email, "token", p.TokenID != "")
		if cerr := h.Store.ClearLoginFailures(c.UserContext(), key); cerr != nil {
			return 0, 0, cerr
		}
	}
	return gen, 0, err
}

// tooManyWrongPasswords says how long to wait, and sets Retry-After.
func tooManyWrongPasswords(c *fiber.Ctx, wait time.Duration) string {
	secs := int((wait + time.Second - 1) / time.Second)
	c.Set("Retry-After", strconv.Itoa(secs))
	return fmt.Sprintf("Too many wrong passwords: wait %d s and try again.", secs)
}

// keepSession keeps the request's browser session signed in once its user's generation
// moved on: a new session token (the old one may be what was stolen) that carries the new
// generation. A request made with an API token has no session to keep.
func (h *Handlers) keepSession(c *fiber.Ctx, gen int) error {
	if !handlers.HasSession(c) {
		return nil
	}
	if err := h.Sessions.RenewToken(c.UserContext()); store.Unavailable(err) {
		return fmt.Errorf("renew the session token: %w: %w", store.ErrUnavailable, err)
	} else if err != nil {
		return fmt.Errorf("renew the session token: %w", err)
	}
	h.Sessions.Put(c.UserContext(), handlers.SessionGenerationKey, gen)
	return nil
}
