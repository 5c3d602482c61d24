package web

import (
	"github.com/gofiber/fiber/v2"

	"runr.dev/console/handlers"

	"runr.dev/console/ops/knative"
	"runr.dev/console/perm"
)

// Route is one entry of the routes table: every route and the permission it needs.
type Route struct {
	Method string
	Path   string
	Perm   string
	// Also lists further permissions the route needs (all of them).
	Also    []string
	Handler fiber.Handler
	// Public routes skip sessions and authentication (health, version).
	Public bool
	// WebSocket routes answer 401/403 in JSON like the API.
	WebSocket bool
	// Agent routes authenticate a region's agent by its token.
	Agent bool
	// TokenPerm is a permission a bearer token needs besides Perm (a session does not):
	// a token lists and revokes tokens only with tokens.manage.
	TokenPerm string
}

// Perm values that are not permissions.
const (
	// Anonymous routes load the session but need no user (the login page).
	Anonymous = "@anonymous"
	// Authenticated routes need a signed-in user or a token, and no permission.
	Authenticated = "@authenticated"
)

// Routes is the table of every route and its permission, in groups. The authorisation
// tests walk it.
func (s *Server) Routes() []Route {
	var routes []Route
	for _, group := range [][]Route{s.publicRoutes(), s.userRoutes(), s.tokenRoutes(), s.regionPageRoutes(), s.projectRoutes(),
		s.platformRoutes(), s.jobRoutes(), s.regionAPIRoutes(), s.workerRoutes(), s.sandboxRoutes(), s.gpuRoutes(),
		s.supplyChainRoutes(), s.reconcileRoutes(), s.tenantRoutes(), s.dataRoutes(), s.billingRoutes()} {
		routes = append(routes, group...)
	}
	return routes
}

const (
	get, post, put, patch, del = fiber.MethodGet, fiber.MethodPost, fiber.MethodPut, fiber.MethodPatch, fiber.MethodDelete
)

// publicRoutes are the routes anyone may ask, the agents' socket and signing in.
func (s *Server) publicRoutes() []Route {
	h := s.H
	return []Route{
		{Method: get, Path: "/healthz", Handler: h.Healthz, Public: true},
		{Method: get, Path: "/readyz", Handler: h.Readyz, Public: true},
		{Method: get, Path: "/api/version", Handler: h.APIVersion, Public: true},
		{Method: get, Path: "/api/branding", Handler: h.APIBranding, Public: true},
		{Method: get, Path: "/api/branding/logo", Handler: handlers.BrandAsset(h.Cfg.Branding.Logo), Public: true},
		{Method: get, Path: "/api/branding/favicon", Handler: handlers.BrandAsset(h.Cfg.Branding.Favicon), Public: true},
		{Method: get, Path: "/api/internal/agent/ws", Handler: h.AgentSocket(), Agent: true, WebSocket: true},
		{Method: get, Path: "/login", Perm: Anonymous, Handler: h.LoginPage},
		{Method: post, Path: "/login", Perm: Anonymous, Handler: h.Login},
		{Method: post, Path: "/logout", Perm: Authenticated, Handler: h.Logout},
		{Method: get, Path: "/api/me", Perm: Authenticated, Handler: s.People.APIMe},
		// One's own account: the password change and "sign out other sessions" (a token
		// needs tokens.manage for them, as for the other credentials).
		{Method: get, Path: "/account", Perm: Authenticated, Handler: s.People.AccountPage},
		{Method: post, Path: "/account/password", Perm: Authenticated, TokenPerm: perm.TokensManage, Handler: s.People.ChangePasswordForm},
		{Method: post, Path: "/account/sessions/end-others", Perm: Authenticated, TokenPerm: perm.TokensManage, Handler: s.People.EndOtherSessionsForm},
		{Method: post, Path: "/api/me/password", Perm: Authenticated, TokenPerm: perm.TokensManage, Handler: s.People.APIChangePassword},
		{Method: post, Path: "/api/me/sessions/end-others", Perm: Authenticated, TokenPerm: perm.TokensManage, Handler: s.People.APIEndOtherSessions},
		{Method: get, Path: "/", Perm: Authenticated, Handler: func(c *fiber.Ctx) error { return c.Redirect("/regions", fiber.StatusSeeOther) }},
	}
}

