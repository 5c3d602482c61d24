package billing

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/tenancy"
	"runr.dev/console/perm"
	"runr.dev/console/problem"
	"runr.dev/console/store"
	"runr.dev/console/store/billingdb"
)

// With the Tenancy module, assigning a platform region to a tenant is an offer: the tenant
// (a user holding billing.manage in it: its owners) accepts it with a markup, and only then
// is the region assigned with the offered quotas; the tenant's charges there are the
// platform's type and prices plus its markup. A declined offer assigns nothing.

// maxMarkupBP is the largest markup a tenant may add: 1,000 %.
const maxMarkupBP = 100_000

// OfferRegion offers a platform region to a tenant with its quotas (checked as an
// assignment is; their fit again when the tenant accepts).
func (s *Service) OfferRegion(ctx context.Context, actor kit.Actor, r *store.Region, in tenancy.QuotaInput) (*billingdb.Offer, error) {
	t, err := s.tenancy.Assignable(ctx, actor, r, in)
	if err != nil {
		return nil, err
	}
	o := &billingdb.Offer{RegionID: r.ID, RegionName: r.Name, TenantID: t.ID, TenantName: t.Name, CPU: in.CPU, MemoryGiB: in.MemoryGiB, OfferedBy: actor.Email}
	if err := s.DB.AddOffer(ctx, o); errors.Is(err, billingdb.ErrOfferExists) {
		return nil, &problem.Refused{Field: "tenant_id", Reason: "Region " + r.Name + " is offered to " + t.Name + " already: it waits for the tenant's answer."}
	} else if err != nil {
		return nil, err
	}
	s.Log.Info("region offered", "region", r.Name, "tenant", t.Name, "by", actor.Email)
	return o, nil
}

// Offers lists the offers a user sees: a tenant's user its tenant's, the platform every one.
func (s *Service) Offers(ctx context.Context, actor kit.Actor) ([]billingdb.Offer, error) {
	return s.DB.Offers(store.WithTenant(ctx, ""), actor.TenantID)
}

// offerOf reads an offer the actor may answer: its tenant's, open.
func (s *Service) offerOf(ctx context.Context, actor kit.Actor, id string) (*billingdb.Offer, error) {
	o, err := s.DB.OfferByID(ctx, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && actor.TenantID != o.TenantID {
		return nil, &problem.Missing{Reason: "There is no offer " + id + "."}
	}
	if err != nil {
		return nil, err
	}
	if o.Status != billingdb.OfferOpen {
		return nil, &problem.Refused{Reason: "The offer of " + o.RegionName + " was " + o.Status + " already."}
	}
	return o, nil
}

// AcceptOffer accepts an offer for the actor's tenant with a markup in percent ("15",
// "12.5"): the region is assigned with the offered quotas; a quota that no longer fits
// the region refuses the acceptance, and the offer stays open.
func (s *Service) AcceptOffer(ctx context.Context, actor kit.Actor, id, markup string) (*billingdb.Offer, error) {
	ctx = store.WithTenant(ctx, "")
	o, err := s.offerOf(ctx, actor, id)
	if err != nil {
		return nil, err
	}
	micros, err := ParseMicros(markup)
	if err == nil && micros%10_000 != 0 {
		err = errors.New("a markup has at most two decimal places")
	}
	bp := micros / 10_000 // percent in micros → basis points
	if err == nil && bp > maxMarkupBP {
		err = fmt.Errorf("a markup is at most %d %%", maxMarkupBP/100)
	}
	if err != nil {
		return nil, &problem.Invalid{Fields: map[string]string{"markup_percent": strings.Replace(err.Error(), "price", "markup", 1)}}
	}
	r, err := s.Store.RegionByID(ctx, o.RegionID)
	if err != nil {
		return nil, err
	}
	// The assignment is the platform's act, which the tenant's acceptance completes.
	platform := kit.Actor{Email: actor.Email + " (accepting " + o.OfferedBy + "'s offer)", Perms: map[string]bool{perm.TenantsManage: true}}
	if _, err := s.tenancy.AssignRegion(ctx, platform, r, tenancy.QuotaInput{TenantID: o.TenantID, CPU: o.CPU, MemoryGiB: o.MemoryGiB}); err != nil {
		return nil, err
	}
	if ok, err := s.DB.DecideOffer(ctx, o.ID, billingdb.OfferAccepted, bp, actor.Email); err != nil || !ok {
		return nil, errors.Join(err, fmt.Errorf("billing: offer %s was answered meanwhile", o.ID))
	}
	s.Log.Info("offer accepted", "region", o.RegionName, "tenant", o.TenantName, "markup_bp", bp, "by", actor.Email)
	return s.DB.OfferByID(ctx, o.ID)
}

// DeclineOffer declines an offer for the actor's tenant: nothing is assigned.
func (s *Service) DeclineOffer(ctx context.Context, actor kit.Actor, id string) (*billingdb.Offer, error) {
	ctx = store.WithTenant(ctx, "")
	o, err := s.offerOf(ctx, actor, id)
	if err != nil {
		return nil, err
	}
	if _, err := s.DB.DecideOffer(ctx, o.ID, billingdb.OfferDeclined, 0, actor.Email); err != nil {
		return nil, err
	}
	s.Log.Info("offer declined", "region", o.RegionName, "tenant", o.TenantName, "by", actor.Email)
	return s.DB.OfferByID(ctx, o.ID)
}

// WithdrawOffer takes back an open offer (platform users).
func (s *Service) WithdrawOffer(ctx context.Context, actor kit.Actor, id string) error {
	if err := platformOnly(actor); err != nil {
		return err
	}
	err := s.DB.WithdrawOffer(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return &problem.Refused{Reason: "Only an open offer can be withdrawn, and " + id + " is not one."}
	}
	return err
}
