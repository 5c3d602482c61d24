// Package store is the console's PostgreSQL access: one file per table or aggregate,
// plain SQL next to the method that runs it.
package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/oklog/ulid/v2"
	"github.com/pressly/goose/v3"

	"runr.dev/console/crypt"
	"runr.dev/console/migrations"
)

// ErrNotFound is returned when a row does not exist.
var ErrNotFound = errors.New("not found")

// ErrConflict is returned when a unique value is taken.
var ErrConflict = errors.New("already exists")

// Store is the console's database, with the cipher for secret columns.
type Store struct {
	DB     *sqlx.DB
	Cipher *crypt.Cipher
	URL    string

	// rls caches whether the console's role bypasses row-level security (scope.go).
	rls *bypass
}

// Open connects to PostgreSQL and checks the connection.
func Open(ctx context.Context, url string, cipher *crypt.Cipher) (*Store, error) {
	if url == "" {
		return nil, errors.New("store: DATABASE_URL is not set (run `make run`, or `set -a; . .data/env`)")
	}
	db, err := sqlx.Open("postgres", url)
	if err != nil {
		return nil, fmt.Errorf("store: open: %w", err)
	}
	// As many idle connections as open ones: under load a smaller idle pool closes the
	// connections it cannot keep and opens new ones at once (a PostgreSQL backend each).
	db.SetMaxOpenConns(40)
	db.SetMaxIdleConns(40)
	db.SetConnMaxIdleTime(5 * time.Minute)
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: connect: %w", err)
	}
	return &Store{DB: db, Cipher: cipher, URL: url, rls: &bypass{}}, nil
}

// Close closes the pool.
func (s *Store) Close() error { return s.DB.Close() }

func newGoose(db *sql.DB) (*goose.Provider, error) {
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS)
	if err != nil {
		return nil, fmt.Errorf("store: migrations: %w", err)
	}
	return p, nil
}

// Migrate applies every pending migration and returns how many ran.
func (s *Store) Migrate(ctx context.Context) (int, error) {
	p, err := newGoose(s.DB.DB)
	if err != nil {
		return 0, err
	}
	res, err := p.Up(ctx)
	if err != nil {
		return len(res), fmt.Errorf("store: migrate: %w", err)
	}
	return len(res), nil
}

// PendingMigrations reports how many migrations are not applied yet.
func (s *Store) PendingMigrations(ctx context.Context) (int, error) {
	p, err := newGoose(s.DB.DB)
	if err != nil {
		return 0, err
	}
	st, err := p.Status(ctx)
	if err != nil {
		return 0, fmt.Errorf("store: migration status: %w", err)
	}
	n := 0
	for _, m := range st {
		if m.State == goose.StatePending {
			n++
		}
	}
	return n, nil
}

// NewID returns a new sortable unique id (a ULID).
func NewID() string { return ulid.MustNew(ulid.Timestamp(time.Now()), rand.Reader).String() }

// orDefault sets *v to d when it is the zero value.
func orDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

// wrap wraps an error with the operation, mapping sql.ErrNoRows to ErrNotFound, a taken
// unique value to ErrConflict and an unreachable database to ErrUnavailable.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if Unavailable(err) && !errors.Is(err, ErrUnavailable) {
		return fmt.Errorf("store: %s: %w: %w", op, ErrUnavailable, err)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("store: %s: %w", op, ErrNotFound)
	}
	var pqErr *pq.Error
	if errors.As(err, &pqErr) && pqErr.Code == "23505" {
		return fmt.Errorf("store: %s: %w", op, ErrConflict)
	}
	return fmt.Errorf("store: %s: %w", op, err)
}

// likeEscape escapes a user string for a LIKE pattern.
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}
