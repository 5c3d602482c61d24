package web

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/alexedwards/scs/postgresstore"
	"github.com/alexedwards/scs/v2"
	"github.com/gofiber/fiber/v2"

	"runr.dev/console/crypt"
	"runr.dev/console/handlers"
	"runr.dev/console/perm"
	"runr.dev/console/store"
)

// SessionCookie is the name of the console's session cookie.
const SessionCookie = "runr_session"

// AnonymousCSRFCookie holds the CSRF token of a visitor who has no session yet.
const AnonymousCSRFCookie = "runr_csrf"

// NewSessions builds the scs session manager, stored in PostgreSQL.
func NewSessions(st *store.Store) *scs.SessionManager {
	sm := scs.New()
	sm.Store = postgresstore.NewWithCleanupInterval(st.DB.DB, 30*time.Minute)
	// An absolute lifetime only: an idle timeout would write the session on every page.
	sm.Lifetime = 12 * time.Hour
	sm.Cookie.Name = SessionCookie
	return sm
}

// sessions loads the scs session into the request context and writes the cookie back
// when the session changed. (scs's own middleware is for net/http; this is its Fiber form.)
func (s *Server) sessions(c *fiber.Ctx) error {
	token := c.Cookies(SessionCookie)
	sctx, err := s.Sessions.Load(c.UserContext(), token)
	if store.Unavailable(err) {
		return fmt.Errorf("load the session: %w: %w", store.ErrUnavailable, err)
	}
	if err != nil {
		s.Log.Warn("session load failed; starting a new one", "err", err)
		sctx, _ = s.Sessions.Load(c.UserContext(), "")
	}
	c.SetUserContext(sctx)
	c.Locals(handlers.SessionLoadedKey, true)
	if err := c.Next(); err != nil {
		return err
	}
	sctx = c.UserContext()
	switch s.Sessions.Status(sctx) {
	case scs.Modified:
		tok, exp, err := s.Sessions.Commit(sctx)
		if store.Unavailable(err) {
			return fmt.Errorf("save the session: %w: %w", store.ErrUnavailable, err)
		}
		if err != nil {
			return err
		}
		c.Cookie(&fiber.Cookie{Name: SessionCookie, Value: tok, Path: "/", Expires: exp, HTTPOnly: true,
			SameSite: fiber.CookieSameSiteLaxMode, Secure: s.secure(c)})
	case scs.Destroyed:
		c.Cookie(&fiber.Cookie{Name: SessionCookie, Value: "", Path: "/", Expires: time.Unix(1, 0), MaxAge: -1,
			HTTPOnly: true, SameSite: fiber.CookieSameSiteLaxMode, Secure: s.secure(c)})
	}
	return nil
}

// admits reports whether a user may use the console: a tenant's user only while the
// Tenancy module is on (off, the console has one organisation, the platform's).
func (s *Server) admits(u *store.User) bool { return u.Tenant() == "" || s.Cfg.Tenancy }

// permissions are a user's effective permissions; the Tenancy and Billing modules' exist
// only while they are on.
func (s *Server) permissions(u *store.User, scopes []string) map[string]bool {
	perms := perm.OfUser(u, scopes)
	for _, p := range perm.Absent(s.Cfg.Tenancy, s.Cfg.Billing) {
		delete(perms, p)
	}
	return perms
}

func (s *Server) secure(c *fiber.Ctx) bool { return s.Cfg.SecureCookies || c.Protocol() == "https" }

// identify finds who makes the request: a bearer token, or the session's user. A bad
// token is refused at once; the session path also checks CSRF on every unsafe method.
func (s *Server) identify(c *fiber.Ctx) error {
	if auth := c.Get(fiber.HeaderAuthorization); auth != "" {
		plain, ok := strings.CutPrefix(auth, "Bearer ")
		if !ok || plain == "" {
			return unauthorized(c, "Send the token as Authorization: Bearer <token>.")
		}
		t, u, err := s.apiTokenUser(c.UserContext(), strings.TrimSpace(plain))
		switch {
		case errors.Is(err, store.ErrNotFound) || err == nil && !s.admits(u):
			return unauthorized(c, "The API token is not valid (revoked, or mistyped).")
		case err != nil:
			// The lookup did not say no (the database is away): never "not valid".
			return fmt.Errorf("look up the API token: %w", err)
		}
		c.Locals(handlers.PrincipalKey, &handlers.Principal{User: u, Perms: s.permissions(u, t.Scopes), TokenID: t.ID, Scopes: t.Scopes})
		return c.Next()
	}
	return s.sessions(c)
}

