package billing

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/nodes"
	"runr.dev/console/perm"
	"runr.dev/console/problem"
	"runr.dev/console/store"
	"runr.dev/console/store/billingdb"
)

// SettingsView is the console's billing settings as the API shows them: never the secret,
// only whether one is set.
type SettingsView struct {
	Currency         string   `json:"currency"`
	Currencies       []string `json:"currencies"`
	WebhookURL       string   `json:"webhook_url"`
	WebhookSecretSet bool     `json:"webhook_secret_set"`
	// WebhookFromChart says the webhook is the chart's (billing.webhookUrl): read-only here.
	WebhookFromChart bool `json:"webhook_from_chart"`
}

// settings reads the billing settings with the chart's webhook, when it sets one, in
// place of the stored one.
func (s *Service) settings(ctx context.Context) (*billingdb.Settings, error) {
	set, err := s.DB.Settings(ctx)
	if err == nil && s.Cfg.BillingWebhookURL != "" {
		set.WebhookURL, set.WebhookSecret = s.Cfg.BillingWebhookURL, s.Cfg.BillingWebhookSecret
	}
	return set, err
}

// SettingsInput changes the billing settings; a key left out keeps its value, and an
// empty webhook_secret clears it.
type SettingsInput struct {
	Currency      *string `json:"currency"`
	WebhookURL    *string `json:"webhook_url"`
	WebhookSecret *string `json:"webhook_secret"`
}

// Settings reads the billing settings.
func (s *Service) Settings(ctx context.Context) (*SettingsView, error) {
	set, err := s.settings(ctx)
	if err != nil {
		return nil, err
	}
	return &SettingsView{Currency: set.Currency, Currencies: Currencies(), WebhookURL: set.WebhookURL, WebhookSecretSet: set.WebhookSecret != "",
		WebhookFromChart: s.Cfg.BillingWebhookURL != ""}, nil
}

// SaveSettings checks and saves the billing settings. The currency is fixed once a charge
// exists (amounts already counted are in it); the chart's webhook is changed in the chart.
func (s *Service) SaveSettings(ctx context.Context, actor kit.Actor, in SettingsInput) (*SettingsView, error) {
	if err := platformOnly(actor); err != nil {
		return nil, err
	}
	set, err := s.DB.Settings(ctx) // the stored ones, without the chart's webhook
	if err != nil {
		return nil, err
	}
	fields := map[string]string{}
	cur, err := s.currencyChange(ctx, set.Currency, in.Currency, fields)
	if err != nil {
		return nil, err
	}
	hook, secret := set.WebhookURL, in.WebhookSecret
	switch {
	case s.Cfg.BillingWebhookURL != "":
		if in.WebhookURL != nil && strings.TrimSpace(*in.WebhookURL) != s.Cfg.BillingWebhookURL || secret != nil {
			fields["webhook_url"] = "the webhook is set by the chart (billing.webhookUrl, billing.webhookSecret): change it there"
		}
	case in.WebhookURL != nil:
		hook = strings.TrimSpace(*in.WebhookURL)
		if why := webhookURLProblem(hook); why != "" {
			fields["webhook_url"] = why
		}
	}
	if secret != nil && *secret != "" && len(*secret) < 16 {
		fields["webhook_secret"] = "a webhook secret has at least 16 characters"
	}
	if hook != "" && set.WebhookSecret == "" && (secret == nil || *secret == "") {
		fields["webhook_secret"] = "events sent to a webhook are signed: set a secret of at least 16 characters"
	}
	if err := problem.FromFields(fields); err != nil {
		return nil, err
	}
	if err := s.DB.SaveSettings(ctx, cur, hook, secret); err != nil {
		return nil, err
	}
	s.Log.Info("billing settings changed", "by", actor.Email, "currency", cur, "webhook_url", hook, "secret_changed", secret != nil)
	return s.Settings(ctx)
}

