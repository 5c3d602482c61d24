// Package handlers holds what every HTTP handler of the console shares — the principal,
// sessions, page data, the answers to refusals (Fail for JSON, Refusal/FormOutcome for
// forms), the region page and its tabs, the region list and the sockets — and the
// handlers of that core. The handlers of each feature live in a package of their own,
// each with a type embedding Handlers: regions (a region's settings and components),
// lifecycle (wizard, setup, Knative, moves, reconcile, platform), workloads (projects,
// data, nodes), runtimes (sandboxes, GPU, supply chain), people (users, tokens, tenants)
// and jobs. Handlers are thin: they parse the request, call one use case of ops (or
// accounts) with the request's actor, and render its outcome.
package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/a-h/templ"
	"github.com/alexedwards/scs/v2"
	"github.com/gofiber/fiber/v2"

	"runr.dev/console/changecache"
	"runr.dev/console/config"
	"runr.dev/console/hub"
	"runr.dev/console/ops"
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/nodes"
	"runr.dev/console/problem"
	"runr.dev/console/store"
	"runr.dev/console/views"
)

// InWizardKey is the Locals key that shows a tab rendered through the extra-tab hook as
// a wizard step (installs only).
const InWizardKey = "in_wizard"

// Handlers carries what every handler needs.
type Handlers struct {
	Store    *store.Store
	Cfg      *config.Config
	Sessions *scs.SessionManager
	// Ops is the operations: the use cases handlers call and the jobs they queue.
	Ops *ops.Service
	// Hub fans job events and region changes out to sockets and JSON feeds.
	Hub     *hub.Hub
	Version string
	Log     *slog.Logger
	// Draining is set when the console stops: /readyz answers 503 while it still serves,
	// so that load balancers stop sending to it before it closes (RUNR_SHUTDOWN_DELAY).
	Draining atomic.Bool

	// sockets counts the users' open WebSockets (RUNR_SOCKETS_PER_USER).
	sockets socketCounts

	bannerCache shortCache[[]views.MigrationBanner]
	// lists keeps rendered region lists until a change (changecache).
	lists changecache.Cache
	// regionPages keeps the data of region pages (General tab) until a change.
	regionPages changecache.Cache

	// pageBrand is the white-label look of every page, built at the first.
	pageBrand pageBrandOnce

	// extraTabs render the region tabs of later features (workers, migration).
	extraTabs map[string]func(c *fiber.Ctx, r *store.Region) (templ.Component, error)
}

// ListWatcher is what the hub tells of changes to the region lists.
func (h *Handlers) ListWatcher() hub.ListWatcher { return &h.lists }

// RegionPagesWatcher is what the hub tells of changes to region pages.
func (h *Handlers) RegionPagesWatcher() hub.ListWatcher { return &h.regionPages }

// ChangedLocally tells the list cache that a request of this console may have changed
// something (its answer is sent once it returns).
func (h *Handlers) ChangedLocally() {
	h.lists.ChangedLocally()
	h.regionPages.ChangedLocally()
}

// Principal is who makes a request: a user by session, or a user's API token.
type Principal struct {
	User    *store.User
	Perms   map[string]bool
	TokenID string
	// Scopes are the token's scopes (nil for a session).
	Scopes []string
	CSRF   string
}

// Can reports whether the principal holds a permission.
func (p *Principal) Can(perm string) bool { return p != nil && p.Perms[perm] }

// PrincipalKey is the fiber.Ctx Locals key of the request's Principal.
const PrincipalKey = "principal"

// Who returns the request's principal (nil when anonymous).
func Who(c *fiber.Ctx) *Principal {
	p, _ := c.Locals(PrincipalKey).(*Principal)
	return p
}

// ctx returns the request's context (it carries the session).
func ctx(c *fiber.Ctx) context.Context { return c.UserContext() }

// IsAPI reports whether the request is for the JSON API.
func IsAPI(c *fiber.Ctx) bool {
	return strings.HasPrefix(c.Path(), "/api/")
}

func isHTMX(c *fiber.Ctx) bool { return c.Get("HX-Request") == "true" }

