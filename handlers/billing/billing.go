// Package billing is the pages and endpoints of the Billing module (RUNR_BILLING=on): a
// region's Billing tab and its API, Settings → Billing, and the billing API that a
// billing system reads (charges, bills, events).
package billing

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/a-h/templ"
	"github.com/gofiber/fiber/v2"

	"runr.dev/console/handlers"
	"runr.dev/console/ops/billing"
	"runr.dev/console/perm"
	"runr.dev/console/problem"
	"runr.dev/console/store"
	"runr.dev/console/store/billingdb"
	"runr.dev/console/views"
)

// Handlers are the Billing module's pages and endpoints.
type Handlers struct{ *handlers.Handlers }

// New builds the billing handlers and registers the region's Billing tab (module on only).
func New(h *handlers.Handlers) *Handlers {
	b := &Handlers{Handlers: h}
	if h.Cfg.Billing {
		h.AddTab("billing", b.billingTab)
	}
	return b
}

func (h *Handlers) svc() *billing.Service { return h.Ops.Billing }

// query reads the lists' filters from the query string.
func query(c *fiber.Ctx) (billing.Query, error) {
	q := billing.Query{Period: c.Query("period"), Tenant: c.Query("tenant"), Region: c.Query("region")}
	fields := map[string]string{}
	for key, dst := range map[string]*int{"page": &q.Page, "per_page": &q.PerPage} {
		if v := c.Query(key); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				fields[key] = "use a whole number"
			}
			*dst = n
		}
	}
	return q, problem.FromFields(fields)
}

// list answers a billing list with its page.
func list[T any](h *Handlers, c *fiber.Ctx, run func(tenant string, q billing.Query) ([]T, error)) error {
	q, err := query(c)
	if err != nil {
		return h.Fail(c, err)
	}
	rows, err := run(h.Actor(c).TenantID, q)
	if err != nil {
		return h.Fail(c, err)
	}
	return c.JSON(fiber.Map{"data": rows, "meta": fiber.Map{"page": max(q.Page, 1), "per_page": max(q.PerPage, 50)}})
}

// APICharges is GET /api/billing/charges (?period=2026-11&tenant=&region=&page=&per_page=).
func (h *Handlers) APICharges(c *fiber.Ctx) error {
	return list(h, c, func(t string, q billing.Query) ([]billing.ChargeView, error) {
		return h.svc().Charges(c.UserContext(), t, q)
	})
}

// APIBills is GET /api/billing/bills: the closed bills.
func (h *Handlers) APIBills(c *fiber.Ctx) error {
	return list(h, c, func(t string, q billing.Query) ([]billing.BillView, error) {
		return h.svc().Bills(c.UserContext(), t, q)
	})
}

// APIBill is GET /api/billing/bills/{id}.
func (h *Handlers) APIBill(c *fiber.Ctx) error {
	b, err := h.svc().Bill(c.UserContext(), h.Actor(c).TenantID, c.Params("bill"))
	return handlers.DataAnswer(h.Handlers, c, fiber.StatusOK, b, err)
}

// APIEvents is GET /api/billing/events (?status=kept|pending|delivered|dead).
func (h *Handlers) APIEvents(c *fiber.Ctx) error {
	return list(h, c, func(t string, q billing.Query) ([]billingdb.Event, error) {
		return h.svc().Events(c.UserContext(), t, c.Query("status"), q)
	})
}

// APIRedeliver is POST /api/billing/events/{id}/redeliver: a dead event goes back in the queue.
func (h *Handlers) APIRedeliver(c *fiber.Ctx) error {
	if err := h.svc().Redeliver(c.UserContext(), h.Actor(c), c.Params("event")); err != nil {
		return h.Fail(c, err)
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"data": fiber.Map{"id": c.Params("event"), "status": billingdb.EventPending}})
}

// APISettings is GET /api/billing/settings (the secret never; only whether one is set).
func (h *Handlers) APISettings(c *fiber.Ctx) error {
	v, err := h.svc().Settings(c.UserContext())
	return handlers.DataAnswer(h.Handlers, c, fiber.StatusOK, v, err)
}

// APIPutSettings is PUT /api/billing/settings: currency, webhook_url, webhook_secret.
func (h *Handlers) APIPutSettings(c *fiber.Ctx) error {
	var in billing.SettingsInput
	if err := handlers.BodyMap(c, &in); err != nil {
		return h.Fail(c, err)
	}
	v, err := h.svc().SaveSettings(c.UserContext(), h.Actor(c), in)
	return handlers.DataAnswer(h.Handlers, c, fiber.StatusOK, v, err)
}

// APITestEvent is POST /api/billing/test-event: one event sent at once, and how it went.
func (h *Handlers) APITestEvent(c *fiber.Ctx) error {
	ev, err := h.svc().SendTestEvent(c.UserContext(), h.Actor(c))
	return handlers.DataAnswer(h.Handlers, c, fiber.StatusOK, ev, err)
}

// APIRegionBilling is GET /api/knative-regions/{id}/billing.
func (h *Handlers) APIRegionBilling(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	v, err := h.svc().Region(c.UserContext(), r)
	return handlers.DataAnswer(h.Handlers, c, fiber.StatusOK, v, err)
}