// currencyChange checks a new currency (nil: the current one stays).
func (s *Service) currencyChange(ctx context.Context, current string, in *string, fields map[string]string) (string, error) {
	if in == nil || strings.ToUpper(strings.TrimSpace(*in)) == current {
		return current, nil
	}
	cur := strings.ToUpper(strings.TrimSpace(*in))
	if _, ok := Digits(cur); !ok {
		fields["currency"] = "choose one of " + strings.Join(Currencies(), ", ")
		return cur, nil
	}
	cs, err := s.DB.Charges(ctx, billingdb.Filter{Limit: 1})
	if err != nil {
		return cur, err
	}
	if len(cs) > 0 {
		fields["currency"] = "charges are counted in " + current + " already: the currency cannot change"
	}
	return cur, nil
}

// platformOnly refuses a tenant's user: the currency and the webhook are the console's.
func platformOnly(actor kit.Actor) error {
	if actor.TenantID != "" {
		return &problem.Forbidden{Reason: "The billing settings are the platform's: a tenant's user cannot change them."}
	}
	return nil
}

func webhookURLProblem(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "write a URL such as https://billing.example.com/runr-events"
	}
	return ""
}

// RegionView is a region's billing: its type, prices, allocation and what its projects
// hold of it, and this period's charges.
type RegionView struct {
	RegionID    string           `json:"region_id"`
	Type        string           `json:"type"`
	Currency    string           `json:"currency"`
	Prices      PriceView        `json:"prices"`
	Allocation  nodes.Resources  `json:"allocation"`
	AllocGPUs   int              `json:"allocation_gpus"`
	Held        nodes.Resources  `json:"held"`
	HeldGPUs    int64            `json:"held_gpus"`
	PeriodStart time.Time        `json:"period_start"`
	PeriodEnd   time.Time        `json:"period_end"`
	Charges     []ChargeView     `json:"charges"`
	TotalMinor  int64            `json:"total_minor"`
	Total       string           `json:"total"`
	UpdatedAt   time.Time        `json:"updated_at"`
	Micros      map[string]int64 `json:"prices_micros"`
}

// PriceView is a region's prices as decimals of the currency.
type PriceView struct {
	VCPUHour      string `json:"vcpu_hour"`
	MemoryGiBHour string `json:"memory_gib_hour"`
	GPUHour       string `json:"gpu_hour"`
	FixedPeriod   string `json:"fixed_price"`
}

// RegionPrices is one row of Settings → Billing → Regions & prices.
type RegionPrices struct {
	RegionID string    `json:"region_id"`
	Region   string    `json:"region"`
	Type     string    `json:"type"`
	Prices   PriceView `json:"prices"`
}

// Regions lists every region the tenant sees ("" the platform: every one) with its type
// and prices.
func (s *Service) Regions(ctx context.Context, tenant string) ([]RegionPrices, error) {
	rs, err := s.DB.Regions(store.WithTenant(ctx, tenant))
	if err != nil {
		return nil, err
	}
	out := make([]RegionPrices, len(rs))
	for i, r := range rs {
		out[i] = RegionPrices{RegionID: r.RegionID, Region: r.Name, Type: r.Type, Prices: priceView(&r.RegionBilling)}
	}
	return out, nil
}

func priceView(b *billingdb.RegionBilling) PriceView {
	return PriceView{FormatMicros(b.VCPUHourMicros), FormatMicros(b.MemoryGiBHourMicros), FormatMicros(b.GPUHourMicros), FormatMicros(b.FixedPeriodMicros)}
}

// RegionInput changes a region's billing; a key left out keeps its value. Prices are
// decimals of the currency (at most six places); the allocation is in millicores, MiB and
// GPUs.
type RegionInput struct {
	Type          *string `json:"type"`
	VCPUHour      *string `json:"vcpu_hour"`
	MemoryGiBHour *string `json:"memory_gib_hour"`
	GPUHour       *string `json:"gpu_hour"`
	FixedPrice    *string `json:"fixed_price"`
	AllocCPUm     *int64  `json:"allocation_cpu_m"`
	AllocMemoryMi *int64  `json:"allocation_memory_mi"`
	AllocGPUs     *int    `json:"allocation_gpus"`
}

