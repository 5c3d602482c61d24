package web

import (
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"runr.dev/console/store"
)

// Route is one entry of the routes table: every route and the permission it needs.
type Route struct {
	Method  string
	Path    string
	Perm    string
	Handler fiber.Handler
	// Public routes skip sessions and authentication (health, metrics).
	Public bool
	// WebSocket routes answer 401/403 in JSON like the API.
	WebSocket bool
}

// Perm values that are not permissions.
const (
	// Anonymous routes load the session but need no user (the login page).
	Anonymous = "@anonymous"
	// Authenticated routes need a signed-in user or a token, and no permission.
	Authenticated = "@authenticated"
)

// Routes is the table of every route and its permission. The authorisation tests walk it.
func (s *Server) Routes() []Route {
	h := s.H
	get, post, put, patch, del := fiber.MethodGet, fiber.MethodPost, fiber.MethodPut, fiber.MethodPatch, fiber.MethodDelete
	_ = patch
	return []Route{
		{Method: get, Path: "/healthz", Handler: h.Healthz, Public: true},
		{Method: get, Path: "/readyz", Handler: h.Readyz, Public: true},
		{Method: get, Path: "/metrics", Handler: adaptor.HTTPHandler(promhttp.Handler()), Public: true},
		{Method: get, Path: "/api/version", Handler: h.APIVersion, Public: true},

		{Method: get, Path: "/login", Perm: Anonymous, Handler: h.LoginPage},
		{Method: post, Path: "/login", Perm: Anonymous, Handler: h.Login},
		{Method: post, Path: "/logout", Perm: Authenticated, Handler: h.Logout},
		{Method: get, Path: "/", Perm: Authenticated, Handler: func(c *fiber.Ctx) error { return c.Redirect("/regions", fiber.StatusSeeOther) }},

		{Method: get, Path: "/users", Perm: store.PermUsersView, Handler: h.UsersPage},
		{Method: post, Path: "/users", Perm: store.PermUsersManage, Handler: h.CreateUserForm},
		{Method: post, Path: "/users/:id/role", Perm: store.PermUsersManage, Handler: h.SetUserRoleForm},
		{Method: post, Path: "/users/:id/delete", Perm: store.PermUsersManage, Handler: h.DeleteUserForm},
		{Method: get, Path: "/api/users", Perm: store.PermUsersView, Handler: h.APIListUsers},
		{Method: post, Path: "/api/users", Perm: store.PermUsersManage, Handler: h.APICreateUser},
		{Method: put, Path: "/api/users/:id", Perm: store.PermUsersManage, Handler: h.APIUpdateUser},
		{Method: del, Path: "/api/users/:id", Perm: store.PermUsersManage, Handler: h.APIDeleteUser},

		{Method: get, Path: "/tokens", Perm: Authenticated, Handler: h.TokensPage},
		{Method: post, Path: "/tokens", Perm: store.PermTokensManage, Handler: h.CreateTokenForm},
		{Method: post, Path: "/tokens/:id/delete", Perm: Authenticated, Handler: h.DeleteTokenForm},
		{Method: get, Path: "/api/tokens", Perm: Authenticated, Handler: h.APIListTokens},
		{Method: post, Path: "/api/tokens", Perm: store.PermTokensManage, Handler: h.APICreateToken},
		{Method: del, Path: "/api/tokens/:id", Perm: Authenticated, Handler: h.APIDeleteToken},

		{Method: get, Path: "/regions", Perm: store.PermRegionsView, Handler: h.RegionsPage},
		{Method: get, Path: "/api/knative-regions", Perm: store.PermRegionsView, Handler: h.APIListRegions},
		{Method: get, Path: "/api/knative-regions/:id", Perm: store.PermRegionsView, Handler: h.APIGetRegion},
	}
}
