package web

import "runr.dev/console/perm"

// billingRoutes are the Billing module's routes (RUNR_BILLING=on; off, they do not exist).
func (s *Server) billingRoutes() []Route {
	if !s.Cfg.Billing {
		return nil
	}
	h := s.Billing
	routes := []Route{
		{Method: get, Path: "/billing", Perm: perm.BillingView, Handler: h.SettingsPage},
		{Method: post, Path: "/billing/settings", Perm: perm.BillingManage, Handler: h.SettingsForm},
		{Method: post, Path: "/billing/test-event", Perm: perm.BillingManage, Handler: h.TestEventForm},
		{Method: post, Path: "/billing/events/:event/redeliver", Perm: perm.BillingManage, Handler: h.RedeliverForm},
		{Method: post, Path: "/regions/:id/billing", Perm: perm.BillingManage, Handler: h.RegionBillingForm},

		{Method: get, Path: "/api/billing/settings", Perm: perm.BillingView, Handler: h.APISettings},
		{Method: put, Path: "/api/billing/settings", Perm: perm.BillingManage, Handler: h.APIPutSettings},
		{Method: post, Path: "/api/billing/test-event", Perm: perm.BillingManage, Handler: h.APITestEvent},
		{Method: get, Path: "/api/billing/charges", Perm: perm.BillingView, Handler: h.APICharges},
		{Method: get, Path: "/api/billing/bills", Perm: perm.BillingView, Handler: h.APIBills},
		{Method: get, Path: "/api/billing/bills/:bill", Perm: perm.BillingView, Handler: h.APIBill},
		{Method: get, Path: "/api/billing/events", Perm: perm.BillingView, Handler: h.APIEvents},
		{Method: post, Path: "/api/billing/events/:event/redeliver", Perm: perm.BillingManage, Handler: h.APIRedeliver},
		{Method: get, Path: "/api/knative-regions/:id/billing", Perm: perm.BillingView, Handler: h.APIRegionBilling},
		{Method: put, Path: "/api/knative-regions/:id/billing", Perm: perm.BillingManage, Handler: h.APIPutRegionBilling},
	}
	if !s.Cfg.Tenancy {
		return routes
	}
	// Offers: with tenants, assigning a platform region is an offer the tenant answers.
	return append(routes,
		Route{Method: post, Path: "/billing/offers/:offer/accept", Perm: perm.BillingManage, Handler: h.AcceptOfferForm},
		Route{Method: post, Path: "/billing/offers/:offer/decline", Perm: perm.BillingManage, Handler: h.DeclineOfferForm},
		Route{Method: post, Path: "/billing/offers/:offer/withdraw", Perm: perm.TenantsManage, Handler: h.WithdrawOfferForm},
		Route{Method: get, Path: "/api/billing/offers", Perm: perm.BillingView, Handler: h.APIOffers},
		Route{Method: post, Path: "/api/billing/offers/:offer/accept", Perm: perm.BillingManage, Handler: h.APIAcceptOffer},
		Route{Method: post, Path: "/api/billing/offers/:offer/decline", Perm: perm.BillingManage, Handler: h.APIDeclineOffer},
		Route{Method: del, Path: "/api/billing/offers/:offer", Perm: perm.TenantsManage, Handler: h.APIWithdrawOffer},
	)
}
