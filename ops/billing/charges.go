package billing

import (
	"context"
	"errors"
	"fmt"
	"time"

	"runr.dev/console/problem"
	"runr.dev/console/store"
	"runr.dev/console/store/billingdb"
)

// ChargeView is a charge as the API and the pages show it: its quantities, its prices as
// decimals, and its amount so far (open) or as billed.
type ChargeView struct {
	ID          string    `json:"id"`
	TenantID    *string   `json:"tenant_id"`
	PeriodStart time.Time `json:"period_start"`
	PeriodEnd   time.Time `json:"period_end"`
	RegionID    string    `json:"region_id"`
	RegionName  string    `json:"region_name"`
	// ProjectID is "" for a fixed region's allocation.
	ProjectID     string `json:"project_id"`
	ProjectName   string `json:"project_name"`
	Type          string `json:"type"`
	Usage         Usage  `json:"usage"`
	Prices        Prices `json:"prices"`
	MarkupPercent string `json:"markup_percent"`
	AmountMinor   int64  `json:"amount_minor"`
	Amount        string `json:"amount"`
	// BaseAmount is the amount at the platform's prices, before the tenant's markup.
	BaseAmountMinor int64  `json:"base_amount_minor"`
	BaseAmount      string `json:"base_amount"`
	Currency        string `json:"currency"`
	// BillID is the closed bill that holds it (nil while its period is open).
	BillID *string `json:"bill_id"`
}

func chargeUsage(c *billingdb.Charge) (Usage, Prices) {
	return Usage{c.CPUMinutesM, c.MemoryMinutesMi, c.GPUMinutes},
		Prices{c.VCPUHourMicros, c.MemoryGiBHourMicros, c.GPUHourMicros, c.FixedPeriodMicros}
}

// chargeAmount is what a charge amounts to, in minor units of the currency: with the
// tenant's markup, and at the platform's prices (base).
func chargeAmount(c *billingdb.Charge, currency string) (amount, base int64) {
	u, p := chargeUsage(c)
	digits, _ := Digits(currency)
	fixed := c.Type == billingdb.Fixed && c.ProjectID == ""
	return Amount(u, p, fixed, c.MarkupBP, digits), Amount(u, p, fixed, 0, digits)
}

func (s *Service) chargeView(c *billingdb.Charge, currency string) ChargeView {
	u, p := chargeUsage(c)
	_, end := PeriodOf(c.PeriodStart)
	digits, _ := Digits(currency)
	amount, base := chargeAmount(c, currency)
	return ChargeView{ID: c.ID, TenantID: c.TenantID, PeriodStart: c.PeriodStart, PeriodEnd: end, RegionID: c.RegionID,
		RegionName: c.RegionName, ProjectID: c.ProjectID, ProjectName: c.ProjectName, Type: c.Type, Usage: u, Prices: p,
		MarkupPercent: FormatMinor(c.MarkupBP, 2), AmountMinor: amount, Amount: FormatMinor(amount, digits),
		BaseAmountMinor: base, BaseAmount: FormatMinor(base, digits), Currency: currency, BillID: c.BillID}
}

// Query narrows the billing lists: a period (its month, "2026-11"), an account (a
// tenant's id, or "platform"), a region; page (from 1) of per_page rows (default 50, at
// most 500).
type Query struct {
	Period  string
	Tenant  string
	Region  string
	Page    int
	PerPage int
}

// filter checks a query and turns it into the store's filter; a tenant's user is held to
// its own account whatever it asks for (the walls hold it there too).
func filter(actor string, q Query) (billingdb.Filter, error) {
	fields := map[string]string{}
	f := billingdb.Filter{RegionID: q.Region, Limit: q.PerPage}
	if q.Period != "" {
		t, err := time.Parse("2006-01", q.Period)
		if err != nil {
			fields["period"] = "write a period as a month, such as 2026-11"
		} else {
			f.PeriodStart = &t
		}
	}
	switch {
	case actor != "":
		f.TenantID = &actor
	case q.Tenant == "platform":
		f.TenantID = new(string)
	case q.Tenant != "":
		f.TenantID = &q.Tenant
	}
	switch {
	case f.Limit == 0:
		f.Limit = 50
	case f.Limit < 0 || f.Limit > 500:
		fields["per_page"] = "use a number from 1 to 500"
	}
	switch {
	case q.Page == 0:
	case q.Page < 0:
		fields["page"] = "pages count from 1"
	default:
		f.Offset = (q.Page - 1) * f.Limit
	}
	return f, problem.FromFields(fields)
}

