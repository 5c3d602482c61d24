package web

import "runr.dev/console/perm"

// workerRoutes are the routes of the Workers tab (nodes, dedicated workers, capacity).
func (s *Server) workerRoutes() []Route {
	h := s.Workloads
	return []Route{
		{Method: get, Path: "/api/knative-regions/:id/nodes", Perm: perm.RegionsView, Handler: h.APINodes},
		{Method: get, Path: "/api/knative-regions/:id/nodes/:node/delete-preflight", Perm: perm.RegionsView, Handler: h.APINodeDeletePreflight},
		{Method: post, Path: "/api/knative-regions/:id/nodes-probe", Perm: perm.RegionsManage, Handler: h.APIProbeNodes},
		{Method: post, Path: "/api/knative-regions/:id/kubernetes-upgrade", Perm: perm.RegionsManage, Handler: h.APIUpgradeKubernetes},
		{Method: post, Path: "/api/knative-regions/:id/nodes/:node/cordon", Perm: perm.RegionsManage, Handler: h.APINodeAction("cordon")},
		{Method: post, Path: "/api/knative-regions/:id/nodes/:node/uncordon", Perm: perm.RegionsManage, Handler: h.APINodeAction("uncordon")},
		{Method: post, Path: "/api/knative-regions/:id/nodes/:node/drain", Perm: perm.RegionsManage, Handler: h.APINodeAction("drain")},
		{Method: del, Path: "/api/knative-regions/:id/nodes/:node", Perm: perm.RegionsManage, Handler: h.APIDeleteNode},
		{Method: get, Path: "/api/knative-regions/:id/capacity", Perm: perm.RegionsView, Handler: h.APICapacity},
		{Method: put, Path: "/api/knative-regions/:id/workers", Perm: perm.RegionsManage, Handler: h.APISetWorkers},
		{Method: del, Path: "/api/knative-regions/:id/workers/:node", Perm: perm.RegionsManage, Handler: h.APIRemoveWorker},
		{Method: put, Path: "/api/knative-regions/:id/overcommit", Perm: perm.RegionsManage, Handler: h.APISetOvercommit},

		{Method: post, Path: "/regions/:id/workers", Perm: perm.RegionsManage, Handler: h.WorkersForm},
		{Method: post, Path: "/regions/:id/overcommit", Perm: perm.RegionsManage, Handler: h.OvercommitForm},
		{Method: post, Path: "/regions/:id/nodes-probe", Perm: perm.RegionsManage, Handler: h.ProbeNodesForm},
		{Method: post, Path: "/regions/:id/kubernetes-upgrade", Perm: perm.RegionsManage, Handler: h.UpgradeKubernetesForm},
		{Method: post, Path: "/regions/:id/nodes/:node/:action", Perm: perm.RegionsManage, Handler: h.NodeActionForm},
	}
}
