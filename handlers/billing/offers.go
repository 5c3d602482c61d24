package billing

import (
	"github.com/gofiber/fiber/v2"

	"runr.dev/console/handlers"
)

// offerAnswer is the body of an acceptance.
type offerAnswer struct {
	MarkupPercent string `json:"markup_percent"`
}

// APIOffers is GET /api/billing/offers: a tenant's user its tenant's offers, the
// platform every one.
func (h *Handlers) APIOffers(c *fiber.Ctx) error {
	os, err := h.svc().Offers(c.UserContext(), h.Actor(c))
	return handlers.DataAnswer(h.Handlers, c, fiber.StatusOK, os, err)
}

// APIAcceptOffer is POST /api/billing/offers/{id}/accept {"markup_percent": "15"}: the
// region is assigned to the tenant.
func (h *Handlers) APIAcceptOffer(c *fiber.Ctx) error {
	var in offerAnswer
	if err := handlers.BodyMap(c, &in); err != nil {
		return h.Fail(c, err)
	}
	o, err := h.svc().AcceptOffer(c.UserContext(), h.Actor(c), c.Params("offer"), in.MarkupPercent)
	return handlers.DataAnswer(h.Handlers, c, fiber.StatusOK, o, err)
}

// APIDeclineOffer is POST /api/billing/offers/{id}/decline.
func (h *Handlers) APIDeclineOffer(c *fiber.Ctx) error {
	o, err := h.svc().DeclineOffer(c.UserContext(), h.Actor(c), c.Params("offer"))
	return handlers.DataAnswer(h.Handlers, c, fiber.StatusOK, o, err)
}

// APIWithdrawOffer is DELETE /api/billing/offers/{id}: the platform takes an open offer back.
func (h *Handlers) APIWithdrawOffer(c *fiber.Ctx) error {
	if err := h.svc().WithdrawOffer(c.UserContext(), h.Actor(c), c.Params("offer")); err != nil {
		return h.Fail(c, err)
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// AcceptOfferForm accepts an offer from Settings → Billing.
func (h *Handlers) AcceptOfferForm(c *fiber.Ctx) error {
	markup := c.FormValue("markup_percent")
	o, err := h.svc().AcceptOffer(c.UserContext(), h.Actor(c), c.Params("offer"), markup)
	flash := ""
	if err == nil {
		flash = "Region " + o.RegionName + " accepted with a markup of " + markup + " %: it is yours to deploy to."
	}
	return h.settingsOutcome(c, map[string]string{"markup_percent": markup}, err, flash)
}

// DeclineOfferForm declines an offer from Settings → Billing.
func (h *Handlers) DeclineOfferForm(c *fiber.Ctx) error {
	o, err := h.svc().DeclineOffer(c.UserContext(), h.Actor(c), c.Params("offer"))
	flash := ""
	if err == nil {
		flash = "The offer of " + o.RegionName + " was declined."
	}
	return h.settingsOutcome(c, nil, err, flash)
}

// WithdrawOfferForm takes an open offer back from Settings → Billing.
func (h *Handlers) WithdrawOfferForm(c *fiber.Ctx) error {
	err := h.svc().WithdrawOffer(c.UserContext(), h.Actor(c), c.Params("offer"))
	return h.settingsOutcome(c, nil, err, "The offer was withdrawn.")
}