// Charges lists charges, newest period first.
func (s *Service) Charges(ctx context.Context, tenant string, q Query) ([]ChargeView, error) {
	f, err := filter(tenant, q)
	if err != nil {
		return nil, err
	}
	set, err := s.settings(ctx)
	if err != nil {
		return nil, err
	}
	cs, err := s.DB.Charges(store.WithTenant(ctx, tenant), f)
	if err != nil {
		return nil, err
	}
	out := make([]ChargeView, len(cs))
	for i := range cs {
		out[i] = s.chargeView(&cs[i], set.Currency)
	}
	return out, nil
}

// BillView is a closed bill as the API shows it.
type BillView struct {
	*billingdb.Bill
	Total string `json:"total"`
}

func billView(b *billingdb.Bill) BillView {
	digits, _ := Digits(b.Currency)
	return BillView{Bill: b, Total: FormatMinor(b.TotalMinor, digits)}
}

// Bills lists closed bills, newest first.
func (s *Service) Bills(ctx context.Context, tenant string, q Query) ([]BillView, error) {
	f, err := filter(tenant, q)
	if err != nil {
		return nil, err
	}
	bs, err := s.DB.Bills(store.WithTenant(ctx, tenant), f)
	if err != nil {
		return nil, err
	}
	out := make([]BillView, len(bs))
	for i := range bs {
		out[i] = billView(&bs[i])
	}
	return out, nil
}

// Bill reads one closed bill (a tenant's user, of its own account only).
func (s *Service) Bill(ctx context.Context, tenant, id string) (*BillView, error) {
	b, err := s.DB.Bill(store.WithTenant(ctx, tenant), id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, &problem.Missing{Reason: "There is no bill " + id + "."}
	}
	if err != nil {
		return nil, err
	}
	v := billView(b)
	return &v, nil
}

// CloseEnded closes the bills of every account whose period ended before now: each
// open charge of that period becomes a line, priced and rounded, and the bill.closed event
// is recorded with it. A bill is never changed after.
func (s *Service) CloseEnded(ctx context.Context, now time.Time) error {
	current, _ := PeriodOf(now)
	open, err := s.DB.Unbilled(ctx, current)
	if err != nil || len(open) == 0 {
		return err
	}
	set, err := s.settings(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, a := range open {
		errs = append(errs, s.closeBill(ctx, set, a.PeriodStart, a.TenantID, now))
	}
	return errors.Join(errs...)
}

// closeBill closes one account's bill of a period.
func (s *Service) closeBill(ctx context.Context, set *billingdb.Settings, period time.Time, tenantID *string, now time.Time) error {
	start, end := PeriodOf(period)
	b := &billingdb.Bill{ID: "bill_" + store.NewID(), TenantID: tenantID, PeriodStart: start, PeriodEnd: end, Currency: set.Currency, ClosedAt: now}
	_, err := s.DB.CloseBill(ctx, b, func(cs []billingdb.Charge) (*billingdb.Event, error) {
		for i := range cs {
			c := &cs[i]
			amount, base := chargeAmount(c, set.Currency)
			b.TotalMinor += amount
			b.BaseTotalMinor += base
			b.Lines.V = append(b.Lines.V, billingdb.BillLine{ChargeID: c.ID, RegionID: c.RegionID, RegionName: c.RegionName,
				ProjectID: c.ProjectID, ProjectName: c.ProjectName, Type: c.Type, CPUMinutesM: c.CPUMinutesM,
				MemoryMinutesMi: c.MemoryMinutesMi, GPUMinutes: c.GPUMinutes, VCPUHourMicros: c.VCPUHourMicros,
				MemoryGiBHourMicros: c.MemoryGiBHourMicros, GPUHourMicros: c.GPUHourMicros, FixedPeriodMicros: c.FixedPeriodMicros,
				MarkupBP: c.MarkupBP, AmountMinor: amount, BaseAmountMinor: base})
		}
		return s.newEvent(set, b.TenantID, "bill.closed", billView(b))
	})
	if err != nil {
		return fmt.Errorf("billing: close the bill of %s: %w", start.Format("2006-01"), err)
	}
	return nil
}

// OpenAllocations opens this period's allocation charge of every fixed region.
func (s *Service) OpenAllocations(ctx context.Context, now time.Time) error {
	rs, err := s.DB.FixedRegions(ctx)
	if err != nil {
		return err
	}
	start, _ := PeriodOf(now)
	var errs []error
	for _, r := range rs {
		errs = append(errs, s.openAllocation(ctx, r.ID, r.Name, start))
	}
	return errors.Join(errs...)
}

// openAllocation opens a fixed region's allocation charge of a period, with its event.
func (s *Service) openAllocation(ctx context.Context, regionID, regionName string, start time.Time) error {
	id, err := s.DB.OpenAllocation(ctx, regionID, regionName, start)
	if err != nil || id == "" {
		return err
	}
	return s.chargeCreated(ctx, id)
}
