package web

import (
	"runr.dev/console/store"
)

// gpuRoutes are the routes of the GPU tab (regions.gpu.manage; reading the GPUs needs
// regions.view).
func (s *Server) gpuRoutes() []Route {
	h := s.Runtimes
	return []Route{
		{Method: get, Path: "/api/knative-regions/:id/gpu", Perm: store.PermRegionsView, Handler: h.APIGPU},
		{Method: post, Path: "/api/knative-regions/:id/gpu/install", Perm: store.PermGPUManage, Handler: h.APIInstallGPU},
		{Method: post, Path: "/api/knative-regions/:id/gpu/uninstall", Perm: store.PermGPUManage, Handler: h.APIUninstallGPU},
		{Method: put, Path: "/api/knative-regions/:id/gpu/model-storage", Perm: store.PermGPUManage, Handler: h.APISetModelStorage},

		{Method: post, Path: "/regions/:id/gpu/install", Perm: store.PermGPUManage, Handler: h.GPUInstallForm},
		{Method: post, Path: "/regions/:id/gpu/uninstall", Perm: store.PermGPUManage, Handler: h.GPUUninstallForm},
		{Method: post, Path: "/regions/:id/gpu/model-storage", Perm: store.PermGPUManage, Handler: h.ModelStorageForm},
	}
}