// userRoutes are users.
func (s *Server) userRoutes() []Route {
	h := s.People
	return []Route{
		{Method: get, Path: "/users", Perm: perm.UsersView, Handler: h.UsersPage},
		{Method: post, Path: "/users", Perm: perm.UsersManage, Handler: h.CreateUserForm},
		{Method: post, Path: "/users/:id/role", Perm: perm.UsersManage, Handler: h.SetUserRoleForm},
		{Method: post, Path: "/users/:id/delete", Perm: perm.UsersManage, Handler: h.DeleteUserForm},
		{Method: get, Path: "/api/users", Perm: perm.UsersView, Handler: h.APIListUsers},
		{Method: post, Path: "/api/users", Perm: perm.UsersManage, Handler: h.APICreateUser},
		{Method: put, Path: "/api/users/:id", Perm: perm.UsersManage, Handler: h.APIUpdateUser},
		{Method: del, Path: "/api/users/:id", Perm: perm.UsersManage, Handler: h.APIDeleteUser},
	}
}

// tokenRoutes are API tokens.
func (s *Server) tokenRoutes() []Route {
	h := s.People
	return []Route{
		{Method: get, Path: "/tokens", Perm: Authenticated, TokenPerm: perm.TokensManage, Handler: h.TokensPage},
		{Method: post, Path: "/tokens", Perm: perm.TokensManage, Handler: h.CreateTokenForm},
		{Method: post, Path: "/tokens/:id/delete", Perm: Authenticated, TokenPerm: perm.TokensManage, Handler: h.DeleteTokenForm},
		{Method: get, Path: "/api/tokens", Perm: Authenticated, TokenPerm: perm.TokensManage, Handler: h.APIListTokens},
		{Method: post, Path: "/api/tokens", Perm: perm.TokensManage, Handler: h.APICreateToken},
		{Method: del, Path: "/api/tokens/:id", Perm: Authenticated, TokenPerm: perm.TokensManage, Handler: h.APIDeleteToken},
	}
}

// regionPageRoutes are the console's region pages and their forms.
func (s *Server) regionPageRoutes() []Route {
	h := s.H
	return []Route{
		{Method: get, Path: "/regions", Perm: perm.RegionsView, Handler: h.RegionsPage},
		{Method: get, Path: "/regions/new", Perm: perm.RegionsManage, Handler: s.Lifecycle.WizardNewPage},
		{Method: post, Path: "/regions/new/check", Perm: perm.RegionsManage, Handler: s.Lifecycle.WizardCheck},
		{Method: post, Path: "/regions/new/edit", Perm: perm.RegionsManage, Handler: s.Lifecycle.WizardEdit},
		{Method: post, Path: "/regions/new/setup", Perm: perm.RegionsManage, Also: []string{perm.RegistryManage}, Handler: s.Lifecycle.WizardSetup},
		{Method: get, Path: "/regions/setups/:token", Perm: perm.RegionsView, Handler: s.Lifecycle.WizardSetupPage},
		{Method: get, Path: "/regions/:id", Perm: perm.RegionsView, Handler: h.RegionPage},
		{Method: get, Path: "/regions/:id/tabs/:tab", Perm: perm.RegionsView, Handler: h.RegionTab},
		{Method: get, Path: "/regions/:id/wizard", Perm: perm.RegionsView, Handler: s.Lifecycle.RegionWizardPage},
		{Method: post, Path: "/regions/:id/settings", Perm: perm.RegionsManage, Handler: s.Regions.SettingsForm},
		{Method: post, Path: "/regions/:id/check", Perm: perm.RegionsManage, Handler: s.Regions.CheckNowForm},
		{Method: post, Path: "/regions/:id/status", Perm: perm.RegionsManage, Handler: s.Regions.StatusForm},
		{Method: post, Path: "/regions/:id/function-tls", Perm: perm.RegionsManage, Handler: s.Regions.FunctionTLSForm},
		{Method: post, Path: "/regions/:id/function-tls/delete", Perm: perm.RegionsManage, Handler: s.Regions.DeleteFunctionTLSForm},
		{Method: post, Path: "/regions/:id/monitoring", Perm: perm.RegionsManage, Handler: s.Regions.MonitoringForm},
		{Method: post, Path: "/regions/:id/knative/:action", Perm: perm.RegionsManage, Handler: s.Lifecycle.KnativeForm},
		{Method: post, Path: "/regions/:id/registry", Perm: perm.RegistryManage, Handler: s.Lifecycle.RegistryForm},
		{Method: post, Path: "/regions/:id/registry/delete", Perm: perm.RegistryManage, Handler: s.Lifecycle.RegistryDeleteForm},
		{Method: post, Path: "/regions/:id/registry/rolling-restart", Perm: perm.RegistryManage, Handler: s.Lifecycle.RollingRestartForm},
		{Method: post, Path: "/regions/:id/redis", Perm: perm.RegionsManage, Handler: s.Lifecycle.RedisForm},
		{Method: post, Path: "/regions/:id/redis/:action", Perm: perm.RegionsManage, Handler: s.Lifecycle.RedisActionForm},
		{Method: get, Path: "/regions/:id/remove", Perm: perm.RegionsManage, Handler: s.Regions.RemoveRegionPage},
		{Method: post, Path: "/regions/:id/delete", Perm: perm.RegionsManage, Handler: s.Regions.RemoveRegionForm},
		{Method: post, Path: "/regions/:id/migrate", Perm: perm.RegionsManage, Handler: s.Lifecycle.MigrateForm},
		{Method: post, Path: "/regions/:id/migration/:action", Perm: perm.RegionsManage, Handler: s.Lifecycle.MigrationActionForm},
	}
}

