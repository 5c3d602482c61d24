package billingdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"runr.dev/console/store"
)

// Offer is a platform region offered to a tenant: assigned with its quotas once the
// tenant accepts it with its markup.
type Offer struct {
	ID         string     `db:"id" json:"id"`
	RegionID   string     `db:"region_id" json:"region_id"`
	RegionName string     `db:"region_name" json:"region_name"`
	TenantID   string     `db:"tenant_id" json:"tenant_id"`
	TenantName string     `db:"tenant_name" json:"tenant_name"`
	CPU        *float64   `db:"cpu" json:"cpu"`
	MemoryGiB  *float64   `db:"memory_gib" json:"memory_gib"`
	Status     string     `db:"status" json:"status"`
	MarkupBP   int64      `db:"markup_bp" json:"-"`
	OfferedBy  string     `db:"offered_by" json:"offered_by"`
	DecidedBy  string     `db:"decided_by" json:"decided_by,omitempty"`
	CreatedAt  time.Time  `db:"created_at" json:"created_at"`
	DecidedAt  *time.Time `db:"decided_at" json:"decided_at,omitempty"`
}

// Offer statuses.
const (
	OfferOpen     = "offered"
	OfferAccepted = "accepted"
	OfferDeclined = "declined"
)

// offerSelect reads offers with their region's and tenant's names, past the walls of
// regions (a tenant reads the name of a region offered to it before it can see the region).
const offerSelect = `SELECT o.*, r.name AS region_name, t.name AS tenant_name FROM region_offers o
	JOIN regions r ON r.id = o.region_id JOIN tenants t ON t.id = o.tenant_id`

// ErrOfferExists refuses a second offer of a region to a tenant while one is open or accepted.
var ErrOfferExists = errors.New("the region is offered to the tenant already")

// AddOffer records an open offer; a declined one of the same region and tenant stays in
// the history.
func (d *DB) AddOffer(ctx context.Context, o *Offer) error {
	o.ID, o.Status = store.NewID(), OfferOpen
	err := d.st.DB.GetContext(ctx, &o.CreatedAt, `INSERT INTO region_offers (id, region_id, tenant_id, cpu, memory_gib, offered_by)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING RETURNING created_at`, o.ID, o.RegionID, o.TenantID, o.CPU, o.MemoryGiB, o.OfferedBy)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrOfferExists
	}
	return wrap("add an offer", err)
}

// Offers lists offers, open ones first, newest first; tenant "" lists every tenant's.
func (d *DB) Offers(ctx context.Context, tenant string) ([]Offer, error) {
	var out []Offer
	err := d.st.DB.SelectContext(ctx, &out, offerSelect+` WHERE ($1 = '' OR o.tenant_id = $1)
		ORDER BY o.status = 'offered' DESC, o.created_at DESC LIMIT 200`, tenant)
	return out, wrap("list offers", err)
}

// OfferByID reads one offer.
func (d *DB) OfferByID(ctx context.Context, id string) (*Offer, error) {
	var o Offer
	err := d.st.DB.GetContext(ctx, &o, offerSelect+` WHERE o.id = $1`, id)
	return &o, wrap("read offer "+id, err)
}

// DecideOffer records a tenant's answer to an open offer; false when it is not open any more.
func (d *DB) DecideOffer(ctx context.Context, id, status string, markupBP int64, by string) (bool, error) {
	res, err := d.st.DB.ExecContext(ctx, `UPDATE region_offers SET status = $2, markup_bp = $3, decided_by = $4, decided_at = now()
		WHERE id = $1 AND status = 'offered'`, id, status, markupBP, by)
	if err != nil {
		return false, wrap("decide offer "+id, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// WithdrawOffer removes an open offer (the platform takes it back).
func (d *DB) WithdrawOffer(ctx context.Context, id string) error {
	res, err := d.st.DB.ExecContext(ctx, `DELETE FROM region_offers WHERE id = $1 AND status = 'offered'`, id)
	if err != nil {
		return wrap("withdraw offer "+id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("billing: withdraw offer %s: %w", id, store.ErrNotFound)
	}
	return nil
}
