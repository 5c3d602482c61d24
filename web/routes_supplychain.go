package web

import (
	"runr.dev/console/store"
)

// supplyChainRoutes are the routes of the Supply chain tab (regions.supply_chain.manage).
func (s *Server) supplyChainRoutes() []Route {
	h := s.Runtimes
	return []Route{
		{Method: get, Path: "/api/knative-regions/:id/supply-chain", Perm: store.PermSupplyChainManage, Handler: h.APISupplyChain},
		{Method: put, Path: "/api/knative-regions/:id/supply-chain", Perm: store.PermSupplyChainManage, Handler: h.APIPutSupplyChain},
		{Method: del, Path: "/api/knative-regions/:id/supply-chain/admission", Perm: store.PermSupplyChainManage, Handler: h.APIRemoveAdmission},

		{Method: post, Path: "/regions/:id/supply-chain", Perm: store.PermSupplyChainManage, Handler: h.SupplyChainForm},
		{Method: post, Path: "/regions/:id/supply-chain/admission/delete", Perm: store.PermSupplyChainManage, Handler: h.AdmissionRemoveForm},
	}
}
