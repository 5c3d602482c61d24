package web

import "runr.dev/console/perm"

// sandboxRoutes are the routes of the Isolation tab (sandbox.manage) and of the Sandbox
// API's settings (sandboxes.manage).
func (s *Server) sandboxRoutes() []Route {
	h := s.Runtimes
	return []Route{
		{Method: get, Path: "/api/knative-regions/:id/sandbox", Perm: perm.SandboxManage, Handler: h.APISandbox},
		{Method: post, Path: "/api/knative-regions/:id/install-sandbox", Perm: perm.SandboxManage, Handler: h.APIInstallSandbox},
		{Method: post, Path: "/api/knative-regions/:id/uninstall-sandbox", Perm: perm.SandboxManage, Handler: h.APIUninstallSandbox},
		{Method: post, Path: "/api/knative-regions/:id/wasm", Perm: perm.SandboxManage, Handler: h.APIInstallSandbox},
		{Method: del, Path: "/api/knative-regions/:id/wasm", Perm: perm.SandboxManage, Handler: h.APIUninstallSandbox},
		{Method: post, Path: "/api/knative-regions/:id/probe-kvm", Perm: perm.SandboxManage, Handler: h.APIProbeSandbox},
		{Method: put, Path: "/api/knative-regions/:id/runtime-classes", Perm: perm.SandboxManage, Handler: h.APISetRuntimeClasses},
		{Method: get, Path: "/api/sandbox-regions/:id", Perm: perm.RegionsView, Handler: h.APIGetSandboxRegion},
		{Method: put, Path: "/api/sandbox-regions/:id", Perm: perm.SandboxesManage, Handler: h.APIPutSandboxRegion},

		{Method: post, Path: "/regions/:id/sandbox/install", Perm: perm.SandboxManage, Handler: h.SandboxInstallForm},
		{Method: post, Path: "/regions/:id/sandbox/uninstall", Perm: perm.SandboxManage, Handler: h.SandboxUninstallForm},
		{Method: post, Path: "/regions/:id/sandbox/probe", Perm: perm.SandboxManage, Handler: h.SandboxProbeForm},
		{Method: post, Path: "/regions/:id/sandbox/classes", Perm: perm.SandboxManage, Handler: h.SandboxClassesForm},
		{Method: post, Path: "/regions/:id/sandbox/settings", Perm: perm.SandboxesManage, Handler: h.SandboxSettingsForm},
	}
}