// Region reads a region's billing with this period's charges.
func (s *Service) Region(ctx context.Context, r *store.Region) (*RegionView, error) {
	b, err := s.DB.RegionBilling(ctx, r.ID)
	if err != nil {
		return nil, err
	}
	set, err := s.settings(ctx)
	if err != nil {
		return nil, err
	}
	cpu, mem, gpus, err := s.DB.Reserved(ctx, r.ID, "")
	if err != nil {
		return nil, err
	}
	start, end := PeriodOf(s.Now())
	cs, err := s.DB.Charges(ctx, billingdb.Filter{PeriodStart: &start, RegionID: r.ID, Limit: 500})
	if err != nil {
		return nil, err
	}
	digits, _ := Digits(set.Currency)
	v := &RegionView{RegionID: r.ID, Type: b.Type, Currency: set.Currency,
		Prices:     PriceView{FormatMicros(b.VCPUHourMicros), FormatMicros(b.MemoryGiBHourMicros), FormatMicros(b.GPUHourMicros), FormatMicros(b.FixedPeriodMicros)},
		Micros:     map[string]int64{"vcpu_hour": b.VCPUHourMicros, "memory_gib_hour": b.MemoryGiBHourMicros, "gpu_hour": b.GPUHourMicros, "fixed_price": b.FixedPeriodMicros},
		Allocation: nodes.Resources{CPUm: b.AllocCPUm, MemoryMi: b.AllocMemoryMi}, AllocGPUs: b.AllocGPUs,
		Held: nodes.Resources{CPUm: cpu, MemoryMi: mem}, HeldGPUs: gpus, PeriodStart: start, PeriodEnd: end, Charges: []ChargeView{}, UpdatedAt: b.UpdatedAt}
	for i := range cs {
		cv := s.chargeView(&cs[i], set.Currency)
		v.Charges = append(v.Charges, cv)
		v.TotalMinor += cv.AmountMinor
	}
	v.Total = FormatMinor(v.TotalMinor, digits)
	return v, nil
}

// SaveRegion checks and saves a region's billing. A fixed region needs an allocation of
// CPU and memory.
func (s *Service) SaveRegion(ctx context.Context, actor kit.Actor, r *store.Region, in RegionInput) (*RegionView, error) {
	b, err := s.DB.RegionBilling(ctx, r.ID)
	if err != nil {
		return nil, err
	}
	fields := map[string]string{}
	if in.Type != nil {
		if *in.Type != billingdb.PayAsYouGo && *in.Type != billingdb.Fixed {
			fields["type"] = "a billing type is payg (pay as you go) or fixed (fixed resources)"
		}
		b.Type = *in.Type
	}
	price := func(key string, in *string, dst *int64) {
		if in == nil {
			return
		}
		v, err := ParseMicros(*in)
		if err != nil {
			fields[key] = err.Error()
		}
		*dst = v
	}
	price("vcpu_hour", in.VCPUHour, &b.VCPUHourMicros)
	price("memory_gib_hour", in.MemoryGiBHour, &b.MemoryGiBHourMicros)
	price("gpu_hour", in.GPUHour, &b.GPUHourMicros)
	price("fixed_price", in.FixedPrice, &b.FixedPeriodMicros)
	checkAllocation(b, in, fields)
	if err := problem.FromFields(fields); err != nil {
		return nil, err
	}
	if err := s.DB.SaveRegionBilling(ctx, b); err != nil {
		return nil, err
	}
	s.Log.Info("region billing changed", "region", r.Name, "by", actor.Email, "type", b.Type)
	if b.Type == billingdb.Fixed {
		start, _ := PeriodOf(s.Now())
		if err := s.openAllocation(ctx, r.ID, r.Name, start); err != nil {
			return nil, err
		}
	}
	return s.Region(ctx, r)
}

