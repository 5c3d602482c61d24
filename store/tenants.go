package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Tenant is an organisation of the Tenancy module, with its own users and regions.
type Tenant struct {
	ID        string    `db:"id" json:"id"`
	Name      string    `db:"name" json:"name"`
	CreatedAt time.Time `db:"created_at" json:"created_at"`
	UpdatedAt time.Time `db:"updated_at" json:"updated_at"`

	// The counts are filled by ListTenants.
	Users       int `db:"users" json:"users"`
	Regions     int `db:"regions" json:"regions"`
	Assignments int `db:"assignments" json:"assignments"`
	Projects    int `db:"projects" json:"projects"`
}

// Assignment is a platform region assigned to a tenant, with its quotas: CPU in cores
// and memory in GiB, 0 setting no limit.
type Assignment struct {
	RegionID  string    `db:"region_id" json:"region_id"`
	TenantID  string    `db:"tenant_id" json:"tenant_id"`
	CPU       float64   `db:"cpu" json:"cpu"`
	MemoryGiB float64   `db:"memory_gib" json:"memory_gib"`
	CreatedAt time.Time `db:"created_at" json:"created_at"`
	UpdatedAt time.Time `db:"updated_at" json:"updated_at"`

	// The names are filled by the lists.
	RegionName string     `db:"region_name" json:"region_name"`
	TenantName string     `db:"tenant_name" json:"tenant_name"`
	RegionMode RegionMode `db:"region_mode" json:"region_mode"`
}

const tenantCounts = `SELECT t.*,
	(SELECT count(*) FROM users u WHERE u.tenant_id = t.id) AS users,
	(SELECT count(*) FROM regions r WHERE r.tenant_id = t.id) AS regions,
	(SELECT count(*) FROM region_assignments a WHERE a.tenant_id = t.id) AS assignments,
	(SELECT count(*) FROM projects p WHERE p.tenant_id = t.id) AS projects
	FROM tenants t`

// CreateTenant records a tenant (ErrConflict: the name is taken).
func (s *Store) CreateTenant(ctx context.Context, name string) (*Tenant, error) {
	t := &Tenant{}
	err := s.db(ctx).GetContext(ctx, t, `INSERT INTO tenants (id, name) VALUES ($1, $2)
		RETURNING *, 0 AS users, 0 AS regions, 0 AS assignments, 0 AS projects`, NewID(), strings.TrimSpace(name))
	return t, wrap("create tenant "+name, err)
}

// TenantByID returns a tenant with its counts.
func (s *Store) TenantByID(ctx context.Context, id string) (*Tenant, error) {
	t := &Tenant{}
	err := s.db(ctx).GetContext(ctx, t, tenantCounts+` WHERE t.id = $1`, id)
	return t, wrap("tenant "+id, err)
}

// TenantByName returns a tenant by name, case-insensitively.
func (s *Store) TenantByName(ctx context.Context, name string) (*Tenant, error) {
	t := &Tenant{}
	err := s.db(ctx).GetContext(ctx, t, tenantCounts+` WHERE lower(t.name) = lower($1)`, strings.TrimSpace(name))
	return t, wrap("tenant "+name, err)
}

// ListTenants returns the tenants by name, with their counts.
func (s *Store) ListTenants(ctx context.Context) ([]Tenant, error) {
	var ts []Tenant
	err := s.db(ctx).SelectContext(ctx, &ts, tenantCounts+` ORDER BY lower(t.name)`)
	return ts, wrap("list tenants", err)
}

// RenameTenant changes a tenant's name (ErrConflict: the name is taken).
func (s *Store) RenameTenant(ctx context.Context, id, name string) error {
	res, err := s.db(ctx).ExecContext(ctx, `UPDATE tenants SET name = $2, updated_at = now() WHERE id = $1`, id, strings.TrimSpace(name))
	return affected("rename tenant "+id, res, err)
}

// TenantInUseError refuses the removal of a tenant that still has regions or projects.
type TenantInUseError struct{ Regions, Projects int }

func (e *TenantInUseError) Error() string {
	return fmt.Sprintf("the tenant still has %d region(s) and %d project(s): they are removed first", e.Regions, e.Projects)
}

