package handlers

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/store"
	"runr.dev/console/views"
)

// Login throttling. Per client address, whatever the e-mail: a hard limit within the
// window (one address cannot try every account). Per account: a progressive delay
// after a few failures (1 s, 2 s, 4 s ... up to 30 s between attempts) instead of a
// lock, so failures from elsewhere slow an attacker down but never lock the real user out.
const (
	loginWindow         = 15 * time.Minute
	maxFailuresPerIP    = 30
	freeAccountFailures = 5
	maxAccountDelay     = 30 * time.Second
)

// accountDelay is how long after its last failure an account may try again.
func accountDelay(failures int) time.Duration {
	if failures < freeAccountFailures {
		return 0
	}
	n := failures - freeAccountFailures
	if n >= 5 {
		return maxAccountDelay
	}
	return min(time.Second<<n, maxAccountDelay)
}

// InputErrorsKey is the Locals key of the fields the input check refused (NUL bytes,
// invalid UTF-8) on a form whose handler shows them beside the fields.
const InputErrorsKey = "input_errors"

// FormShowsInputErrors lists the forms whose handlers show refused characters beside
// their fields (the others get a 422 page that names the fields).
var FormShowsInputErrors = map[string]bool{"/login": true, "/users": true, "/tokens": true, "/platform": true, "/regions/new/check": true, "/tenants": true}

// inputErrors returns the fields the input check refused, for the form's own fields
// (anything else is reported on first).
func inputErrors(c *fiber.Ctx, first string, fields ...string) FieldErrors {
	fe, ok := c.Locals(InputErrorsKey).(FieldErrors)
	if !ok {
		return nil
	}
	out := FieldErrors{}
	for k, v := range fe {
		known := k == first
		for _, f := range fields {
			known = known || k == f
		}
		if !known {
			k = first
		}
		out[k] = v
	}
	return out
}

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
	if fe := inputErrors(c, "email", "password"); fe != nil {
		f.Values["email"], f.Errors = "", fe
		return Render(c, fiber.StatusUnprocessableEntity, views.Login(h.page(c, "Sign in", ""), f))
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
	if len(password) > 72 {
		f.Errors = map[string]string{"password": "A password has at most 72 bytes."}
		return Render(c, fiber.StatusUnprocessableEntity, views.Login(h.page(c, "Sign in", ""), f))
	}
	ipKey := "ip|" + c.IP()
	emailKey := "email|" + strings.ToLower(email)
	n, _, err := h.Store.LoginFailures(ctx(c), ipKey, loginWindow)
	if err != nil {
		return h.Fail(c, err)
	}
	if n >= maxFailuresPerIP {
		c.Set("Retry-After", strconv.Itoa(int(loginWindow.Seconds())))
		return fail(fiber.StatusTooManyRequests, "Too many failed sign-ins from this address. Wait 15 minutes and try again.")
	}
	n, last, err := h.Store.LoginFailures(ctx(c), emailKey, loginWindow)
	if err != nil {
		return h.Fail(c, err)
	}
	if wait := time.Until(last.Add(accountDelay(n))); wait > 0 {
		secs := int((wait + time.Second - 1) / time.Second)
		c.Set("Retry-After", strconv.Itoa(secs))
		return fail(fiber.StatusTooManyRequests, fmt.Sprintf("Too many failed sign-ins for this account: wait %d s and try again.", secs))
	}
	u, err := h.Store.UserByEmail(ctx(c), email)
	if err != nil && !isNotFoundErr(err) {
		return h.Fail(c, err)
	}
	if err != nil || u.Tenant() != "" && !h.Cfg.Tenancy {
		// An unknown account costs a bcrypt comparison all the same; a tenant's user is no
		// account while the Tenancy module is off.
		u = nil
	}
	if !store.CheckLogin(u, password) {
		for _, key := range []string{ipKey, emailKey} {
			if err := h.Store.RecordLoginFailure(ctx(c), key, loginWindow); err != nil {
				return h.Fail(c, err)
			}
		}
		h.Log.Info("login failed", "email", email, "ip", c.IP())
		return fail(fiber.StatusUnauthorized, "The e-mail or the password is wrong.")
	}
	// The account's failures are forgotten; the address's are not (an attacker's own
	// account must not reset the address's count).
	if err := h.Store.ClearLoginFailures(ctx(c), emailKey); err != nil {
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
