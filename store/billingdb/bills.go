package billingdb

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"runr.dev/console/store"
)

// Bill is an account's closed bill of one period. Lines are what its charges priced to,
// with the region's and project's names as they were.
type Bill struct {
	ID          string    `db:"id"`
	TenantID    *string   `db:"tenant_id"`
	PeriodStart time.Time `db:"period_start"`
	PeriodEnd   time.Time `db:"period_end"`
	Currency    string    `db:"currency"`
	TotalMinor  int64     `db:"total_minor"`
	// BaseTotalMinor is the total at the platform's prices, before a tenant's markup.
	BaseTotalMinor int64                  `db:"base_total_minor"`
	Lines          store.JSON[[]BillLine] `db:"lines"`
	ClosedAt       time.Time              `db:"closed_at"`
}

// BillLine is one charge of a closed bill.
type BillLine struct {
	ChargeID            string `json:"charge_id"`
	RegionID            string `json:"region_id"`
	RegionName          string `json:"region_name"`
	ProjectID           string `json:"project_id,omitempty"`
	ProjectName         string `json:"project_name,omitempty"`
	Type                string `json:"type"`
	CPUMinutesM         int64  `json:"cpu_minutes_m"`
	MemoryMinutesMi     int64  `json:"memory_minutes_mi"`
	GPUMinutes          int64  `json:"gpu_minutes"`
	VCPUHourMicros      int64  `json:"vcpu_hour_micros"`
	MemoryGiBHourMicros int64  `json:"memory_gib_hour_micros"`
	GPUHourMicros       int64  `json:"gpu_hour_micros"`
	FixedPeriodMicros   int64  `json:"fixed_period_micros"`
	MarkupBP            int64  `json:"markup_bp"`
	AmountMinor         int64  `json:"amount_minor"`
	BaseAmountMinor     int64  `json:"base_amount_minor"`
}

