// Package billing is the Billing module (RUNR_BILLING=on): each region's billing type and
// prices, the metering of the projects' use from the agents' reports, the charges they
// price to, the bills that close at the end of each period, and the signed billing events
// delivered to the console's webhook. It calculates what each account owes; invoicing is
// left to the billing system that reads the API and receives the events.
package billing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"runr.dev/console/agent"
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/tenancy"
	"runr.dev/console/store"
	"runr.dev/console/store/billingdb"
)

// Service is the Billing module.
type Service struct {
	*kit.Kit
	DB      *billingdb.DB
	tenancy *tenancy.Service
	// Client posts the events to the webhook.
	Client *http.Client
	// Backoff is the wait before the first retry of an event; each retry waits twice as
	// long. MaxAttempts is how many attempts an event gets before it is dead.
	Backoff     time.Duration
	MaxAttempts int
	// Now is the clock (time.Now; tests set their own).
	Now func() time.Time
}

// New builds the Billing module on the Tenancy module (its offers assign regions).
func New(k *kit.Kit, t *tenancy.Service) *Service {
	return &Service{Kit: k, DB: billingdb.New(k.Store), tenancy: t, Client: &http.Client{Timeout: 10 * time.Second},
		Backoff: 30 * time.Second, MaxAttempts: 8, Now: time.Now}
}

// PeriodOf returns the billing period that holds t: the calendar month in UTC, [start, end).
func PeriodOf(t time.Time) (start, end time.Time) {
	t = t.UTC()
	start = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	return start, start.AddDate(0, 1, 0)
}

// Meter records the project usage of an agent's snapshot taken at at for the regions of
// its cluster: one minute per running project of those regions, added to its charge. A
// project that is stopped or runs nothing, or is in none of the regions, is not metered;
// the caller leaves out regions that are not active. Off, it does nothing.
func (s *Service) Meter(ctx context.Context, regions []store.AgentRegion, at time.Time, usage []agent.ProjectUsage) error {
	if !s.Cfg.Billing || len(usage) == 0 {
		return nil
	}
	minute := at.UTC().Truncate(time.Minute)
	period, _ := PeriodOf(minute)
	byProject := map[string]agent.ProjectUsage{}
	ids, regionIDs := make([]string, 0, len(usage)), make([]string, len(regions))
	for _, u := range usage {
		byProject[u.Project] = u
		ids = append(ids, u.Project)
	}
	names := map[string]string{}
	for i, r := range regions {
		regionIDs[i], names[r.ID] = r.ID, r.Name
	}
	// One read for the report: the running projects of these regions it names.
	ps, err := s.DB.MeteredProjects(ctx, ids, regionIDs)
	if err != nil {
		return err
	}
	var errs []error
	for i := range ps {
		p, u := &ps[i], byProject[ps[i].ID]
		m := billingdb.Minute{ProjectID: p.ID, Minute: minute, CPUm: u.CPURequested, MemoryMi: u.MemRequested >> 20, GPUs: u.GPUs}
		res, err := s.DB.Meter(ctx, *p.RegionID, names[*p.RegionID], p, m, period)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if res.Closed {
			s.Log.Info("billing: a minute of a closed period is kept and not billed", "project", p.ID, "minute", minute)
		}
		if res.Created {
			errs = append(errs, s.chargeCreated(ctx, res.ChargeID))
		}
		if res.AllocationID != "" {
			errs = append(errs, s.chargeCreated(ctx, res.AllocationID))
		}
	}
	return errors.Join(errs...)
}

// chargeCreated records the charge.created event of a new charge.
func (s *Service) chargeCreated(ctx context.Context, id string) error {
	cs, err := s.DB.Charges(ctx, billingdb.Filter{Limit: 1, ChargeID: id})
	if err != nil || len(cs) == 0 {
		return err
	}
	set, err := s.settings(ctx)
	if err != nil {
		return err
	}
	return s.addEvent(ctx, set, cs[0].TenantID, "charge.created", s.chargeView(&cs[0], set.Currency))
}

// addEvent records an event: pending, due now, with a webhook URL; kept without one.
func (s *Service) addEvent(ctx context.Context, set *billingdb.Settings, tenantID *string, typ string, data any) error {
	ev, err := s.newEvent(set, tenantID, typ, data)
	if err != nil {
		return err
	}
	return s.DB.AddEvent(ctx, ev)
}

func (s *Service) newEvent(set *billingdb.Settings, tenantID *string, typ string, data any) (*billingdb.Event, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("billing: event %s: %w", typ, err)
	}
	now := s.Now().UTC()
	ev := &billingdb.Event{ID: "evt_" + store.NewID(), TenantID: tenantID, Type: typ, Payload: raw, Status: billingdb.EventKept, CreatedAt: now}
	if set.WebhookURL != "" {
		ev.Status, ev.NextAttemptAt = billingdb.EventPending, &now
	}
	return ev, nil
}

// RunBackground closes the bills of ended periods, opens the fixed regions' allocation
// charges and sends due events every BillingInterval until ctx ends (nothing while the
// module is off).
func (s *Service) RunBackground(ctx context.Context) {
	if !s.Cfg.Billing {
		return
	}
	t := time.NewTicker(s.Cfg.BillingInterval)
	defer t.Stop()
	for {
		if err := s.Tick(ctx); err != nil && ctx.Err() == nil {
			s.Log.Warn("billing", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Tick does one round of the background work.
func (s *Service) Tick(ctx context.Context) error {
	now := s.Now()
	return errors.Join(s.CloseEnded(ctx, now), s.OpenAllocations(ctx, now), s.DeliverDue(ctx, now))
}