// APIPutRegionBilling is PUT /api/knative-regions/{id}/billing: type, prices, allocation
// (422 with field errors, nothing stored, when one is wrong).
func (h *Handlers) APIPutRegionBilling(c *fiber.Ctx) error {
	r, in, err := handlers.RegionBody[billing.RegionInput](h.Handlers, c)
	if err != nil {
		return h.Fail(c, err)
	}
	v, err := h.svc().SaveRegion(c.UserContext(), h.Actor(c), r, in)
	return handlers.DataAnswer(h.Handlers, c, fiber.StatusOK, v, err)
}

// regionFormFields are the Billing tab form's fields.
var regionFormFields = []string{"type", "vcpu_hour", "memory_gib_hour", "gpu_hour", "fixed_price", "allocation_cpu_m", "allocation_memory_mi", "allocation_gpus"}

// RegionBillingForm saves the Billing tab's form.
func (h *Handlers) RegionBillingForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	values := map[string]string{}
	for _, k := range regionFormFields {
		values[k] = strings.TrimSpace(c.FormValue(k))
	}
	in := billing.RegionInput{Type: store.Ptr(values["type"]), VCPUHour: store.Ptr(values["vcpu_hour"]),
		MemoryGiBHour: store.Ptr(values["memory_gib_hour"]), GPUHour: store.Ptr(values["gpu_hour"]), FixedPrice: store.Ptr(values["fixed_price"])}
	fields := map[string]string{}
	in.AllocCPUm = formInt(values, "allocation_cpu_m", fields)
	in.AllocMemoryMi = formInt(values, "allocation_memory_mi", fields)
	if n := formInt(values, "allocation_gpus", fields); n != nil {
		in.AllocGPUs = store.Ptr(int(*n))
	}
	if err = problem.FromFields(fields); err == nil {
		_, err = h.svc().SaveRegion(c.UserContext(), h.Actor(c), r, in)
	}
	return h.FormOutcome(c, r, "billing", values, err, "Billing saved.")
}

// formInt reads a whole number of a form (0 when empty; nil, noted in fields, when malformed).
func formInt(values map[string]string, key string, fields map[string]string) *int64 {
	v := values[key]
	if v == "" {
		return store.Ptr(int64(0))
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		fields[key] = "use a whole number"
		return nil
	}
	return &n
}

// billingTab is the region's Billing tab (billing.view).
func (h *Handlers) billingTab(c *fiber.Ctx, r *store.Region) (templ.Component, error) {
	who := handlers.Who(c)
	if !who.Perms[perm.BillingView] {
		return nil, &problem.Refused{Reason: "The Billing tab needs the permission " + perm.BillingView + "."}
	}
	v, err := h.svc().Region(c.UserContext(), r)
	if err != nil {
		return nil, err
	}
	d := views.BillingTabData{RegionID: r.ID, Currency: v.Currency, Fixed: v.Type == billingdb.Fixed,
		Types: handlers.OptionsOf([]string{billingdb.PayAsYouGo, billingdb.Fixed}, v.Type),
		Held:  resources(v.Held.CPUm, v.Held.MemoryMi, v.HeldGPUs), Allocation: resources(v.Allocation.CPUm, v.Allocation.MemoryMi, int64(v.AllocGPUs)),
		Period: v.PeriodStart.Format("January 2006"), Total: v.Total, CanManage: who.Perms[perm.BillingManage],
		Form: views.Form{Values: map[string]string{"vcpu_hour": v.Prices.VCPUHour, "memory_gib_hour": v.Prices.MemoryGiBHour,
			"gpu_hour": v.Prices.GPUHour, "fixed_price": v.Prices.FixedPeriod, "allocation_cpu_m": itoa(v.Allocation.CPUm),
			"allocation_memory_mi": itoa(v.Allocation.MemoryMi), "allocation_gpus": itoa(int64(v.AllocGPUs))}}}
	for i := range d.Types {
		d.Types[i].Label = map[string]string{billingdb.PayAsYouGo: "Pay as you go", billingdb.Fixed: "Fixed resources"}[d.Types[i].Value]
	}
	if f, ok := c.Locals(handlers.TabFormKey).(views.Form); ok {
		d.Form = f
	}
	d.Charges = chargeRows(v.Charges)
	return views.BillingTab(handlers.TabPage(c), d), nil
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func resources(cpu, mem, gpus int64) string {
	return fmt.Sprintf("%dm CPU, %d MiB, %d GPU(s)", cpu, mem, gpus)
}

func chargeRows(cs []billing.ChargeView) []views.ChargeRow {
	out := make([]views.ChargeRow, len(cs))
	for i, c := range cs {
		out[i] = views.ChargeRow{Region: c.RegionName, Project: c.ProjectName, Period: c.PeriodStart.Format("2006-01"),
			Usage: fmt.Sprintf("%.2f vCPU-h, %.2f GiB-h, %.2f GPU-h", float64(c.Usage.CPUMinutesM)/60000,
				float64(c.Usage.MemoryMinutesMi)/(1024*60), float64(c.Usage.GPUMinutes)/60),
			Amount: c.Amount, Billed: c.BillID != nil}
		if c.ProjectID == "" {
			out[i].Usage = "fixed price for the month"
		}
	}
	return out
}