// sessionPrincipal resolves the session's user. A session signed in with an older
// generation of its user's sessions (the password changed since, or the user signed out
// their other sessions) is ended here: the visitor is anonymous.
func (s *Server) sessionPrincipal(c *fiber.Ctx) error {
	if c.Locals(handlers.PrincipalKey) != nil {
		return c.Next() // a bearer token
	}
	sctx := c.UserContext()
	id := s.Sessions.GetString(sctx, "user_id")
	var u *store.User
	if id != "" {
		var err error
		u, err = s.userByID(sctx, id)
		switch {
		case errors.Is(err, store.ErrNotFound):
			u = nil
		case err != nil:
			return fmt.Errorf("load the session's user: %w", err)
		case s.Sessions.GetInt(sctx, handlers.SessionGenerationKey) != u.SessionGeneration:
			err := s.Sessions.Destroy(sctx)
			if store.Unavailable(err) {
				return fmt.Errorf("end a signed-out session: %w: %w", store.ErrUnavailable, err)
			} else if err != nil {
				return fmt.Errorf("end a signed-out session: %w", err)
			}
			id, u = "", nil
		}
	}
	csrf := s.Sessions.GetString(sctx, "csrf")
	switch {
	case csrf != "":
	case id == "":
		// A visitor without a session (the sign-in form) keeps its CSRF token in a cookie
		// of its own: a session, and its row, exist only once something is stored in them.
		csrf = c.Cookies(AnonymousCSRFCookie)
		if csrf == "" && c.Method() == fiber.MethodGet && !handlers.IsAPI(c) {
			csrf = crypt.RandomToken("")
			c.Cookie(&fiber.Cookie{Name: AnonymousCSRFCookie, Value: csrf, Path: "/", HTTPOnly: true,
				SameSite: fiber.CookieSameSiteLaxMode, Secure: s.secure(c)})
		}
	case c.Method() == fiber.MethodGet && !handlers.IsAPI(c):
		csrf = crypt.RandomToken("")
		s.Sessions.Put(sctx, "csrf", csrf)
	}
	c.Locals("csrf", csrf)
	if u != nil && s.admits(u) {
		c.Locals(handlers.PrincipalKey, &handlers.Principal{User: u, Perms: s.permissions(u, nil), CSRF: csrf})
	}
	return c.Next()
}

// checkCSRF refuses an unsafe request made with a session (or none: the login form)
// unless it carries the session's CSRF token, in the X-CSRF-Token header or the _csrf
// field of a POST body (never the query string), and unless it comes from the
// console's own site (Sec-Fetch-Site, Origin). It returns a *fiber.Error, so that the
// chain stops there: the handler never runs.
func (s *Server) checkCSRF(c *fiber.Ctx) error {
	p := handlers.Who(c)
	if safeMethod(c.Method()) || (p != nil && p.TokenID != "") {
		return nil
	}
	if !s.sameSite(c) {
		return fiber.NewError(fiber.StatusForbidden, "Cross-site request refused: the console accepts changes only from its own pages.")
	}
	csrf, _ := c.Locals("csrf").(string)
	sent := c.Get("X-CSRF-Token")
	if sent == "" {
		sent = bodyField(c, "_csrf")
	}
	if csrf == "" || subtle.ConstantTimeCompare([]byte(sent), []byte(csrf)) != 1 {
		msg := "CSRF token missing or wrong: reload the page and try again."
		if handlers.IsAPI(c) {
			msg += " (API clients: use a bearer token.)"
		}
		return fiber.NewError(fiber.StatusForbidden, msg)
	}
	return nil
}

// bodyField reads a field of a form-encoded or multipart POST body; the query string is
// not looked at.
func bodyField(c *fiber.Ctx, name string) string {
	ct := strings.ToLower(c.Get(fiber.HeaderContentType))
	switch {
	case strings.HasPrefix(ct, fiber.MIMEApplicationForm):
		return string(c.Request().PostArgs().Peek(name))
	case strings.HasPrefix(ct, fiber.MIMEMultipartForm):
		if f, err := c.MultipartForm(); err == nil && len(f.Value[name]) > 0 {
			return f.Value[name][0]
		}
	}
	return ""
}

// sameSite is the second layer against cross-site requests: a browser that says the
// request comes from another site (Sec-Fetch-Site), or an Origin that is not the
// console's own (its host, or RUNR_APP_URL's), is refused. Clients that send neither
// header (scripts, old browsers) rely on the CSRF token alone.
func (s *Server) sameSite(c *fiber.Ctx) bool {
	switch c.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default: // same-site, cross-site
		return false
	}
	o := c.Get(fiber.HeaderOrigin)
	if o == "" {
		return true
	}
	return s.ownOrigin(c, o)
}

// ownOrigin reports whether an Origin header names the console: the host the request
// was sent to, or the host of RUNR_APP_URL.
func (s *Server) ownOrigin(c *fiber.Ctx, origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false // includes "null" (sandboxed frames, file: pages)
	}
	if strings.EqualFold(u.Host, c.Hostname()) {
		return true
	}
	if app, err := url.Parse(s.Cfg.AppURL); err == nil && app.Host != "" && strings.EqualFold(u.Host, app.Host) {
		return true
	}
	return false
}

func safeMethod(m string) bool {
	return m == fiber.MethodGet || m == fiber.MethodHead || m == fiber.MethodOptions
}

func unauthorized(c *fiber.Ctx, msg string) error {
	c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="runr"`)
	return handlers.JSONError(c, fiber.StatusUnauthorized, msg)
}