// projectRoutes are projects.
func (s *Server) projectRoutes() []Route {
	h := s.Workloads
	return []Route{
		{Method: get, Path: "/projects", Perm: perm.ProjectsView, Handler: h.ProjectsPage},
		{Method: post, Path: "/projects", Perm: perm.ProjectsManage, Handler: h.CreateProjectForm},
		{Method: post, Path: "/projects/:id/delete", Perm: perm.ProjectsManage, Handler: h.ProjectActionForm},
		{Method: post, Path: "/projects/:id/:action", Perm: perm.ProjectsDeploy, Handler: h.ProjectActionForm},
		{Method: get, Path: "/api/projects", Perm: perm.ProjectsView, Handler: h.APIListProjects},
		{Method: post, Path: "/api/projects", Perm: perm.ProjectsManage, Handler: h.APICreateProject},
		{Method: get, Path: "/api/projects/:id", Perm: perm.ProjectsView, Handler: h.APIGetProject},
		{Method: put, Path: "/api/projects/:id", Perm: perm.ProjectsManage, Handler: h.APIUpdateProject},
		{Method: del, Path: "/api/projects/:id", Perm: perm.ProjectsManage, Handler: h.APIProjectAction("delete")},
		{Method: post, Path: "/api/projects/:id/deploy", Perm: perm.ProjectsDeploy, Handler: h.APIProjectAction("deploy")},
		{Method: post, Path: "/api/projects/:id/stop", Perm: perm.ProjectsDeploy, Handler: h.APIProjectAction("stop")},
		{Method: post, Path: "/api/projects/:id/resume", Perm: perm.ProjectsDeploy, Handler: h.APIProjectAction("resume")},
	}
}

// platformRoutes are the platform settings.
func (s *Server) platformRoutes() []Route {
	h := s.Lifecycle
	return []Route{
		{Method: get, Path: "/platform", Perm: perm.SettingsView, Handler: h.PlatformPage},
		{Method: post, Path: "/platform", Perm: perm.SettingsManage, Handler: h.PlatformForm},
		{Method: get, Path: "/api/settings", Perm: perm.SettingsView, Handler: h.APIGetSettings},
		{Method: patch, Path: "/api/settings", Perm: perm.SettingsManage, Handler: h.APIPatchSettings},
		{Method: post, Path: "/regions/setups/:token/retry", Perm: perm.RegionsManage, Also: []string{perm.RegistryManage}, Handler: h.WizardRetry},
	}
}

