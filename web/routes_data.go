package web

import "runr.dev/console/perm"

// dataRoutes are the routes of the Data services tab (regions.data_services.manage;
// reading them needs regions.view), of the demo projects (regions.manage) and of the
// projects' bindings (projects.manage; reading them needs projects.view).
func (s *Server) dataRoutes() []Route {
	h := s.Workloads
	return []Route{
		{Method: get, Path: "/api/knative-regions/:id/data-services", Perm: perm.RegionsView, Handler: h.APIDataServices},
		{Method: post, Path: "/api/knative-regions/:id/data-services/:service", Perm: perm.DataServicesManage, Handler: h.APIInstallDataService},
		{Method: del, Path: "/api/knative-regions/:id/data-services/:service", Perm: perm.DataServicesManage, Handler: h.APIRemoveDataService},
		{Method: get, Path: "/api/knative-regions/:id/skupper", Perm: perm.RegionsView, Handler: h.APISkupper},
		{Method: post, Path: "/api/knative-regions/:id/skupper/site", Perm: perm.DataServicesManage, Handler: h.APISkupperSite},
		{Method: get, Path: "/api/knative-regions/:id/demo-projects", Perm: perm.RegionsView, Handler: h.APIDemoProjects},
		{Method: post, Path: "/api/knative-regions/:id/demo-projects", Perm: perm.RegionsManage, Handler: h.APIInstallDemos},
		{Method: del, Path: "/api/knative-regions/:id/demo-projects", Perm: perm.RegionsManage, Handler: h.APIRemoveDemos},
		{Method: get, Path: "/api/projects/:id/bindings", Perm: perm.ProjectsView, Handler: h.APIProjectBindings},
		{Method: post, Path: "/api/projects/:id/bindings", Perm: perm.ProjectsManage, Handler: h.APIBind},
		{Method: del, Path: "/api/projects/:id/bindings/:service", Perm: perm.ProjectsManage, Handler: h.APIUnbind},

		{Method: post, Path: "/regions/:id/data-services/:service/install", Perm: perm.DataServicesManage, Handler: h.DataInstallForm},
		{Method: post, Path: "/regions/:id/data-services/:service/remove", Perm: perm.DataServicesManage, Handler: h.DataRemoveForm},
		{Method: post, Path: "/regions/:id/skupper/site", Perm: perm.DataServicesManage, Handler: h.SkupperSiteForm},
		{Method: post, Path: "/regions/:id/demo-projects/install", Perm: perm.RegionsManage, Handler: h.DemoInstallForm},
		{Method: post, Path: "/regions/:id/demo-projects/remove", Perm: perm.RegionsManage, Handler: h.DemoRemoveForm},
		{Method: post, Path: "/projects/:id/bindings/add", Perm: perm.ProjectsManage, Handler: h.BindForm},
		{Method: post, Path: "/projects/:id/bindings/:service/remove", Perm: perm.ProjectsManage, Handler: h.UnbindForm},
	}
}