// CloseBill closes an account's bill of a period (b's TenantID and PeriodStart) in one
// transaction: it locks the period's open charges of the account, has build price them into
// b's lines and totals and return the bill.closed event, writes the bill, marks the
// charges billed and records the event. A minute metered meanwhile waits for the lock and
// then finds the charge billed. Nothing open, or a bill of the same account and period
// closed meanwhile by another console process, makes it a no-op (closed false).
func (d *DB) CloseBill(ctx context.Context, b *Bill, build func(cs []Charge) (*Event, error)) (closed bool, err error) {
	tx, err := d.st.DB.BeginTxx(ctx, nil)
	if err != nil {
		return false, wrap("close a bill", err)
	}
	defer tx.Rollback()
	const account = `period_start = $1 AND COALESCE(tenant_id, '') = COALESCE($2, '') AND bill_id IS NULL`
	var cs []Charge
	if err := tx.SelectContext(ctx, &cs, `SELECT * FROM charges WHERE `+account+` ORDER BY region_name, project_name FOR UPDATE`,
		b.PeriodStart, b.TenantID); err != nil || len(cs) == 0 {
		return false, wrap("close a bill", err)
	}
	ev, err := build(cs)
	if err != nil {
		return false, err
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO bills (id, tenant_id, period_start, period_end, currency, total_minor, base_total_minor, lines)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`,
		b.ID, b.TenantID, b.PeriodStart, b.PeriodEnd, b.Currency, b.TotalMinor, b.BaseTotalMinor, b.Lines)
	if err != nil {
		return false, wrap("close a bill", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return false, nil
	}
	if _, err = tx.ExecContext(ctx, `UPDATE charges SET bill_id = $3 WHERE `+account, b.PeriodStart, b.TenantID, b.ID); err != nil {
		return false, wrap("close a bill", err)
	}
	if err := addEvent(ctx, tx, ev); err != nil {
		return false, err
	}
	return true, wrap("close a bill", tx.Commit())
}

// Bills lists closed bills, newest first.
func (d *DB) Bills(ctx context.Context, f Filter) ([]Bill, error) {
	var out []Bill
	err := d.st.In(ctx).SelectContext(ctx, &out, `SELECT * FROM bills
		WHERE ($1::timestamptz IS NULL OR period_start = $1) AND ($2::text IS NULL OR COALESCE(tenant_id, '') = $2)
		AND ($3 = '' OR lines @> jsonb_build_array(jsonb_build_object('region_id', $3::text)))
		ORDER BY period_start DESC, closed_at DESC LIMIT $4 OFFSET $5`, f.PeriodStart, f.TenantID, f.RegionID, f.Limit, f.Offset)
	return out, wrap("list bills", err)
}

// Bill reads one closed bill.
func (d *DB) Bill(ctx context.Context, id string) (*Bill, error) {
	var b Bill
	err := d.st.In(ctx).GetContext(ctx, &b, `SELECT * FROM bills WHERE id = $1`, id)
	return &b, wrap("read bill "+id, err)
}

// Event is a billing event: kept for GET /api/billing/events and, with a webhook URL,
// delivered with retries until delivered or dead.
type Event struct {
	ID            string          `db:"id" json:"id"`
	Seq           int64           `db:"seq" json:"seq"`
	TenantID      *string         `db:"tenant_id" json:"tenant_id"`
	Type          string          `db:"type" json:"type"`
	Payload       json.RawMessage `db:"payload" json:"data"`
	Status        string          `db:"status" json:"status"`
	Attempts      int             `db:"attempts" json:"attempts"`
	NextAttemptAt *time.Time      `db:"next_attempt_at" json:"next_attempt_at,omitempty"`
	LastError     string          `db:"last_error" json:"last_error,omitempty"`
	DeliveredAt   *time.Time      `db:"delivered_at" json:"delivered_at,omitempty"`
	CreatedAt     time.Time       `db:"created_at" json:"created_at"`
}

// Event statuses.
const (
	EventKept      = "kept"
	EventPending   = "pending"
	EventDelivered = "delivered"
	EventDead      = "dead"
)

func addEvent(ctx context.Context, q sqlx.ExecerContext, e *Event) error {
	if e == nil {
		return nil
	}
	_, err := q.ExecContext(ctx, `INSERT INTO billing_events (id, tenant_id, type, payload, status, next_attempt_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, e.ID, e.TenantID, e.Type, []byte(e.Payload), e.Status, e.NextAttemptAt, e.CreatedAt)
	return wrap("add a billing event", err)
}

// AddEvent records a billing event.
func (d *DB) AddEvent(ctx context.Context, e *Event) error { return addEvent(ctx, d.st.DB, e) }

// Events lists billing events, newest first; status "" lists every status.
func (d *DB) Events(ctx context.Context, status string, f Filter) ([]Event, error) {
	var out []Event
	err := d.st.In(ctx).SelectContext(ctx, &out, `SELECT * FROM billing_events
		WHERE ($1 = '' OR status = $1) AND ($2::text IS NULL OR COALESCE(tenant_id, '') = $2) AND ($5 = '' OR id = $5)
		ORDER BY seq DESC LIMIT $3 OFFSET $4`, status, f.TenantID, f.Limit, f.Offset, f.EventID)
	return out, wrap("list billing events", err)
}

// ClaimDue takes up to n pending events whose attempt is due, for lease: no other
// console process takes them until the lease ends.
func (d *DB) ClaimDue(ctx context.Context, now time.Time, lease time.Duration, n int) ([]Event, error) {
	var out []Event
	err := d.st.DB.SelectContext(ctx, &out, `UPDATE billing_events SET next_attempt_at = $2 WHERE id IN (
			SELECT id FROM billing_events WHERE status = 'pending' AND next_attempt_at <= $1 ORDER BY seq LIMIT $3 FOR UPDATE SKIP LOCKED)
		RETURNING *`, now, now.Add(lease), n)
	return out, wrap("claim due billing events", err)
}

// Delivered records a delivered event.
func (d *DB) Delivered(ctx context.Context, id string, at time.Time) error {
	_, err := d.st.DB.ExecContext(ctx, `UPDATE billing_events SET status = 'delivered', attempts = attempts + 1,
		delivered_at = $2, next_attempt_at = NULL, last_error = '' WHERE id = $1`, id, at)
	return wrap("record a delivery", err)
}

// Failed records a failed attempt: the next one at next, or dead (next nil).
func (d *DB) Failed(ctx context.Context, id, why string, next *time.Time) error {
	_, err := d.st.DB.ExecContext(ctx, `UPDATE billing_events SET attempts = attempts + 1, last_error = $2,
		next_attempt_at = $3, status = CASE WHEN $3::timestamptz IS NULL THEN 'dead' ELSE status END WHERE id = $1`, id, why, next)
	return wrap("record a failed delivery", err)
}

// Redeliver puts a dead event back in the queue, due now.
func (d *DB) Redeliver(ctx context.Context, id string, now time.Time) error {
	res, err := d.st.DB.ExecContext(ctx, `UPDATE billing_events SET status = 'pending', attempts = 0, next_attempt_at = $2
		WHERE id = $1 AND status = 'dead'`, id, now)
	if err != nil {
		return wrap("redeliver an event", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("billing: redeliver event %s: %w", id, store.ErrNotFound)
	}
	return nil
}
