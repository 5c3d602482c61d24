package handlers

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/crypt"
	"runr.dev/console/store"
	"runr.dev/console/views"
)

// Login throttling. Per client address, whatever the e-mail: a hard limit within the
// window (one address cannot try every account). Per account: a progressive delay after
// a few failures (1 s, 2 s, 4 s ... up to 30 s between attempts) instead of a lock, for
// the addresses that failed for it; a browser the account signed in with before (the
// device cookie) and an address without failures for it are not delayed by the failures
// of others, so a sprayer slows itself down and never locks the real user out.
const (
	LoginWindow         = 15 * time.Minute
	maxFailuresPerIP    = 30
	freeAccountFailures = 5
	maxAccountDelay     = 30 * time.Second
)

// AccountDelay is how long after its last failure an account may try again.
func AccountDelay(failures int) time.Duration {
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
var FormShowsInputErrors = map[string]bool{"/login": true, "/users": true, "/tokens": true, "/platform": true, "/regions/new/check": true, "/tenants": true, "/account/password": true}

// InputErrors returns the fields the input check refused, for the form's own fields
// (anything else is reported on first).
func InputErrors(c *fiber.Ctx, first string, fields ...string) FieldErrors {
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
	return Render(c, fiber.StatusOK, views.Login(h.Page(c, "Sign in", ""), views.Form{}))
}

// Login checks the credentials, renews the session token and signs the user in.
func (h *Handlers) Login(c *fiber.Ctx) error {
	email := strings.TrimSpace(c.FormValue("email"))
	password := c.FormValue("password")
	f := views.Form{Values: map[string]string{"email": email}}
	fail := func(status int, msg string) error {
		f.Error = msg
		return Render(c, status, views.Login(h.Page(c, "Sign in", ""), f))
	}
	if fe := InputErrors(c, "email", "password"); fe != nil {
		f.Values["email"], f.Errors = "", fe
		return Render(c, fiber.StatusUnprocessableEntity, views.Login(h.Page(c, "Sign in", ""), f))
	}
	if email == "" || password == "" {
		f.Errors = map[string]string{}
		if email == "" {
			f.Errors["email"] = "Enter your e-mail address."
		}
		if password == "" {
			f.Errors["password"] = "Enter your password."
		}
		return Render(c, fiber.StatusUnprocessableEntity, views.Login(h.Page(c, "Sign in", ""), f))
	}
	if len(password) > 72 {
		f.Errors = map[string]string{"password": "A password has at most 72 bytes."}
		return Render(c, fiber.StatusUnprocessableEntity, views.Login(h.Page(c, "Sign in", ""), f))
	}
	addr := clientNetwork(ClientIP(c, h.Cfg))
	account := strings.ToLower(email)
	ipKey, accountKey := "ip|"+addr, "email|"+account
	n, _, err := h.Store.LoginFailures(ctx(c), ipKey, LoginWindow)
	if err != nil {
		return h.Fail(c, err)
	}
	if n >= maxFailuresPerIP {
		c.Set("Retry-After", strconv.Itoa(int(LoginWindow.Seconds())))
		return fail(fiber.StatusTooManyRequests, "Too many failed sign-ins from this address. Wait 15 minutes and try again.")
	}
	// The delay of this attempt: a browser this account signed in with before counts its
	// own failures only; anyone else, the failures of this account from this address, and
	// once there are any, the account's failures from everywhere too. A sprayer's failures
	// thus slow the sprayer, never the owner's browser or an address of the owner's.
	device := h.knownDevice(c, account)
	key := "pair|" + account + "|" + addr
	if device != "" {
		key = "device|" + device
	}
	n, last, err := h.Store.LoginFailures(ctx(c), key, LoginWindow)
	if err != nil {
		return h.Fail(c, err)
	}
	wait := time.Until(last.Add(AccountDelay(n)))
	accountFailures, accountLast, err := h.Store.LoginFailures(ctx(c), accountKey, LoginWindow)
	if err != nil {
		return h.Fail(c, err)
	}
	if device == "" && n > 0 {
		wait = max(wait, time.Until(accountLast.Add(AccountDelay(accountFailures))))
	}
	if wait > 0 {
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
		for _, k := range []string{ipKey, accountKey, key} {
			if err := h.Store.RecordLoginFailure(ctx(c), k, LoginWindow); err != nil {
				return h.Fail(c, err)
			}
		}
		if accountFailures+1 >= freeAccountFailures && n == 0 {
			// A new address failing for an account that others failed for: a spray.
			h.Log.Warn("login spray: failures for one account from several addresses", "email", email, "ip", ClientIP(c, h.Cfg), "failures", accountFailures+1)
		} else {
			h.Log.Info("login failed", "email", email, "ip", ClientIP(c, h.Cfg))
		}
		return fail(fiber.StatusUnauthorized, "The e-mail or the password is wrong.")
	}
	// The failures of this address or browser are forgotten; the account's and the
	// address's are not (the owner's sign-in must not reset a sprayer's delay, nor an
	// attacker's own account the address's count).
	if err := h.Store.ClearLoginFailures(ctx(c), key); err != nil {
		return h.Fail(c, err)
	}
	h.rememberDevice(c, account, device)
	// A new session token at login defeats session fixation.
	if err := h.Sessions.RenewToken(ctx(c)); err != nil {
		return h.Fail(c, err)
	}
	h.Sessions.Put(ctx(c), "user_id", u.ID)
	h.Sessions.Put(ctx(c), SessionGenerationKey, u.SessionGeneration)
	h.Sessions.Put(ctx(c), "csrf", crypt.RandomToken(""))
	if err := h.Store.TouchLogin(ctx(c), u.ID); err != nil {
		return h.Fail(c, err)
	}
	h.Log.Info("login", "user", u.Email)
	return c.Redirect("/regions", fiber.StatusSeeOther)
}

// Logout ends the session.
func (h *Handlers) Logout(c *fiber.Ctx) error {
	if HasSession(c) {
		if err := h.Sessions.Destroy(ctx(c)); err != nil {
			return h.Fail(c, err)
		}
	}
	return c.Redirect("/login", fiber.StatusSeeOther)
}

// DeviceCookie remembers a browser an account signed in with: an id sealed with the app
// key to the account's e-mail. Such a browser is delayed by its own failures only.
const DeviceCookie = "runr_device"

// deviceCookieAge is how long a browser stays known after its last sign-in.
const deviceCookieAge = 90 * 24 * time.Hour

// knownDevice returns the id of the request's browser when it signed in as account
// before ("" otherwise).
func (h *Handlers) knownDevice(c *fiber.Ctx, account string) string {
	raw, err := base64.RawURLEncoding.DecodeString(c.Cookies(DeviceCookie))
	if err != nil || len(raw) == 0 || h.Store.Cipher == nil {
		return ""
	}
	id, err := h.Store.Cipher.Open(string(raw), "device|"+account)
	if err != nil {
		return ""
	}
	return id
}

// rememberDevice gives the browser that signed in as account its device cookie (the id
// it had, or a new one).
func (h *Handlers) rememberDevice(c *fiber.Ctx, account, id string) {
	if h.Store.Cipher == nil {
		return
	}
	if id == "" {
		id = crypt.RandomToken("")
	}
	c.Cookie(&fiber.Cookie{Name: DeviceCookie, Value: base64.RawURLEncoding.EncodeToString([]byte(h.Store.Cipher.Seal(id, "device|"+account))),
		Path: "/login", MaxAge: int(deviceCookieAge.Seconds()), HTTPOnly: true, SameSite: fiber.CookieSameSiteStrictMode,
		Secure: h.Cfg.SecureCookies || c.Protocol() == "https"})
}

// clientNetwork is the address the sign-in limits count by: an IPv4 address, or the
// /64 of an IPv6 address (one subscriber's network, which its owner spends freely).
func clientNetwork(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil || a.Is4() || a.Is4In6() {
		return ip
	}
	p, _ := a.Prefix(64)
	return p.String()
}

func isNotFoundErr(err error) bool { return errors.Is(err, store.ErrNotFound) }
