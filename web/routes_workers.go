package web

import (
	"runr.dev/console/store"
)

// workerRoutes are the routes of the Workers tab (nodes, dedicated workers, capacity).
func (s *Server) workerRoutes() []Route {
	h := s.Workloads
	return []Route{
		{Method: get, Path: "/api/knative-regions/:id/nodes", Perm: store.PermRegionsView, Handler: h.APINodes},
		{Method: get, Path: "/api/knative-regions/:id/nodes/:node/delete-preflight", Perm: store.PermRegionsView, Handler: h.APINodeDeletePreflight},
		{Method: post, Path: "/api/knative-regions/:id/nodes/:node/cordon", Perm: store.PermRegionsManage, Handler: h.APINodeAction("cordon")},
		{Method: post, Path: "/api/knative-regions/:id/nodes/:node/uncordon", Perm: store.PermRegionsManage, Handler: h.APINodeAction("uncordon")},
		{Method: post, Path: "/api/knative-regions/:id/nodes/:node/drain", Perm: store.PermRegionsManage, Handler: h.APINodeAction("drain")},
		{Method: del, Path: "/api/knative-regions/:id/nodes/:node", Perm: store.PermRegionsManage, Handler: h.APIDeleteNode},
		{Method: get, Path: "/api/knative-regions/:id/capacity", Perm: store.PermRegionsView, Handler: h.APICapacity},
		{Method: put, Path: "/api/knative-regions/:id/workers", Perm: store.PermRegionsManage, Handler: h.APISetWorkers},
		{Method: del, Path: "/api/knative-regions/:id/workers/:node", Perm: store.PermRegionsManage, Handler: h.APIRemoveWorker},
		{Method: put, Path: "/api/knative-regions/:id/overcommit", Perm: store.PermRegionsManage, Handler: h.APISetOvercommit},

		{Method: post, Path: "/regions/:id/workers", Perm: store.PermRegionsManage, Handler: h.WorkersForm},
		{Method: post, Path: "/regions/:id/overcommit", Perm: store.PermRegionsManage, Handler: h.OvercommitForm},
		{Method: post, Path: "/regions/:id/nodes/:node/:action", Perm: store.PermRegionsManage, Handler: h.NodeActionForm},
	}
}
