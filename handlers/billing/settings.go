package billing

import (
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/handlers"
	"runr.dev/console/ops/billing"
	"runr.dev/console/perm"
	"runr.dev/console/store"
	"runr.dev/console/store/billingdb"
	"runr.dev/console/views"
)

// SettingsPage is Settings → Billing.
func (h *Handlers) SettingsPage(c *fiber.Ctx) error {
	return h.renderSettings(c, fiber.StatusOK, views.Form{})
}

// renderSettings renders Settings → Billing with a form's values and errors.
func (h *Handlers) renderSettings(c *fiber.Ctx, status int, f views.Form) error {
	ctx, who := c.UserContext(), handlers.Who(c)
	tenant := h.Actor(c).TenantID
	set, err := h.svc().Settings(ctx)
	if err != nil {
		return h.Fail(c, err)
	}
	start, _ := billing.PeriodOf(h.svc().Now())
	charges, err := h.svc().Charges(ctx, tenant, billing.Query{Period: start.Format("2006-01"), PerPage: 200})
	if err != nil {
		return h.Fail(c, err)
	}
	bills, err := h.svc().Bills(ctx, tenant, billing.Query{PerPage: 24})
	if err != nil {
		return h.Fail(c, err)
	}
	events, err := h.svc().Events(ctx, tenant, "", billing.Query{PerPage: 50})
	if err != nil {
		return h.Fail(c, err)
	}
	regions, err := h.svc().Regions(ctx, tenant)
	if err != nil {
		return h.Fail(c, err)
	}
	if f.Values == nil {
		f.Values = map[string]string{"webhook_url": set.WebhookURL}
	}
	d := views.BillingSettingsData{Currencies: handlers.OptionsOf(set.Currencies, set.Currency), SecretSet: set.WebhookSecretSet,
		CanManage: who.Perms[perm.BillingManage] && tenant == "", Form: f, Charges: chargeRows(charges), Currency: set.Currency}
	if set.WebhookFromChart {
		d.WebhookFromChart = set.WebhookURL
	}
	if h.Cfg.Tenancy {
		if err := h.fillOffers(c, &d); err != nil {
			return h.Fail(c, err)
		}
	}
	for _, r := range regions {
		row := views.RegionPriceRow{ID: r.RegionID, Name: r.Region, Type: "pay as you go",
			Prices: r.Prices.VCPUHour + " per vCPU-hour, " + r.Prices.MemoryGiBHour + " per GiB-hour, " + r.Prices.GPUHour + " per GPU-hour"}
		if r.Type == "fixed" {
			row.Type, row.Prices = "fixed resources", r.Prices.FixedPeriod+" per month"
		}
		d.Regions = append(d.Regions, row)
	}
	for _, b := range bills {
		account := "platform"
		if b.TenantID != nil {
			account = "tenant " + *b.TenantID
		}
		d.Bills = append(d.Bills, views.BillRow{ID: b.ID, Account: account, Period: b.PeriodStart.Format("2006-01"), Total: b.Total, Lines: len(b.Lines.V)})
	}
	for _, e := range events {
		d.Events = append(d.Events, views.EventRow{ID: e.ID, Type: e.Type, Status: e.Status, Attempts: e.Attempts,
			When: e.CreatedAt.UTC().Format("2006-01-02 15:04 UTC"), Error: e.LastError, Dead: e.Status == billingdb.EventDead})
	}
	return handlers.Render(c, status, views.BillingSettings(h.Page(c, "Billing", "billing"), d))
}

// fillOffers lists the offers the user sees, and what it may do with them.
func (h *Handlers) fillOffers(c *fiber.Ctx, d *views.BillingSettingsData) error {
	actor := h.Actor(c)
	os, err := h.svc().Offers(c.UserContext(), actor)
	if err != nil {
		return err
	}
	d.ShowOffers, d.CanAnswer, d.CanWithdraw = true, actor.TenantID != "" && actor.Can(perm.BillingManage), actor.TenantID == "" && actor.Can(perm.TenantsManage)
	for _, o := range os {
		row := views.OfferRow{ID: o.ID, Region: o.RegionName, Tenant: o.TenantName, Quotas: quotas(o.CPU, o.MemoryGiB), Status: o.Status,
			Open: o.Status == billingdb.OfferOpen}
		if o.Status == billingdb.OfferAccepted {
			row.Markup = billing.FormatMinor(o.MarkupBP, 2)
		}
		d.Offers = append(d.Offers, row)
	}
	return nil
}

// quotas says an offer's quotas ("the free capacity" for one left out).
func quotas(cpu, mem *float64) string {
	q := func(v *float64, unit string) string {
		if v == nil {
			return "what is free of " + unit
		}
		return strconv.FormatFloat(*v, 'f', -1, 64) + " " + unit
	}
	return q(cpu, "CPU") + ", " + q(mem, "GiB of memory")
}

// settingsOutcome answers a form of Settings → Billing: back with a flash, or the page
// again with the messages beside the fields (422).
func (h *Handlers) settingsOutcome(c *fiber.Ctx, values map[string]string, err error, flash string) error {
	if err == nil {
		h.Flash(c, flash)
		return handlers.Redirect(c, "/billing")
	}
	fe, msg, ok := h.Refusal(c, err)
	if !ok {
		return h.Fail(c, err)
	}
	if msg == "" && len(fe) > 0 {
		msg = "Some fields need another look."
	}
	return h.renderSettings(c, fiber.StatusUnprocessableEntity, views.Form{Values: values, Errors: fe, Error: msg})
}

// SettingsForm saves the currency and the webhook (an empty secret keeps the one set).
func (h *Handlers) SettingsForm(c *fiber.Ctx) error {
	values := map[string]string{"currency": c.FormValue("currency"), "webhook_url": strings.TrimSpace(c.FormValue("webhook_url"))}
	in := billing.SettingsInput{Currency: store.Ptr(values["currency"])}
	if c.Request().PostArgs().Has("webhook_url") { // not on the form while the chart sets the webhook
		in.WebhookURL = store.Ptr(values["webhook_url"])
	}
	if s := c.FormValue("webhook_secret"); s != "" {
		in.WebhookSecret = &s
	}
	_, err := h.svc().SaveSettings(c.UserContext(), h.Actor(c), in)
	return h.settingsOutcome(c, values, err, "Billing settings saved.")
}

// TestEventForm sends a test event and says how it went.
func (h *Handlers) TestEventForm(c *fiber.Ctx) error {
	ev, err := h.svc().SendTestEvent(c.UserContext(), h.Actor(c))
	flash := ""
	if err == nil {
		flash = "Test event " + ev.ID + " delivered."
		if ev.Status != billingdb.EventDelivered {
			flash = "Test event " + ev.ID + " was not delivered (" + ev.LastError + "); it is retried like any other."
		}
	}
	return h.settingsOutcome(c, nil, err, flash)
}

// RedeliverForm puts a dead event back in the queue.
func (h *Handlers) RedeliverForm(c *fiber.Ctx) error {
	err := h.svc().Redeliver(c.UserContext(), h.Actor(c), c.Params("event"))
	return h.settingsOutcome(c, nil, err, "Event "+c.Params("event")+" is sent again.")
}
