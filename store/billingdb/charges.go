package billingdb

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"runr.dev/console/store"
)

// MeteredProject is what metering reads of a project: its name, region, account and state.
type MeteredProject struct {
	ID       string  `db:"id"`
	Name     string  `db:"name"`
	RegionID *string `db:"region_id"`
	TenantID *string `db:"tenant_id"`
	State    string  `db:"state"`
}

// MeteredProjects reads the running projects among ids that are in one of the regions.
func (d *DB) MeteredProjects(ctx context.Context, ids, regionIDs []string) ([]MeteredProject, error) {
	var out []MeteredProject
	err := d.st.DB.SelectContext(ctx, &out, `SELECT id, name, region_id, tenant_id, state FROM projects
		WHERE id = ANY($1) AND region_id = ANY($2) AND state = 'running'`, pq.Array(ids), pq.Array(regionIDs))
	return out, wrap("read the metered projects", err)
}

// Minute is one project's use in one minute, as its cluster's agent reported it.
type Minute struct {
	ProjectID string
	Minute    time.Time // truncated to the minute, UTC
	CPUm      int64
	MemoryMi  int64
	GPUs      int64
}

// Metered is what recording a minute did: whether it counted (a repeated minute does
// not), and the charge it went into (Created when this minute opened it).
type Metered struct {
	Counted  bool
	ChargeID string
	Created  bool
	// AllocationID is the fixed region's allocation charge this minute opened ("" for none).
	AllocationID string
	// Closed is true when the minute's period is billed already: the minute is kept, the
	// closed bill does not change.
	Closed bool
}

