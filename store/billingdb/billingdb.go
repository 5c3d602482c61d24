// Package billingdb is the Billing module's statements: the console's billing settings,
// the regions' types and prices, the metered minutes, the charges, the closed bills and
// the billing events. It runs on the store's pool and in its tenant walls.
package billingdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"runr.dev/console/store"
)

func init() { store.RegisterSecretColumn("billing_settings", "id", "webhook_secret") }

// DB is the billing tables of a store.
type DB struct{ st *store.Store }

// New returns the billing tables of st.
func New(st *store.Store) *DB { return &DB{st: st} }

func wrap(op string, err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("billing: %s: %w", op, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("billing: %s: %w", op, err)
	}
	return nil
}

// Settings are the console's currency and where billing events go.
type Settings struct {
	Currency      string    `db:"currency"`
	WebhookURL    string    `db:"webhook_url"`
	WebhookSecret string    `db:"webhook_secret"` // decrypted
	UpdatedAt     time.Time `db:"updated_at"`
}

// Settings reads the billing settings.
func (d *DB) Settings(ctx context.Context) (*Settings, error) {
	var s Settings
	if err := d.st.In(ctx).GetContext(ctx, &s, `SELECT currency, webhook_url, webhook_secret, updated_at FROM billing_settings`); err != nil {
		return nil, wrap("read settings", err)
	}
	if s.WebhookSecret != "" {
		plain, err := d.st.Cipher.Decrypt(s.WebhookSecret)
		if err != nil {
			return nil, wrap("read the webhook secret", err)
		}
		s.WebhookSecret = plain
	}
	return &s, nil
}

// SaveSettings writes the currency and webhook URL, and the secret when secret is not nil.
func (d *DB) SaveSettings(ctx context.Context, currency, url string, secret *string) error {
	sealed := ""
	if secret != nil && *secret != "" {
		sealed = d.st.Cipher.Encrypt(*secret)
	}
	_, err := d.st.In(ctx).ExecContext(ctx, `UPDATE billing_settings SET currency = $1, webhook_url = $2,
		webhook_secret = CASE WHEN $3 THEN $4 ELSE webhook_secret END, updated_at = now()`, currency, url, secret != nil, sealed)
	return wrap("save settings", err)
}

// RegionBilling is a region's billing type, prices (micros) and fixed allocation.
type RegionBilling struct {
	RegionID            string    `db:"region_id"`
	Type                string    `db:"type"` // payg | fixed
	VCPUHourMicros      int64     `db:"vcpu_hour_micros"`
	MemoryGiBHourMicros int64     `db:"memory_gib_hour_micros"`
	GPUHourMicros       int64     `db:"gpu_hour_micros"`
	FixedPeriodMicros   int64     `db:"fixed_period_micros"`
	AllocCPUm           int64     `db:"alloc_cpu_m"`
	AllocMemoryMi       int64     `db:"alloc_memory_mi"`
	AllocGPUs           int       `db:"alloc_gpus"`
	UpdatedAt           time.Time `db:"updated_at"`
}

// Region types.
const (
	PayAsYouGo = "payg"
	Fixed      = "fixed"
)

// RegionBilling reads a region's billing (pay as you go at zero prices when never set).
func (d *DB) RegionBilling(ctx context.Context, regionID string) (*RegionBilling, error) {
	var b RegionBilling
	err := d.st.In(ctx).GetContext(ctx, &b, `SELECT * FROM region_billing WHERE region_id = $1`, regionID)
	if errors.Is(err, sql.ErrNoRows) {
		return &RegionBilling{RegionID: regionID, Type: PayAsYouGo}, nil
	}
	return &b, wrap("read region billing", err)
}

// NamedBilling is a region's name with its billing.
type NamedBilling struct {
	Name string `db:"name"`
	RegionBilling
}

// Regions lists every region (of the context's walls) with its billing, by name.
func (d *DB) Regions(ctx context.Context) ([]NamedBilling, error) {
	var out []NamedBilling
	err := d.st.In(ctx).SelectContext(ctx, &out, `SELECT r.name, r.id AS region_id, COALESCE(rb.type, 'payg') AS type,
		COALESCE(rb.vcpu_hour_micros, 0) AS vcpu_hour_micros, COALESCE(rb.memory_gib_hour_micros, 0) AS memory_gib_hour_micros,
		COALESCE(rb.gpu_hour_micros, 0) AS gpu_hour_micros, COALESCE(rb.fixed_period_micros, 0) AS fixed_period_micros,
		COALESCE(rb.alloc_cpu_m, 0) AS alloc_cpu_m, COALESCE(rb.alloc_memory_mi, 0) AS alloc_memory_mi,
		COALESCE(rb.alloc_gpus, 0) AS alloc_gpus, COALESCE(rb.updated_at, r.created_at) AS updated_at
		FROM regions r LEFT JOIN region_billing rb ON rb.region_id = r.id ORDER BY r.name`)
	return out, wrap("list regions with their billing", err)
}

// SaveRegionBilling writes a region's billing.
func (d *DB) SaveRegionBilling(ctx context.Context, b *RegionBilling) error {
	_, err := d.st.In(ctx).ExecContext(ctx, `INSERT INTO region_billing (region_id, type, vcpu_hour_micros, memory_gib_hour_micros,
		gpu_hour_micros, fixed_period_micros, alloc_cpu_m, alloc_memory_mi, alloc_gpus) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (region_id) DO UPDATE SET type = $2, vcpu_hour_micros = $3, memory_gib_hour_micros = $4, gpu_hour_micros = $5,
		fixed_period_micros = $6, alloc_cpu_m = $7, alloc_memory_mi = $8, alloc_gpus = $9, updated_at = now()`,
		b.RegionID, b.Type, b.VCPUHourMicros, b.MemoryGiBHourMicros, b.GPUHourMicros, b.FixedPeriodMicros, b.AllocCPUm, b.AllocMemoryMi, b.AllocGPUs)
	return wrap("save region billing", err)
}

// Reserved sums what a region's projects that run (or are being deployed) ask for, but
// the project except: what a fixed region's allocation already holds.
func (d *DB) Reserved(ctx context.Context, regionID, except string) (cpuM, memoryMi, gpus int64, err error) {
	var r struct {
		CPU int64 `db:"cpu"`
		Mem int64 `db:"mem"`
		GPU int64 `db:"gpu"`
	}
	err = d.st.In(ctx).GetContext(ctx, &r, `SELECT COALESCE(SUM(cpu_m), 0) AS cpu, COALESCE(SUM(memory_mi), 0) AS mem,
		COALESCE(SUM(COALESCE((gpu->>'count')::int, 0)), 0) AS gpu
		FROM projects WHERE region_id = $1 AND id <> $2 AND state = 'running'`, regionID, except)
	return r.CPU, r.Mem, r.GPU, wrap("read what the region holds", err)
}