// jobRoutes are jobs, their sockets and the banners.
func (s *Server) jobRoutes() []Route {
	h := s.H
	return []Route{
		{Method: get, Path: "/jobs", Perm: perm.JobsView, Handler: s.Jobs.JobsPage},
		{Method: get, Path: "/jobs/:id", Perm: perm.JobsView, Handler: s.Jobs.JobPage},
		{Method: post, Path: "/jobs/:id/retry", Perm: perm.RegionsManage, Handler: s.Jobs.RetryJobForm},
		{Method: post, Path: "/jobs/:id/cancel", Perm: perm.RegionsManage, Handler: s.Jobs.CancelJobForm},
		{Method: get, Path: "/ws/jobs/:id", Perm: perm.JobsView, Handler: h.JobSocket(), WebSocket: true},
		{Method: get, Path: "/ws/banners", Perm: Authenticated, Handler: h.BannerSocket(), WebSocket: true},
		{Method: get, Path: "/api/jobs", Perm: perm.JobsView, Handler: s.Jobs.APIListJobs},
		{Method: get, Path: "/api/jobs/:id", Perm: perm.JobsView, Handler: s.Jobs.APIGetJob},
		{Method: get, Path: "/api/jobs/:id/events", Perm: perm.JobsView, Handler: s.Jobs.APIJobEvents},
		{Method: post, Path: "/api/jobs/:id/retry", Perm: perm.RegionsManage, Handler: s.Jobs.APIRetryJob},
		{Method: post, Path: "/api/jobs/:id/cancel", Perm: perm.RegionsManage, Handler: s.Jobs.APICancelJob},
	}
}

