package web

import "runr.dev/console/perm"

// gpuRoutes are the routes of the GPU tab (regions.gpu.manage; reading the GPUs needs
// regions.view).
func (s *Server) gpuRoutes() []Route {
	h := s.Runtimes
	return []Route{
		{Method: get, Path: "/api/knative-regions/:id/gpu", Perm: perm.RegionsView, Handler: h.APIGPU},
		{Method: post, Path: "/api/knative-regions/:id/gpu/install", Perm: perm.GPUManage, Handler: h.APIInstallGPU},
		{Method: post, Path: "/api/knative-regions/:id/gpu/uninstall", Perm: perm.GPUManage, Handler: h.APIUninstallGPU},
		{Method: put, Path: "/api/knative-regions/:id/gpu/model-storage", Perm: perm.GPUManage, Handler: h.APISetModelStorage},

		{Method: post, Path: "/regions/:id/gpu/install", Perm: perm.GPUManage, Handler: h.GPUInstallForm},
		{Method: post, Path: "/regions/:id/gpu/uninstall", Perm: perm.GPUManage, Handler: h.GPUUninstallForm},
		{Method: post, Path: "/regions/:id/gpu/model-storage", Perm: perm.GPUManage, Handler: h.ModelStorageForm},
	}
}
