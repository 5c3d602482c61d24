package web

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/handlers"
	"runr.dev/console/ops/tenancy"
	"runr.dev/console/perm"
	"runr.dev/console/store"
)

// tenantRoutes are the Tenancy module's routes (RUNR_TENANCY=on; off, they do not
// exist): the tenants, their users, and the assignments of platform regions with quotas.
func (s *Server) tenantRoutes() []Route {
	if !s.Cfg.Tenancy {
		return nil
	}
	h := s.People
	return []Route{
		{Method: get, Path: "/tenants", Perm: perm.TenantsView, Handler: h.TenantsPage},
		{Method: post, Path: "/tenants", Perm: perm.TenantsManage, Handler: h.CreateTenantForm},
		{Method: post, Path: "/tenants/:id", Perm: perm.TenantsManage, Handler: h.RenameTenantForm},
		{Method: post, Path: "/tenants/:id/delete", Perm: perm.TenantsManage, Handler: h.DeleteTenantForm},
		{Method: post, Path: "/tenants/:id/users", Perm: perm.TenantsManage, Handler: h.CreateTenantUserForm},
		{Method: post, Path: "/tenants/:id/assignments", Perm: perm.TenantsManage, Handler: h.AssignForm},
		{Method: post, Path: "/regions/:id/mode", Perm: perm.RegionsManage, Handler: s.Regions.ModeForm},
		{Method: post, Path: "/regions/:id/assignments/:tenant", Perm: perm.TenantsManage, Handler: h.ChangeAssignmentForm},
		{Method: post, Path: "/regions/:id/assignments/:tenant/delete", Perm: perm.TenantsManage, Handler: h.UnassignForm},

		{Method: get, Path: "/api/tenants", Perm: perm.TenantsView, Handler: h.APIListTenants},
		{Method: post, Path: "/api/tenants", Perm: perm.TenantsManage, Handler: h.APICreateTenant},
		{Method: get, Path: "/api/tenants/:id", Perm: perm.TenantsView, Handler: h.APIGetTenant},
		{Method: put, Path: "/api/tenants/:id", Perm: perm.TenantsManage, Handler: h.APIRenameTenant},
		{Method: del, Path: "/api/tenants/:id", Perm: perm.TenantsManage, Handler: h.APIDeleteTenant},
		{Method: get, Path: "/api/tenants/:id/users", Perm: perm.TenantsView, Handler: h.APITenantUsers},
		{Method: post, Path: "/api/tenants/:id/users", Perm: perm.TenantsManage, Handler: h.APICreateTenantUser},
		{Method: get, Path: "/api/knative-regions/:id/assignments", Perm: perm.TenantsView, Handler: h.APIAssignments},
		{Method: post, Path: "/api/knative-regions/:id/assignments", Perm: perm.TenantsManage, Handler: h.APIAssign},
		{Method: put, Path: "/api/knative-regions/:id/assignments/:tenant_id", Perm: perm.TenantsManage, Handler: h.APIChangeAssignment},
		{Method: del, Path: "/api/knative-regions/:id/assignments/:tenant_id", Perm: perm.TenantsManage, Handler: h.APIUnassign},
	}
}

// regionPaths are the path prefixes whose :id is a region.
var regionPaths = []string{"/regions/:id", "/api/knative-regions/:id", "/api/sandbox-regions/:id", "/api/observability/regions/:id"}

// summaryPaths show a region's summary (its page, and GET of the region).
var summaryPaths = map[string]bool{"/regions/:id": true, "/api/knative-regions/:id": true}

// checkPaths run a check from a pod in the region's cluster and change nothing: the spec
// exempts the registry and Redis tests from region.mutable (they read the region's details).
var checkPaths = map[string]bool{"/api/knative-regions/:id/test-registry": true, "/api/knative-regions/:id/test-redis": true}

// RegionAccessOf says what a route does with the region of its path (ok false: it names
// no region). Every route that changes a region (any method but GET, the registry and
// Redis tests excepted) or hands out its kubeconfig, and the removal page, changes it;
// the region's own page and GET of the region show its summary; every other GET shows
// its details. Derived from the path and the method, so that a route added later is
// walled without being told.
func RegionAccessOf(r Route) (tenancy.RegionAccess, bool) {
	for _, p := range regionPaths {
		if r.Path != p && !strings.HasPrefix(r.Path, p+"/") {
			continue
		}
		switch {
		case checkPaths[r.Path]:
			return tenancy.RegionDetails, true
		case r.Method != fiber.MethodGet, strings.HasSuffix(r.Path, "/kubeconfig"), strings.HasSuffix(r.Path, "/remove"):
			return tenancy.RegionChange, true
		case summaryPaths[r.Path]:
			return tenancy.RegionSummary, true
		}
		return tenancy.RegionDetails, true
	}
	return 0, false
}

// walls makes the statements of a tenant user's request run in the tenant's walls (the
// database's row-level security): whatever a handler asks, it reads and changes the
// tenant's rows only.
func (s *Server) walls(c *fiber.Ctx) error {
	if p := handlers.Who(c); p != nil && p.User.Tenant() != "" {
		c.SetUserContext(store.WithTenant(c.UserContext(), p.User.Tenant()))
	}
	return c.Next()
}

// regionGate is region.mutable at the door of every route of a region (Tenancy module):
// the region must be one the caller sees (404 otherwise: another tenant's regions do not
// exist for it), and what the route does with it must be allowed (tenancy.CheckRegionAccess:
// a platform region is read-only for tenant users and shows them its summary only). A
// refusal ends the request: the handler never runs.
func (s *Server) regionGate(access tenancy.RegionAccess) fiber.Handler {
	return func(c *fiber.Ctx) error {
		p := handlers.Who(c)
		r, err := s.Store.RegionByID(c.UserContext(), c.Params("id"))
		if err != nil {
			return s.H.Fail(c, err)
		}
		if err := tenancy.CheckRegionAccess(handlers.ActorOf(p), r, access); err != nil {
			return s.H.Fail(c, err)
		}
		return c.Next()
	}
}
