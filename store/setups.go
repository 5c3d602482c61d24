package store

import (
	"context"
	"time"

	"runr.dev/console/crypt"
)

// RegistrySetup is a region created together with its registry (wizard step 2,
// POST /api/registry-setup/start); its status is its job's, kept 30 minutes.
type RegistrySetup struct {
	Token     string    `db:"token"`
	ID        string    `db:"id"`
	RegionID  *string   `db:"region_id"`
	JobID     *string   `db:"job_id"`
	CreatedBy string    `db:"created_by"`
	CreatedAt time.Time `db:"created_at"`
	ExpiresAt time.Time `db:"expires_at"`
	// TenantID is the tenant whose setup it is (nil: the platform's).
	TenantID *string `db:"tenant_id"`
}

// SetupTTL is how long a setup's status is kept.
const SetupTTL = 30 * time.Minute

// CreateSetup records a setup for a job.
func (s *Store) CreateSetup(ctx context.Context, jobID, createdBy string) (*RegistrySetup, error) {
	st := &RegistrySetup{}
	err := s.db(ctx).GetContext(ctx, st, `INSERT INTO registry_setups (token, id, job_id, created_by, expires_at)
		VALUES ($1, $2, $3, $4, now() + $5::interval) RETURNING *`, crypt.RandomToken("setup_"), NewID(), jobID, createdBy, SetupTTL.String())
	return st, wrap("create setup", err)
}

// SetupByToken returns a setup that has not expired.
func (s *Store) SetupByToken(ctx context.Context, token string) (*RegistrySetup, error) {
	st := &RegistrySetup{}
	err := s.db(ctx).GetContext(ctx, st, `SELECT * FROM registry_setups WHERE token = $1 AND expires_at > now()`, token)
	return st, wrap("setup", err)
}

// SetupByJob returns the setup of a job.
func (s *Store) SetupByJob(ctx context.Context, jobID string) (*RegistrySetup, error) {
	st := &RegistrySetup{}
	err := s.db(ctx).GetContext(ctx, st, `SELECT * FROM registry_setups WHERE job_id = $1`, jobID)
	return st, wrap("setup by job", err)
}

// SetSetupRegion records the region a setup created.
func (s *Store) SetSetupRegion(ctx context.Context, token, regionID string) error {
	_, err := s.db(ctx).ExecContext(ctx, `UPDATE registry_setups SET region_id = $2 WHERE token = $1`, token, regionID)
	return wrap("set setup region", err)
}

// ExtendSetup keeps a setup's status for another 30 minutes (a retry).
func (s *Store) ExtendSetup(ctx context.Context, token string) error {
	_, err := s.db(ctx).ExecContext(ctx, `UPDATE registry_setups SET expires_at = now() + $2::interval WHERE token = $1`, token, SetupTTL.String())
	return wrap("extend setup", err)
}

// PendingSetups returns the setups whose region does not exist yet, newest first.
func (s *Store) PendingSetups(ctx context.Context) ([]RegistrySetup, error) {
	var out []RegistrySetup
	err := s.db(ctx).SelectContext(ctx, &out, `SELECT * FROM registry_setups WHERE region_id IS NULL AND expires_at > now() ORDER BY created_at DESC`)
	return out, wrap("pending setups", err)
}

// NameTakenBySetup reports whether a pending setup (other than exceptJob) uses a region name.
func (s *Store) NameTakenBySetup(ctx context.Context, name, exceptJob string) (bool, error) {
	var n int
	err := s.db(ctx).GetContext(ctx, &n, `SELECT count(*) FROM registry_setups rs JOIN jobs j ON j.id = rs.job_id
		WHERE rs.region_id IS NULL AND rs.expires_at > now() AND j.params->>'name' = $1 AND j.id <> $2
		AND j.status IN ('queued', 'running', 'failed')`, name, exceptJob)
	return n > 0, wrap("name taken by setup", err)
}