// regionAPIRoutes are the JSON API of regions.
func (s *Server) regionAPIRoutes() []Route {
	h := s.H
	return []Route{
		{Method: post, Path: "/api/registry-setup/start", Perm: perm.RegionsManage, Also: []string{perm.RegistryManage}, Handler: s.Lifecycle.APISetupStart},
		{Method: get, Path: "/api/registry-setup/:token/status", Perm: perm.RegionsView, Handler: s.Lifecycle.APISetupStatus},
		{Method: post, Path: "/api/registry-setup/:token/retry", Perm: perm.RegionsManage, Also: []string{perm.RegistryManage}, Handler: s.Lifecycle.APISetupRetry},
		{Method: post, Path: "/api/knative-regions/check", Perm: perm.RegionsManage, Handler: s.Lifecycle.APICheckRegion},
		{Method: post, Path: "/api/knative-regions", Perm: perm.RegionsManage, Handler: s.Lifecycle.APICreateRegion},
		{Method: get, Path: "/api/knative-regions/:id/kubeconfig", Perm: perm.RegionsKubeconfig, Handler: s.Lifecycle.APIKubeconfig},
		{Method: post, Path: "/api/knative-regions/:id/registry", Perm: perm.RegistryManage, Handler: s.Lifecycle.APISetRegistry},
		{Method: del, Path: "/api/knative-regions/:id/registry", Perm: perm.RegistryManage, Handler: s.Lifecycle.APIDeleteRegistry},
		{Method: post, Path: "/api/knative-regions/:id/test-registry", Perm: perm.RegistryManage, Handler: s.Lifecycle.APITestRegistry},
		{Method: post, Path: "/api/knative-regions/:id/registry/rolling-restart", Perm: perm.RegistryManage, Handler: s.Lifecycle.APIRollingRestart},
		{Method: get, Path: "/api/knative-regions/:id/compatible-versions", Perm: perm.RegionsView, Handler: s.Lifecycle.APICompatibleVersions},
		{Method: post, Path: "/api/knative-regions/:id/install-operator", Perm: perm.RegionsManage, Handler: s.Lifecycle.KnativeAction(knative.KindInstallOperator)},
		{Method: post, Path: "/api/knative-regions/:id/install-serving", Perm: perm.RegionsManage, Handler: s.Lifecycle.KnativeAction(knative.KindInstallServing)},
		{Method: post, Path: "/api/knative-regions/:id/install-knative", Perm: perm.RegionsManage, Handler: s.Lifecycle.KnativeAction(knative.KindInstallKnative)},
		{Method: post, Path: "/api/knative-regions/:id/upgrade", Perm: perm.RegionsManage, Handler: s.Lifecycle.KnativeAction(knative.KindUpgradeServing)},
		{Method: post, Path: "/api/knative-regions/:id/uninstall-serving", Perm: perm.RegionsManage, Handler: s.Lifecycle.KnativeAction(knative.KindUninstallServing)},
		{Method: post, Path: "/api/knative-regions/:id/uninstall-operator", Perm: perm.RegionsManage, Handler: s.Lifecycle.KnativeAction(knative.KindUninstallOperator)},
		{Method: post, Path: "/api/knative-regions/:id/uninstall-knative", Perm: perm.RegionsManage, Handler: s.Lifecycle.KnativeAction(knative.KindUninstallKnative)},
		{Method: post, Path: "/api/knative-regions/:id/redis", Perm: perm.RegionsManage, Handler: s.Lifecycle.APISetRedis},
		{Method: del, Path: "/api/knative-regions/:id/redis", Perm: perm.RegionsManage, Handler: s.Lifecycle.APIDeleteRedis},
		{Method: post, Path: "/api/knative-regions/:id/test-redis", Perm: perm.RegionsManage, Handler: s.Lifecycle.APITestRedis},
		{Method: put, Path: "/api/observability/regions/:id/tracing", Perm: perm.RegionsManage, Handler: s.Lifecycle.APISetTracing},
		{Method: del, Path: "/api/observability/regions/:id/tracing", Perm: perm.RegionsManage, Handler: s.Lifecycle.APIRemoveTracing},
		{Method: post, Path: "/regions/:id/tracing", Perm: perm.RegionsManage, Handler: s.Lifecycle.TracingForm},
		{Method: post, Path: "/regions/:id/tracing/remove", Perm: perm.RegionsManage, Handler: s.Lifecycle.TracingRemoveForm},
		{Method: get, Path: "/api/knative-regions", Perm: perm.RegionsView, Handler: h.APIListRegions},
		{Method: get, Path: "/api/knative-regions/:id", Perm: perm.RegionsView, Handler: s.Regions.APIGetRegion},
		{Method: put, Path: "/api/knative-regions/:id", Perm: perm.RegionsManage, Handler: s.Regions.APIUpdateRegion},
		{Method: del, Path: "/api/knative-regions/:id", Perm: perm.RegionsManage, Handler: s.Regions.APIDeleteRegion},
		{Method: put, Path: "/api/knative-regions/:id/settings", Perm: perm.RegionsManage, Handler: s.Regions.APIUpdateSettings},
		{Method: post, Path: "/api/knative-regions/:id/migrate", Perm: perm.RegionsManage, Handler: s.Lifecycle.APIMigrate},
		{Method: get, Path: "/api/knative-regions/:id/migration-status", Perm: perm.RegionsView, Handler: s.Lifecycle.APIMigrationStatus},
		{Method: post, Path: "/api/knative-regions/:id/complete-migration", Perm: perm.RegionsManage, Handler: s.Lifecycle.APICompleteMigration},
		{Method: post, Path: "/api/knative-regions/:id/rollback-migration", Perm: perm.RegionsManage, Handler: s.Lifecycle.APIRollbackMigration},
		{Method: post, Path: "/api/knative-regions/:id/complete-domain-migration", Perm: perm.RegionsManage, Handler: s.Lifecycle.APICompleteDomainMigration},
		{Method: post, Path: "/api/knative-regions/:id/check-status", Perm: perm.RegionsManage, Handler: s.Regions.APICheckNow},
		{Method: put, Path: "/api/knative-regions/:id/monitoring", Perm: perm.RegionsManage, Handler: s.Regions.APIUpdateMonitoring},
		{Method: put, Path: "/api/knative-regions/:id/function-tls", Perm: perm.RegionsManage, Handler: s.Regions.APISetFunctionTLS},
		{Method: del, Path: "/api/knative-regions/:id/function-tls", Perm: perm.RegionsManage, Handler: s.Regions.APIDeleteFunctionTLS},
	}
}