// checkAllocation applies the allocation of in to b and says what is wrong with it. An
// allocation below what the running projects hold is taken: they keep running, and deploys
// (a move's redeploy too) are refused until they fit.
func checkAllocation(b *billingdb.RegionBilling, in RegionInput, fields map[string]string) {
	setInt := func(key string, v *int64, dst *int64) {
		if v == nil {
			return
		}
		if *v < 0 {
			fields[key] = "an allocation is 0 or more"
		}
		*dst = *v
	}
	setInt("allocation_cpu_m", in.AllocCPUm, &b.AllocCPUm)
	setInt("allocation_memory_mi", in.AllocMemoryMi, &b.AllocMemoryMi)
	if in.AllocGPUs != nil {
		if *in.AllocGPUs < 0 {
			fields["allocation_gpus"] = "an allocation is 0 or more"
		}
		b.AllocGPUs = *in.AllocGPUs
	}
	if b.Type != billingdb.Fixed || len(fields) > 0 {
		return
	}
	if b.AllocCPUm == 0 {
		fields["allocation_cpu_m"] = "a fixed region needs an allocation of CPU (millicores)"
	}
	if b.AllocMemoryMi == 0 {
		fields["allocation_memory_mi"] = "a fixed region needs an allocation of memory (MiB)"
	}
}

// CheckNewRegionType checks the billing type a new region is created with ("" is pay as
// you go): only while the module is on, and from a user who holds billing.manage.
func (s *Service) CheckNewRegionType(actor kit.Actor, typ string, fields map[string]string) {
	switch {
	case typ == "":
	case !s.Cfg.Billing:
		fields["billing_type"] = "the Billing module is off (RUNR_BILLING=on): a region has no billing type"
	case actor.Perms != nil && !actor.Can(perm.BillingManage):
		fields["billing_type"] = "choosing a billing type needs the permission " + perm.BillingManage
	case typ != billingdb.PayAsYouGo && typ != billingdb.Fixed:
		fields["billing_type"] = "a billing type is payg (pay as you go) or fixed (fixed resources)"
	}
}

// SetNewRegionType records the billing type of a region just created (nothing for "" or
// pay as you go, the default). A fixed region refuses deploys until its Billing tab gives
// it an allocation and a price.
func (s *Service) SetNewRegionType(ctx context.Context, r *store.Region, typ string) error {
	if !s.Cfg.Billing || typ == "" || typ == billingdb.PayAsYouGo {
		return nil
	}
	return s.DB.SaveRegionBilling(ctx, &billingdb.RegionBilling{RegionID: r.ID, Type: typ})
}

// Admit refuses a deploy to a fixed region that would exceed its allocation (a refusal
// that says what is free); other regions, and the module off, admit.
func (s *Service) Admit(ctx context.Context, r *store.Region, p *store.Project) error {
	if !s.Cfg.Billing {
		return nil
	}
	b, err := s.DB.RegionBilling(ctx, r.ID)
	if err != nil || b.Type != billingdb.Fixed {
		return err
	}
	cpu, mem, gpus, err := s.DB.Reserved(ctx, r.ID, p.ID)
	if err != nil {
		return err
	}
	line := func(budget, used int64) nodes.BudgetLine {
		return nodes.BudgetLine{Budget: budget, Used: used, Free: budget - used}
	}
	bud := nodes.Budget{Name: "fixed allocation", CPU: line(b.AllocCPUm, cpu), Memory: line(b.AllocMemoryMi, mem)}
	req := nodes.AdmitRequest{ProjectID: p.ID, CPUm: int64(p.CPUm), MemoryMi: int64(p.MemoryMi)}
	if e := nodes.CheckAdmission(r.Name, nodes.Budgets{FaaS: bud, AlwaysOn: bud}, req); e != nil {
		return &problem.Refused{Reason: "Region " + r.Name + " is billed as fixed resources and this deploy does not fit its allocation: " + e.Error() + "."}
	}
	if ask := int64(p.GPU.V.Count); ask > 0 && ask > int64(b.AllocGPUs)-gpus {
		return &problem.Refused{Reason: fmt.Sprintf("Region %s is billed as fixed resources: this deploy asks %d GPU(s), the allocation has %d, %d held.", r.Name, ask, b.AllocGPUs, gpus)}
	}
	return nil
}
