package web

import "runr.dev/console/perm"

// supplyChainRoutes are the routes of the Supply chain tab (regions.supply_chain.manage).
func (s *Server) supplyChainRoutes() []Route {
	h := s.Runtimes
	return []Route{
		{Method: get, Path: "/api/knative-regions/:id/supply-chain", Perm: perm.SupplyChainManage, Handler: h.APISupplyChain},
		{Method: put, Path: "/api/knative-regions/:id/supply-chain", Perm: perm.SupplyChainManage, Handler: h.APIPutSupplyChain},
		{Method: del, Path: "/api/knative-regions/:id/supply-chain/admission", Perm: perm.SupplyChainManage, Handler: h.APIRemoveAdmission},

		{Method: post, Path: "/regions/:id/supply-chain", Perm: perm.SupplyChainManage, Handler: h.SupplyChainForm},
		{Method: post, Path: "/regions/:id/supply-chain/admission/delete", Perm: perm.SupplyChainManage, Handler: h.AdmissionRemoveForm},
	}
}