// Page builds the common page data.
func (h *Handlers) Page(c *fiber.Ctx, title, active string) views.Page {
	p := views.Page{}
	if pr := Who(c); pr != nil {
		p = PrincipalPage(pr, pr.CSRF)
		p.Banners = h.banners(c)
		if id := pr.User.Tenant(); id != "" {
			if t, err := h.Store.TenantByID(ctx(c), id); err == nil {
				p.Tenant = t.Name
			}
		}
	} else if tok, ok := c.Locals("csrf").(string); ok {
		p.CSRF = tok
	}
	p.Title, p.Active, p.Brand = title, active, h.brand()
	if HasSession(c) {
		p.Flash = h.Sessions.PopString(ctx(c), "flash")
	}
	return p
}

// SessionLoadedKey marks a request whose context carries a loaded session.
const SessionLoadedKey = "session_loaded"

// HasSession reports whether the request loaded a session.
func HasSession(c *fiber.Ctx) bool { v, _ := c.Locals(SessionLoadedKey).(bool); return v }

// Flash stores a message for the next page.
func (h *Handlers) Flash(c *fiber.Ctx, msg string) { h.sessionPut(c, "flash", msg) }

// sessionPut stores a value in the session of a browser request (bearer-token requests have none).
func (h *Handlers) sessionPut(c *fiber.Ctx, key string, v any) {
	if HasSession(c) {
		h.Sessions.Put(ctx(c), key, v)
	}
}

// Render writes a templ component as HTML.
func Render(c *fiber.Ctx, status int, comp templ.Component) error {
	c.Status(status).Type("html", "utf-8")
	return comp.Render(ctx(c), c.Response().BodyWriter())
}

// Actor is who makes the request, for the use cases.
func (h *Handlers) Actor(c *fiber.Ctx) kit.Actor { return ActorOf(Who(c)) }

// ActorOf is a principal as the use cases see it: its e-mail, permissions, tenant and role.
func ActorOf(p *Principal) kit.Actor {
	return kit.Actor{Email: p.User.Email, Perms: p.Perms, TenantID: p.User.Tenant(), Role: p.User.Role}
}

// Accepted answers the outcome of a use case that queues a job: 202 with the job's id,
// or its error (Fail: a refusal is a 422).
func (h *Handlers) Accepted(c *fiber.Ctx, j *store.Job, err error) error {
	if err != nil {
		return h.Fail(c, err)
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"job_id": j.ID})
}

// requestID returns the request id the log carries too.
func requestID(c *fiber.Ctx) string {
	if v, ok := c.Locals("requestid").(string); ok {
		return v
	}
	return ""
}

// maxPage bounds ?page=: past it the offset would overflow, and no list is that long.
const maxPage = 100000

// PageParam reads ?page= (from 1, at most maxPage) and returns it with the offset for a page size.
func PageParam(c *fiber.Ctx, size int) (int, int) {
	n, err := strconv.Atoi(c.Query("page", "1"))
	if err != nil || n < 1 {
		n = 1
	}
	n = min(n, maxPage)
	return n, (n - 1) * size
}

// Pages is how many pages of size hold total items (at least 1).
func Pages(total, size int) int {
	if total == 0 {
		return 1
	}
	return int(math.Ceil(float64(total) / float64(size)))
}

// BodyMap decodes a JSON object body; a malformed body is a 422 field error.
func BodyMap(c *fiber.Ctx, v any) error {
	if len(c.Body()) == 0 {
		return &problem.Invalid{Fields: map[string]string{"body": "Send a JSON object."}}
	}
	if err := c.BodyParser(v); err != nil {
		return &problem.Invalid{Fields: map[string]string{"body": "The body is not valid JSON for this request: " + jsonCause(err)}}
	}
	return nil
}

// jsonCause says in a few words what is wrong with a JSON body (no decoder internals).
func jsonCause(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te) && te.Field != "":
		return "the field " + te.Field + " must be " + jsonKind(te.Type.Kind().String()) + "."
	case errors.As(err, &te):
		return "a value has the wrong type."
	case errors.As(err, &se):
		return "syntax error at byte " + strconv.FormatInt(se.Offset, 10) + "."
	}
	return "send a JSON object."
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice", "array":
		return "a list"
	case "map", "struct", "ptr":
		return "an object"
	}
	return "a number"
}

// Redirect answers a form post: htmx follows HX-Redirect, browsers a 303. Only a
// same-origin relative path is followed; anything else goes to /regions.
func Redirect(c *fiber.Ctx, to string) error {
	to = SafePath(to, "/regions")
	if isHTMX(c) {
		c.Set("HX-Redirect", to)
		return c.SendStatus(fiber.StatusNoContent)
	}
	return c.Redirect(to, fiber.StatusSeeOther)
}

