package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	"github.com/jmoiron/sqlx"
)

// The walls between tenants are PostgreSQL's row-level security (migration 00009): a
// statement that runs in a tenant's walls sees and changes that tenant's rows only,
// whatever its WHERE says. The tenant travels in the context (WithTenant); every
// statement of such a context runs in a short transaction that first sets
// runr.tenant_id (set_config(..., true): for that transaction only, so a pooled
// connection never carries it to the next statement) and, when the console's role
// bypasses row-level security (a superuser), switches to the role runr_tenant. A
// statement per transaction, not one per request: a refused statement does not abort
// the rest of the request, and a WebSocket or a long poll holds no transaction open.

type tenantKey struct{}

// WithTenant returns a context whose statements run in a tenant's walls ("" is the
// platform: every row).
func WithTenant(ctx context.Context, tenantID string) context.Context {
	return context.WithValue(ctx, tenantKey{}, tenantID)
}

// TenantOf returns the tenant whose walls a context's statements run in ("" for the platform).
func TenantOf(ctx context.Context) string {
	t, _ := ctx.Value(tenantKey{}).(string)
	return t
}

// Querier is what the store's methods (and its sub-packages') run their statements
// with: the pool, a transaction, or the pool in a tenant's walls.
type Querier interface {
	GetContext(ctx context.Context, dest any, query string, args ...any) error
	SelectContext(ctx context.Context, dest any, query string, args ...any) error
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// db returns what a statement of ctx runs with: the pool, in the tenant's walls when
// ctx has a tenant.
func (s *Store) db(ctx context.Context) Querier {
	if t := TenantOf(ctx); t != "" {
		return walled{s: s, tenant: t}
	}
	return s.DB
}

// In is db for the store's sub-packages.
func (s *Store) In(ctx context.Context) Querier { return s.db(ctx) }

// begin starts a transaction, in the tenant's walls when ctx has a tenant.
func (s *Store) begin(ctx context.Context) (*sqlx.Tx, error) {
	tx, err := s.DB.BeginTxx(ctx, nil)
	if err != nil {
		return nil, err
	}
	if t := TenantOf(ctx); t != "" {
		if err := s.enterWalls(ctx, tx, t); err != nil {
			tx.Rollback()
			return nil, err
		}
	}
	return tx, nil
}

// enterWalls makes the rest of a transaction a tenant's.
func (s *Store) enterWalls(ctx context.Context, tx *sqlx.Tx, tenant string) error {
	switchRole, err := s.bypassesRLS(ctx)
	if err != nil {
		return err
	}
	q := `SELECT set_config('runr.tenant_id', $1, true)`
	if switchRole {
		q = `SELECT set_config('runr.tenant_id', $1, true), set_config('role', 'runr_tenant', true)`
	}
	if _, err := tx.ExecContext(ctx, q, tenant); err != nil {
		return fmt.Errorf("store: enter the walls of tenant %s: %w", tenant, err)
	}
	return nil
}

// bypass caches whether the console's role bypasses row-level security.
type bypass struct {
	mu    sync.Mutex
	known bool
	v     bool
}

// bypassesRLS reports whether the console's role bypasses row-level security (a
// superuser, or BYPASSRLS): its statements in a tenant's walls then run as runr_tenant.
func (s *Store) bypassesRLS(ctx context.Context) (bool, error) {
	s.rls.mu.Lock()
	defer s.rls.mu.Unlock()
	if s.rls.known {
		return s.rls.v, nil
	}
	if err := s.DB.GetContext(ctx, &s.rls.v, `SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user`); err != nil {
		return false, fmt.Errorf("store: role attributes: %w", err)
	}
	s.rls.known = true
	return s.rls.v, nil
}

// walled runs each statement in its own transaction in a tenant's walls.
type walled struct {
	s      *Store
	tenant string
}

func (w walled) run(ctx context.Context, f func(tx *sqlx.Tx) error) error {
	tx, err := w.s.DB.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := w.s.enterWalls(ctx, tx, w.tenant); err != nil {
		return err
	}
	if err := f(tx); err != nil {
		return err
	}
	return tx.Commit()
}

func (w walled) GetContext(ctx context.Context, dest any, query string, args ...any) error {
	return w.run(ctx, func(tx *sqlx.Tx) error { return tx.GetContext(ctx, dest, query, args...) })
}

func (w walled) SelectContext(ctx context.Context, dest any, query string, args ...any) error {
	return w.run(ctx, func(tx *sqlx.Tx) error { return tx.SelectContext(ctx, dest, query, args...) })
}

func (w walled) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	var res sql.Result
	err := w.run(ctx, func(tx *sqlx.Tx) error {
		var err error
		res, err = tx.ExecContext(ctx, query, args...)
		return err
	})
	return res, err
}
