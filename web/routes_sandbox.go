package web

import (
	"runr.dev/console/store"
)

// sandboxRoutes are the routes of the Isolation tab (sandbox.manage) and of the Sandbox
// API's settings (sandboxes.manage).
func (s *Server) sandboxRoutes() []Route {
	h := s.Runtimes
	return []Route{
		{Method: get, Path: "/api/knative-regions/:id/sandbox", Perm: store.PermSandboxManage, Handler: h.APISandbox},
		{Method: post, Path: "/api/knative-regions/:id/install-sandbox", Perm: store.PermSandboxManage, Handler: h.APIInstallSandbox},
		{Method: post, Path: "/api/knative-regions/:id/uninstall-sandbox", Perm: store.PermSandboxManage, Handler: h.APIUninstallSandbox},
		{Method: post, Path: "/api/knative-regions/:id/wasm", Perm: store.PermSandboxManage, Handler: h.APIInstallSandbox},
		{Method: del, Path: "/api/knative-regions/:id/wasm", Perm: store.PermSandboxManage, Handler: h.APIUninstallSandbox},
		{Method: post, Path: "/api/knative-regions/:id/probe-kvm", Perm: store.PermSandboxManage, Handler: h.APIProbeSandbox},
		{Method: put, Path: "/api/knative-regions/:id/runtime-classes", Perm: store.PermSandboxManage, Handler: h.APISetRuntimeClasses},
		{Method: get, Path: "/api/sandbox-regions/:id", Perm: store.PermRegionsView, Handler: h.APIGetSandboxRegion},
		{Method: put, Path: "/api/sandbox-regions/:id", Perm: store.PermSandboxesManage, Handler: h.APIPutSandboxRegion},

		{Method: post, Path: "/regions/:id/sandbox/install", Perm: store.PermSandboxManage, Handler: h.SandboxInstallForm},
		{Method: post, Path: "/regions/:id/sandbox/uninstall", Perm: store.PermSandboxManage, Handler: h.SandboxUninstallForm},
		{Method: post, Path: "/regions/:id/sandbox/probe", Perm: store.PermSandboxManage, Handler: h.SandboxProbeForm},
		{Method: post, Path: "/regions/:id/sandbox/classes", Perm: store.PermSandboxManage, Handler: h.SandboxClassesForm},
		{Method: post, Path: "/regions/:id/sandbox/settings", Perm: store.PermSandboxesManage, Handler: h.SandboxSettingsForm},
	}
}