// SafePath returns to when it is a relative path on this origin ("/jobs/1?x=y"), and
// fallback otherwise: absolute and scheme-relative URLs ("//evil", "/\\evil"),
// "javascript:" and the like, and control characters are never redirected to.
func SafePath(to, fallback string) string {
	if to == "" || to[0] != '/' || strings.HasPrefix(to, "//") || strings.HasPrefix(to, "/\\") {
		return fallback
	}
	for _, r := range to {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return fallback
		}
	}
	u, err := url.Parse(to)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return fallback
	}
	return to
}

// RefererPath returns the path of the Referer when it is a page of this console (the
// same host), and fallback otherwise.
func RefererPath(c *fiber.Ctx, fallback string) string {
	ref := c.Get(fiber.HeaderReferer)
	u, err := url.Parse(ref)
	if ref == "" || err != nil || !strings.EqualFold(u.Host, c.Hostname()) {
		return fallback
	}
	p := u.EscapedPath()
	if u.RawQuery != "" {
		p += "?" + u.RawQuery
	}
	return SafePath(p, fallback)
}

// ErrorPage renders an error page for the Fiber error handler.
func (h *Handlers) ErrorPage(c *fiber.Ctx, code int, msg string) error {
	return Render(c, code, views.ErrorPage(h.Page(c, "Error", ""), code, msg))
}

// ClusterCtx bounds a cluster read of a request.
func (h *Handlers) ClusterCtx(c *fiber.Ctx) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx(c), nodes.ClusterReadTimeout)
}

// SessionGenerationKey is the session value that holds the generation of the user's
// sessions the session was signed in with (web/session.go signs out an older one).
const SessionGenerationKey = "session_generation"

// MayHandOutStar reports whether the caller may create a "*" token: a signed-in user,
// or a token that has "*" itself.
func (p *Principal) MayHandOutStar() bool {
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

// OptionalBody decodes a JSON object body when there is one.
func OptionalBody(c *fiber.Ctx, v any) error {
	if len(c.Body()) == 0 {
		return nil
	}
	return BodyMap(c, v)
}

// SubjectBody loads the route's subject with load and decodes the request's JSON body
// into an In.
func SubjectBody[S, In any](c *fiber.Ctx, load func(*fiber.Ctx) (S, error)) (S, In, error) {
	var in In
	s, err := load(c)
	if err == nil {
		err = BodyMap(c, &in)
	}
	return s, in, err
}

// RegionBody loads the region of the route and decodes the request's JSON body into an In.
func RegionBody[In any](h *Handlers, c *fiber.Ctx) (*store.Region, In, error) {
	return SubjectBody[*store.Region, In](c, h.RegionForm)
}

// DataAnswer answers {"data": v} with status, or the error that making v met.
func DataAnswer(h *Handlers, c *fiber.Ctx, status int, v any, err error) error {
	if err != nil {
		return h.Fail(c, err)
	}
	return c.Status(status).JSON(fiber.Map{"data": v})
}

// RegionJobAPI answers a use case that queues a job on the region of the route with the
// request's JSON body: 202 with the job, or its refusal.
func RegionJobAPI[T any](h *Handlers, c *fiber.Ctx, run func(context.Context, kit.Actor, *store.Region, T) (*store.Job, error)) error {
	r, in, err := RegionBody[T](h, c)
	if err != nil {
		return h.Fail(c, err)
	}
	j, err := run(ctx(c), h.Actor(c), r, in)
	return h.Accepted(c, j, err)
}

// RegionActionAPI answers a use case that queues a job on the region of the route.
func RegionActionAPI(h *Handlers, c *fiber.Ctx, run func(context.Context, kit.Actor, *store.Region) (*store.Job, error)) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	j, err := run(ctx(c), h.Actor(c), r)
	return h.Accepted(c, j, err)
}

// ListAnswer answers a list as {"data": [...]} (an empty array, never null), or the
// error that reading it met.
func ListAnswer[T any](h *Handlers, c *fiber.Ctx, xs []T, err error) error {
	if err != nil {
		return h.Fail(c, err)
	}
	if xs == nil {
		xs = []T{}
	}
	return c.JSON(fiber.Map{"data": xs})
}
