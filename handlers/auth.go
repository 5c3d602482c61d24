package handlers

import (
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/store"
	"runr.dev/console/views"
)

// Login throttling: failures per e-mail and client address, and per e-mail alone.
const (
	loginWindow         = 15 * time.Minute
	maxFailuresPerIP    = 5
	maxFailuresPerEmail = 20
)

// LoginPage shows the sign-in form.
func (h *Handlers) LoginPage(c *fiber.Ctx) error {
	if Who(c) != nil {
		return c.Redirect("/regions", fiber.StatusSeeOther)
	}
	return Render(c, fiber.StatusOK, views.Login(h.page(c, "Sign in", ""), views.Form{}))
}

// Login checks the credentials, renews the session token and signs the user in.
func (h *Handlers) Login(c *fiber.Ctx) error {
	email := strings.TrimSpace(c.FormValue("email"))
	password := c.FormValue("password")
	f := views.Form{Values: map[string]string{"email": email}}
	fail := func(status int, msg string) error {
		f.Error = msg
		return Render(c, status, views.Login(h.page(c, "Sign in", ""), f))
	}
	if email == "" || password == "" {
		f.Errors = map[string]string{}
		if email == "" {
			f.Errors["email"] = "Enter your e-mail address."
		}
		if password == "" {
			f.Errors["password"] = "Enter your password."
		}
		return Render(c, fiber.StatusUnprocessableEntity, views.Login(h.page(c, "Sign in", ""), f))
	}
	ipKey := "ip|" + strings.ToLower(email) + "|" + c.IP()
	emailKey := "email|" + strings.ToLower(email)
	for key, max := range map[string]int{ipKey: maxFailuresPerIP, emailKey: maxFailuresPerEmail} {
		throttled, err := h.Store.LoginThrottled(ctx(c), key, max, loginWindow)
		if err != nil {
			return h.Fail(c, err)
		}
		if throttled {
			c.Set("Retry-After", "900")
			return fail(fiber.StatusTooManyRequests, "Too many failed sign-ins for this account. Wait 15 minutes, or ask an administrator to reset your password.")
		}
	}
	u, err := h.Store.UserByEmail(ctx(c), email)
	if err != nil && !isNotFoundErr(err) {
		return h.Fail(c, err)
	}
	if err != nil || !u.CheckPassword(password) {
		for _, key := range []string{ipKey, emailKey} {
			if err := h.Store.RecordLoginFailure(ctx(c), key, loginWindow); err != nil {
				return h.Fail(c, err)
			}
		}
		h.Log.Info("login failed", "email", email, "ip", c.IP())
		return fail(fiber.StatusUnauthorized, "The e-mail or the password is wrong.")
	}
	if err := h.Store.ClearLoginFailures(ctx(c), ipKey); err != nil {
		return h.Fail(c, err)
	}
	// A new session token at login defeats session fixation.
	if err := h.Sessions.RenewToken(ctx(c)); err != nil {
		return h.Fail(c, err)
	}
	h.Sessions.Put(ctx(c), "user_id", u.ID)
	h.Sessions.Put(ctx(c), "csrf", store.RandomToken(""))
	if err := h.Store.TouchLogin(ctx(c), u.ID); err != nil {
		return h.Fail(c, err)
	}
	h.Log.Info("login", "user", u.Email)
	return c.Redirect("/regions", fiber.StatusSeeOther)
}

// Logout ends the session.
func (h *Handlers) Logout(c *fiber.Ctx) error {
	if hasSession(c) {
		if err := h.Sessions.Destroy(ctx(c)); err != nil {
			return h.Fail(c, err)
		}
	}
	return c.Redirect("/login", fiber.StatusSeeOther)
}

func isNotFoundErr(err error) bool { return errors.Is(err, store.ErrNotFound) }
