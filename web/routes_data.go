package web

import (
	"runr.dev/console/store"
)

// dataRoutes are the routes of the Data services tab (regions.data_services.manage;
// reading them needs regions.view), of the demo projects (regions.manage) and of the
// projects' bindings (projects.manage; reading them needs projects.view).
func (s *Server) dataRoutes() []Route {
	h := s.Workloads
	return []Route{
		{Method: get, Path: "/api/knative-regions/:id/data-services", Perm: store.PermRegionsView, Handler: h.APIDataServices},
		{Method: post, Path: "/api/knative-regions/:id/data-services/:service", Perm: store.PermDataServicesManage, Handler: h.APIInstallDataService},
		{Method: del, Path: "/api/knative-regions/:id/data-services/:service", Perm: store.PermDataServicesManage, Handler: h.APIRemoveDataService},
		{Method: get, Path: "/api/knative-regions/:id/skupper", Perm: store.PermRegionsView, Handler: h.APISkupper},
		{Method: post, Path: "/api/knative-regions/:id/skupper/site", Perm: store.PermDataServicesManage, Handler: h.APISkupperSite},
		{Method: get, Path: "/api/knative-regions/:id/demo-projects", Perm: store.PermRegionsView, Handler: h.APIDemoProjects},
		{Method: post, Path: "/api/knative-regions/:id/demo-projects", Perm: store.PermRegionsManage, Handler: h.APIInstallDemos},
		{Method: del, Path: "/api/knative-regions/:id/demo-projects", Perm: store.PermRegionsManage, Handler: h.APIRemoveDemos},
		{Method: get, Path: "/api/projects/:id/bindings", Perm: store.PermProjectsView, Handler: h.APIProjectBindings},
		{Method: post, Path: "/api/projects/:id/bindings", Perm: store.PermProjectsManage, Handler: h.APIBind},
		{Method: del, Path: "/api/projects/:id/bindings/:service", Perm: store.PermProjectsManage, Handler: h.APIUnbind},

		{Method: post, Path: "/regions/:id/data-services/:service/install", Perm: store.PermDataServicesManage, Handler: h.DataInstallForm},
		{Method: post, Path: "/regions/:id/data-services/:service/remove", Perm: store.PermDataServicesManage, Handler: h.DataRemoveForm},
		{Method: post, Path: "/regions/:id/skupper/site", Perm: store.PermDataServicesManage, Handler: h.SkupperSiteForm},
		{Method: post, Path: "/regions/:id/demo-projects/install", Perm: store.PermRegionsManage, Handler: h.DemoInstallForm},
		{Method: post, Path: "/regions/:id/demo-projects/remove", Perm: store.PermRegionsManage, Handler: h.DemoRemoveForm},
		{Method: post, Path: "/projects/:id/bindings/add", Perm: store.PermProjectsManage, Handler: h.BindForm},
		{Method: post, Path: "/projects/:id/bindings/:service/remove", Perm: store.PermProjectsManage, Handler: h.UnbindForm},
	}
}
