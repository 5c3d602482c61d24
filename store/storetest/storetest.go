// Package storetest gives each test its own real PostgreSQL database, cloned from a
// migrated template. `make test` starts the server and sets RUNR_TEST_DATABASE_URL.
package storetest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	_ "github.com/lib/pq"

	"runr.dev/console/crypt"
	"runr.dev/console/migrations"
	"runr.dev/console/store"
)

// AppKey is the APP_KEY of test stores.
const AppKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

var templateOnce sync.Once
var templateName string
var templateErr error

// AdminURL returns the test server's URL (database postgres); the test fails without it.
func AdminURL(t testing.TB) string {
	u := os.Getenv("RUNR_TEST_DATABASE_URL")
	if u == "" {
		t.Fatal("RUNR_TEST_DATABASE_URL is not set: run the tests with `make test`, which starts PostgreSQL")
	}
	return u
}

func withDB(raw, db string) string {
	u, err := url.Parse(raw)
	if err != nil {
		panic(err)
	}
	u.Path = "/" + db
	return u.String()
}

func migrationsHash() string {
	h := sha256.New()
	_ = fs.WalkDir(migrations.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := migrations.FS.ReadFile(p)
			h.Write([]byte(p))
			h.Write(b)
		}
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))[:12]
}

func ensureTemplate(admin string) (string, error) {
	templateOnce.Do(func() {
		name := "runr_tmpl_" + migrationsHash()
		db, err := sql.Open("postgres", admin)
		if err != nil {
			templateErr = err
			return
		}
		defer db.Close()
		ctx := context.Background()
		conn, err := db.Conn(ctx)
		if err != nil {
			templateErr = err
			return
		}
		defer conn.Close()
		// Several test packages may get here at once.
		if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(4242)`); err != nil {
			templateErr = err
			return
		}
		defer conn.ExecContext(ctx, `SELECT pg_advisory_unlock(4242)`)
		var exists bool
		if err := conn.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
			templateErr = err
			return
		}
		if !exists {
			if _, err := conn.ExecContext(ctx, `CREATE DATABASE `+name); err != nil {
				templateErr = err
				return
			}
			cipher, _ := crypt.NewCipher(AppKey)
			st, err := store.Open(ctx, withDB(admin, name), cipher)
			if err != nil {
				templateErr = err
				return
			}
			_, err = st.Migrate(ctx)
			st.Close()
			if err != nil {
				conn.ExecContext(ctx, `DROP DATABASE `+name)
				templateErr = err
				return
			}
		}
		templateName = name
	})
	return templateName, templateErr
}

// NewURL creates a fresh migrated database for the test and returns its URL; it is
// dropped when the test ends.
func NewURL(t testing.TB) string {
	t.Helper()
	admin := AdminURL(t)
	tmpl, err := ensureTemplate(admin)
	if err != nil {
		t.Fatalf("storetest: template database: %v", err)
	}
	name := "t_" + strings.ToLower(store.NewID())
	db, err := sql.Open("postgres", admin)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(fmt.Sprintf(`CREATE DATABASE %s TEMPLATE %s`, name, tmpl)); err != nil {
		t.Fatalf("storetest: create database: %v", err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("postgres", admin)
		if err != nil {
			return
		}
		defer db.Close()
		db.Exec(fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, name))
	})
	return withDB(admin, name)
}

// New returns a store on a fresh migrated database.
func New(t testing.TB) *store.Store {
	t.Helper()
	cipher, err := crypt.NewCipher(AppKey)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), NewURL(t), cipher)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// EmptyURL returns the URL of a new database without any migration (dropped when the
// test ends), for a test that migrates it with another version of the console.
func EmptyURL(t testing.TB) string {
	t.Helper()
	admin := AdminURL(t)
	name := "e_" + strings.ToLower(store.NewID())
	db, err := sql.Open("postgres", admin)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(fmt.Sprintf(`CREATE DATABASE %s TEMPLATE template0`, name)); err != nil {
		t.Fatalf("storetest: create database: %v", err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("postgres", admin)
		if err != nil {
			return
		}
		defer db.Close()
		db.Exec(fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, name))
	})
	return withDB(admin, name)
}