// Meter records a minute of a project in a region and adds it to the open charge of its
// account, region, project and period (periodStart), priced at the region's prices. A
// minute recorded before counts nothing; one of a period whose bill is closed is kept
// and changes no charge.
func (d *DB) Meter(ctx context.Context, regionID, regionName string, p *MeteredProject, m Minute, periodStart time.Time) (Metered, error) {
	var out Metered
	tx, err := d.st.DB.BeginTxx(ctx, nil)
	if err != nil {
		return out, wrap("meter", err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `INSERT INTO usage_minutes (project_id, minute, region_id, tenant_id, cpu_m, memory_mi, gpus)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`, p.ID, m.Minute, regionID, p.TenantID, m.CPUm, m.MemoryMi, m.GPUs)
	if err != nil {
		return out, wrap("meter", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return out, nil
	}
	out.Counted = true
	var row struct {
		ID      string `db:"id"`
		Created bool   `db:"created"`
	}
	err = tx.GetContext(ctx, &row, `INSERT INTO charges (id, tenant_id, period_start, region_id, region_name, project_id, project_name, type,
			cpu_minutes_m, memory_minutes_mi, gpu_minutes, vcpu_hour_micros, memory_gib_hour_micros, gpu_hour_micros, markup_bp)
		SELECT $1, $2, $3, $4, $5, $6, $7, COALESCE(rb.type, 'payg'), $8, $9, $10,
			CASE WHEN rb.type = 'payg' THEN rb.vcpu_hour_micros ELSE 0 END,
			CASE WHEN rb.type = 'payg' THEN rb.memory_gib_hour_micros ELSE 0 END,
			CASE WHEN rb.type = 'payg' THEN rb.gpu_hour_micros ELSE 0 END,
			COALESCE((SELECT o.markup_bp FROM region_offers o WHERE o.region_id = $4 AND o.tenant_id = $2 AND o.status = 'accepted'), 0)
		FROM (SELECT 1) one LEFT JOIN region_billing rb ON rb.region_id = $4
		WHERE NOT EXISTS (SELECT 1 FROM bills b WHERE b.period_start = $3 AND COALESCE(b.tenant_id, '') = COALESCE($2, ''))
		ON CONFLICT (period_start, (COALESCE(tenant_id, '')), region_id, project_id) DO UPDATE SET
			cpu_minutes_m = charges.cpu_minutes_m + EXCLUDED.cpu_minutes_m,
			memory_minutes_mi = charges.memory_minutes_mi + EXCLUDED.memory_minutes_mi,
			gpu_minutes = charges.gpu_minutes + EXCLUDED.gpu_minutes,
			type = EXCLUDED.type, vcpu_hour_micros = EXCLUDED.vcpu_hour_micros,
			memory_gib_hour_micros = EXCLUDED.memory_gib_hour_micros, gpu_hour_micros = EXCLUDED.gpu_hour_micros,
			markup_bp = EXCLUDED.markup_bp, region_name = EXCLUDED.region_name, project_name = EXCLUDED.project_name, updated_at = now()
		WHERE charges.bill_id IS NULL
		RETURNING id, (xmax = 0) AS created`,
		store.NewID(), p.TenantID, periodStart, regionID, regionName, p.ID, p.Name, m.CPUm, m.MemoryMi, m.GPUs)
	switch {
	case err == nil:
		out.ChargeID, out.Created = row.ID, row.Created
	case errors.Is(err, sql.ErrNoRows):
		out.Closed = true
	default:
		return out, wrap("meter", err)
	}
	if out.Created {
		if out.AllocationID, err = addFixedAllocation(ctx, tx, regionID, regionName, periodStart); err != nil {
			return out, err
		}
	}
	return out, wrap("meter", tx.Commit())
}

// addFixedAllocation opens the allocation charge of a fixed region for a period (its
// owner's: the tenant that owns the region, or the platform), once; it returns the new
// charge's id ("" when there is none to open).
func addFixedAllocation(ctx context.Context, tx *sqlx.Tx, regionID, regionName string, periodStart time.Time) (string, error) {
	var id string
	err := tx.GetContext(ctx, &id, `INSERT INTO charges (id, tenant_id, period_start, region_id, region_name, project_id, project_name, type, fixed_period_micros)
		SELECT $1, r.tenant_id, $2, r.id, $3, '', '', 'fixed', rb.fixed_period_micros
		FROM region_billing rb JOIN regions r ON r.id = rb.region_id
		WHERE rb.region_id = $4 AND rb.type = 'fixed'
		AND NOT EXISTS (SELECT 1 FROM bills b WHERE b.period_start = $2 AND COALESCE(b.tenant_id, '') = COALESCE(r.tenant_id, ''))
		ON CONFLICT DO NOTHING RETURNING id`, store.NewID(), periodStart, regionName, regionID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return id, wrap("open the allocation charge", err)
}

// OpenAllocation opens a fixed region's allocation charge for a period (when the region
// becomes fixed) and returns its id; "" when it is not fixed or the charge is open already.
func (d *DB) OpenAllocation(ctx context.Context, regionID, regionName string, periodStart time.Time) (string, error) {
	tx, err := d.st.DB.BeginTxx(ctx, nil)
	if err != nil {
		return "", wrap("open the allocation charge", err)
	}
	defer tx.Rollback()
	id, err := addFixedAllocation(ctx, tx, regionID, regionName, periodStart)
	if err != nil {
		return "", err
	}
	return id, wrap("open the allocation charge", tx.Commit())
}

// Charge is an open or billed charge: an account's use of one project (or a fixed
// region's allocation, ProjectID "") in one region and period, and its prices.
type Charge struct {
	ID                  string    `db:"id"`
	TenantID            *string   `db:"tenant_id"`
	PeriodStart         time.Time `db:"period_start"`
	RegionID            string    `db:"region_id"`
	RegionName          string    `db:"region_name"`
	ProjectID           string    `db:"project_id"`
	ProjectName         string    `db:"project_name"`
	Type                string    `db:"type"`
	CPUMinutesM         int64     `db:"cpu_minutes_m"`
	MemoryMinutesMi     int64     `db:"memory_minutes_mi"`
	GPUMinutes          int64     `db:"gpu_minutes"`
	VCPUHourMicros      int64     `db:"vcpu_hour_micros"`
	MemoryGiBHourMicros int64     `db:"memory_gib_hour_micros"`
	GPUHourMicros       int64     `db:"gpu_hour_micros"`
	FixedPeriodMicros   int64     `db:"fixed_period_micros"`
	MarkupBP            int64     `db:"markup_bp"`
	BillID              *string   `db:"bill_id"`
	CreatedAt           time.Time `db:"created_at"`
	UpdatedAt           time.Time `db:"updated_at"`
}

// Filter narrows a list of charges, bills or events; zero values do not narrow.
type Filter struct {
	PeriodStart *time.Time
	TenantID    *string // "" is the platform's account
	RegionID    string
	ChargeID    string
	EventID     string
	Limit       int
	Offset      int
}

// Charges lists charges, newest period first.
func (d *DB) Charges(ctx context.Context, f Filter) ([]Charge, error) {
	var out []Charge
	err := d.st.In(ctx).SelectContext(ctx, &out, `SELECT * FROM charges
		WHERE ($1::timestamptz IS NULL OR period_start = $1) AND ($2::text IS NULL OR COALESCE(tenant_id, '') = $2)
		AND ($3 = '' OR region_id = $3) AND ($6 = '' OR id = $6)
		ORDER BY period_start DESC, region_name, project_name LIMIT $4 OFFSET $5`,
		f.PeriodStart, f.TenantID, f.RegionID, f.Limit, f.Offset, f.ChargeID)
	return out, wrap("list charges", err)
}

// FixedRegion is a fixed region's id and name.
type FixedRegion struct {
	ID   string `db:"id"`
	Name string `db:"name"`
}

// FixedRegions lists the regions billed as fixed resources.
func (d *DB) FixedRegions(ctx context.Context) ([]FixedRegion, error) {
	var out []FixedRegion
	err := d.st.DB.SelectContext(ctx, &out, `SELECT r.id, r.name FROM region_billing rb JOIN regions r ON r.id = rb.region_id
		WHERE rb.type = 'fixed' ORDER BY r.name`)
	return out, wrap("list fixed regions", err)
}

// Account is an account's period: a tenant's (or the platform's, TenantID nil) month.
type Account struct {
	PeriodStart time.Time `db:"period_start"`
	TenantID    *string   `db:"tenant_id"`
}

// Unbilled lists the accounts and periods with open charges whose period began before
// the given start (it has ended).
func (d *DB) Unbilled(ctx context.Context, before time.Time) ([]Account, error) {
	var out []Account
	err := d.st.DB.SelectContext(ctx, &out, `SELECT DISTINCT period_start, tenant_id FROM charges WHERE bill_id IS NULL AND period_start < $1
		ORDER BY period_start`, before)
	return out, wrap("list unbilled accounts", err)
}