// DeleteTenant removes a tenant with its users, their tokens, its assignments, jobs and
// setups; it refuses while the tenant has regions or projects.
func (s *Store) DeleteTenant(ctx context.Context, id string) error {
	tx, err := s.begin(ctx)
	if err != nil {
		return wrap("delete tenant", err)
	}
	defer tx.Rollback()
	var n struct {
		Regions  int `db:"regions"`
		Projects int `db:"projects"`
	}
	if err := tx.GetContext(ctx, &n, `SELECT (SELECT count(*) FROM regions WHERE tenant_id = $1) AS regions,
		(SELECT count(*) FROM projects WHERE tenant_id = $1) AS projects`, id); err != nil {
		return wrap("delete tenant", err)
	}
	if n.Regions > 0 || n.Projects > 0 {
		return fmt.Errorf("store: delete tenant %s: %w", id, &TenantInUseError{Regions: n.Regions, Projects: n.Projects})
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM tenants WHERE id = $1`, id)
	if err := affected("delete tenant "+id, res, err); err != nil {
		return err
	}
	return wrap("delete tenant", tx.Commit())
}

const assignmentSelect = `SELECT a.*, r.name AS region_name, r.region_mode, t.name AS tenant_name
	FROM region_assignments a JOIN regions r ON r.id = a.region_id JOIN tenants t ON t.id = a.tenant_id`

// RegionAssignments returns the assignments of a region, by tenant name.
func (s *Store) RegionAssignments(ctx context.Context, regionID string) ([]Assignment, error) {
	var as []Assignment
	err := s.db(ctx).SelectContext(ctx, &as, assignmentSelect+` WHERE a.region_id = $1 ORDER BY lower(t.name)`, regionID)
	return as, wrap("assignments of region "+regionID, err)
}

// TenantAssignments returns the assignments of a tenant, by region name.
func (s *Store) TenantAssignments(ctx context.Context, tenantID string) ([]Assignment, error) {
	var as []Assignment
	err := s.db(ctx).SelectContext(ctx, &as, assignmentSelect+` WHERE a.tenant_id = $1 ORDER BY r.name`, tenantID)
	return as, wrap("assignments of tenant "+tenantID, err)
}

// AssignmentOf returns the assignment of a region to a tenant.
func (s *Store) AssignmentOf(ctx context.Context, regionID, tenantID string) (*Assignment, error) {
	a := &Assignment{}
	err := s.db(ctx).GetContext(ctx, a, assignmentSelect+` WHERE a.region_id = $1 AND a.tenant_id = $2`, regionID, tenantID)
	return a, wrap("assignment of region "+regionID+" to tenant "+tenantID, err)
}

// AssignmentCheck decides whether an assignment may be saved, given the region (read
// under a lock) and the region's other assignments; it may change the assignment (its
// defaults) and refuses with an error.
type AssignmentCheck func(r *Region, others []Assignment, a *Assignment) error

// SaveAssignment creates (create) or changes the assignment of a region to a tenant.
// The region's row is locked while check looks at the other assignments, so that two
// assignments at once never add up to more than check allows.
func (s *Store) SaveAssignment(ctx context.Context, a *Assignment, create bool, check AssignmentCheck) error {
	tx, err := s.begin(ctx)
	if err != nil {
		return wrap("save assignment", err)
	}
	defer tx.Rollback()
	r := &Region{}
	if err := tx.GetContext(ctx, r, `SELECT `+regionPublicColumns+` FROM regions r WHERE r.id = $1 FOR UPDATE`, a.RegionID); err != nil {
		return wrap("region "+a.RegionID, err)
	}
	var others []Assignment
	if err := tx.SelectContext(ctx, &others, assignmentSelect+` WHERE a.region_id = $1 AND a.tenant_id <> $2`, a.RegionID, a.TenantID); err != nil {
		return wrap("save assignment", err)
	}
	if err := check(r, others, a); err != nil {
		return err
	}
	if err := upsertAssignment(ctx, tx, a, create); err != nil {
		return err
	}
	return wrap("save assignment", tx.Commit())
}

func upsertAssignment(ctx context.Context, tx *sqlx.Tx, a *Assignment, create bool) error {
	q := `INSERT INTO region_assignments (region_id, tenant_id, cpu, memory_gib) VALUES ($1, $2, $3, $4) RETURNING created_at, updated_at`
	if !create {
		q = `UPDATE region_assignments SET cpu = $3, memory_gib = $4, updated_at = now() WHERE region_id = $1 AND tenant_id = $2
			RETURNING created_at, updated_at`
	}
	var at struct {
		CreatedAt time.Time `db:"created_at"`
		UpdatedAt time.Time `db:"updated_at"`
	}
	err := tx.GetContext(ctx, &at, q, a.RegionID, a.TenantID, a.CPU, a.MemoryGiB)
	var pqErr *pq.Error
	if errors.As(err, &pqErr) && pqErr.Code == "23503" {
		return fmt.Errorf("store: assign region %s: tenant %s: %w", a.RegionID, a.TenantID, ErrNotFound)
	}
	if err != nil {
		return wrap("assign region "+a.RegionID+" to tenant "+a.TenantID, err)
	}
	a.CreatedAt, a.UpdatedAt = at.CreatedAt, at.UpdatedAt
	return nil
}

// DeleteAssignment removes the assignment of a region to a tenant.
func (s *Store) DeleteAssignment(ctx context.Context, regionID, tenantID string) error {
	res, err := s.db(ctx).ExecContext(ctx, `DELETE FROM region_assignments WHERE region_id = $1 AND tenant_id = $2`, regionID, tenantID)
	return affected("delete assignment of region "+regionID+" to tenant "+tenantID, res, err)
}

// TenantReservations sums the requests of a tenant's running projects on a region, split
// into the always-on ones and the others (FaaS), leaving out one project ("" none).
func (s *Store) TenantReservations(ctx context.Context, regionID, tenantID, exceptProject string) (alwaysOn, faas Reservation, err error) {
	var rows []struct {
		AlwaysOn bool `db:"always_on"`
		Reservation
	}
	err = s.db(ctx).SelectContext(ctx, &rows, `SELECT always_on, count(*) AS projects,
		coalesce(sum(cpu_m), 0) AS cpu_m, coalesce(sum(memory_mi), 0) AS memory_mi
		FROM projects WHERE region_id = $1 AND tenant_id = $2 AND state = 'running' AND id <> $3 GROUP BY always_on`,
		regionID, tenantID, exceptProject)
	if err != nil {
		return alwaysOn, faas, wrap("reservations of tenant "+tenantID+" on region "+regionID, err)
	}
	for _, r := range rows {
		if r.AlwaysOn {
			alwaysOn = r.Reservation
		} else {
			faas = r.Reservation
		}
	}
	return alwaysOn, faas, nil
}

// RegionNameInUse reports whether any region, of any tenant, or a setup under way
// (other than exceptJob's) has a name: region names are one namespace for everyone.
// It looks past the walls on purpose and answers a yes or no only.
func (s *Store) RegionNameInUse(ctx context.Context, name, exceptJob string) (region, setup bool, err error) {
	var row struct {
		Region bool `db:"region"`
		Setup  bool `db:"setup"`
	}
	err = s.DB.GetContext(ctx, &row, `SELECT EXISTS (SELECT 1 FROM regions WHERE name = $1) AS region,
		EXISTS (SELECT 1 FROM registry_setups rs JOIN jobs j ON j.id = rs.job_id
			WHERE rs.region_id IS NULL AND rs.expires_at > now() AND j.params->>'name' = $1 AND j.id <> $2
			AND j.status IN ('queued', 'running', 'failed')) AS setup`, name, exceptJob)
	return row.Region, row.Setup, wrap("region name "+name, err)
}

// ClusterHostsOtherOwner reports whether a cluster hosts a region (other than
// exceptRegion) whose owner is not tenantID ("" is the platform). The regions of one
// cluster share its agent, Knative Serving and tracing, so a cluster serves one owner. It
// looks past the walls on purpose and answers a yes or no only.
func (s *Store) ClusterHostsOtherOwner(ctx context.Context, clusterKey, tenantID, exceptRegion string) (bool, error) {
	var other bool
	err := s.DB.GetContext(ctx, &other, `SELECT EXISTS (SELECT 1 FROM regions
		WHERE cluster_key = $1 AND COALESCE(tenant_id, '') <> $2 AND id <> $3)`, clusterKey, tenantID, exceptRegion)
	return other, wrap("owners of cluster "+clusterKey, err)
}
