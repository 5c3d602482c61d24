package web

import "runr.dev/console/perm"

// reconcileRoutes are region:reconcile's: its dry run and its job.
func (s *Server) reconcileRoutes() []Route {
	h := s.Lifecycle
	return []Route{
		{Method: get, Path: "/api/reconcile", Perm: perm.RegionsManage, Handler: h.APIReconcilePlan},
		{Method: post, Path: "/api/reconcile", Perm: perm.RegionsManage, Handler: h.APIReconcile},
	}
}
