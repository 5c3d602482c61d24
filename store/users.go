package store

import (
	"context"
	"runr.dev/console/problem"
	"strings"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	"golang.org/x/crypto/bcrypt"
	"runr.dev/console/crypt"
)

// User is a person who logs in to the console.
type User struct {
	ID           string     `db:"id" json:"id"`
	Email        string     `db:"email" json:"email"`
	Name         string     `db:"name" json:"name"`
	PasswordHash string     `db:"password_hash" json:"-"`
	Role         string     `db:"role" json:"role"`
	CreatedAt    time.Time  `db:"created_at" json:"created_at"`
	UpdatedAt    time.Time  `db:"updated_at" json:"updated_at"`
	LastLoginAt  *time.Time `db:"last_login_at" json:"last_login_at"`
	// TenantID is the user's tenant (nil: a platform user).
	TenantID *string `db:"tenant_id" json:"-"`
	// SessionGeneration is the generation a session must carry: a password change or
	// "sign out other sessions" moves it on, which signs out every older session.
	SessionGeneration int `db:"session_generation" json:"-"`
}

// Tenant returns the user's tenant id ("" for a platform user).
func (u *User) Tenant() string {
	if u == nil {
		return ""
	}
	return deref(u.TenantID)
}

// Roles lists the roles, strongest first.
var Roles = []string{"owner", "admin", "member", "viewer"}

// ValidRole reports whether r is a known role.
func ValidRole(r string) bool {
	for _, x := range Roles {
		if x == r {
			return true
		}
	}
	return false
}

// HashPassword hashes a password with bcrypt.
func HashPassword(p string) (string, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(p), bcrypt.DefaultCost)
	return string(h), err
}

// CheckPassword reports whether p matches the user's password hash.
func (u *User) CheckPassword(p string) bool {
	return bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(p)) == nil
}

// CreateUser inserts a user with a hashed password.
func (s *Store) CreateUser(ctx context.Context, email, name, role, password string) (*User, error) {
	h, err := HashPassword(password)
	if err != nil {
		return nil, wrap("create user", err)
	}
	u := &User{}
	err = s.db(ctx).GetContext(ctx, u, `INSERT INTO users (id, email, name, role, password_hash)
		VALUES ($1, $2, $3, $4, $5) RETURNING *`, NewID(), strings.TrimSpace(email), name, role, h)
	return u, wrap("create user "+email, err)
}

// UserByID returns one user.
func (s *Store) UserByID(ctx context.Context, id string) (*User, error) {
	u := &User{}
	err := s.db(ctx).GetContext(ctx, u, `SELECT * FROM users WHERE id = $1`, id)
	return u, wrap("user "+id, err)
}

// UserByEmail returns the user with that e-mail, case-insensitively.
func (s *Store) UserByEmail(ctx context.Context, email string) (*User, error) {
	u := &User{}
	err := s.db(ctx).GetContext(ctx, u, `SELECT * FROM users WHERE lower(email) = lower($1)`, strings.TrimSpace(email))
	return u, wrap("user "+email, err)
}

// sameCircle keeps the users of the context's circle: a tenant's users in its walls,
// the platform's users (no tenant) outside them. The owner rules hold within a circle.
const sameCircle = `tenant_id IS NOT DISTINCT FROM runr_tenant()`

// ListUsers returns the users of the context's circle (the platform's, or a tenant's), by e-mail.
func (s *Store) ListUsers(ctx context.Context) ([]User, error) {
	var us []User
	err := s.db(ctx).SelectContext(ctx, &us, `SELECT * FROM users WHERE `+sameCircle+` ORDER BY lower(email)`)
	return us, wrap("list users", err)
}

// CountUsers counts the users of the context's circle, optionally of one role ("" for all).
func (s *Store) CountUsers(ctx context.Context, role string) (int, error) {
	var n int
	err := s.db(ctx).GetContext(ctx, &n, `SELECT count(*) FROM users WHERE ($1 = '' OR role = $1) AND `+sameCircle, role)
	return n, wrap("count users", err)
}

// CircleUserByID returns a user of the context's circle (ErrNotFound for anyone else's).
func (s *Store) CircleUserByID(ctx context.Context, id string) (*User, error) {
	u := &User{}
	err := s.db(ctx).GetContext(ctx, u, `SELECT * FROM users WHERE id = $1 AND `+sameCircle, id)
	return u, wrap("user "+id, err)
}

// SetUserRole changes a user's role.
func (s *Store) SetUserRole(ctx context.Context, id, role string) error {
	res, err := s.db(ctx).ExecContext(ctx, `UPDATE users SET role = $2, updated_at = now() WHERE id = $1`, id, role)
	return affected("set role of user "+id, res, err)
}

// ChangePassword sets a user's password and, in the same statement, moves their session
// generation on (every session signed in before is signed out); it returns the new
// generation, for the session that asked to keep.
func (s *Store) ChangePassword(ctx context.Context, id, password string) (int, error) {
	h, err := HashPassword(password)
	if err != nil {
		return 0, wrap("change password", err)
	}
	var gen int
	err = s.db(ctx).GetContext(ctx, &gen, `UPDATE users SET password_hash = $2, session_generation = session_generation + 1,
		updated_at = now() WHERE id = $1 RETURNING session_generation`, id, h)
	return gen, wrap("change password of user "+id, err)
}

// EndOtherSessions moves a user's session generation on, which signs out every session
// signed in before; it returns the new generation, for the session that asked to keep.
func (s *Store) EndOtherSessions(ctx context.Context, id string) (int, error) {
	var gen int
	err := s.db(ctx).GetContext(ctx, &gen, `UPDATE users SET session_generation = session_generation + 1
		WHERE id = $1 RETURNING session_generation`, id)
	return gen, wrap("end the other sessions of user "+id, err)
}

// DeleteUser removes a user and their tokens.
func (s *Store) DeleteUser(ctx context.Context, id string) error {
	res, err := s.db(ctx).ExecContext(ctx, `DELETE FROM users WHERE id = $1`, id)
	return affected("delete user "+id, res, err)
}

// TouchLogin records a successful login.
func (s *Store) TouchLogin(ctx context.Context, id string) error {
	_, err := s.db(ctx).ExecContext(ctx, `UPDATE users SET last_login_at = now() WHERE id = $1`, id)
	return wrap("touch login", err)
}

// LoginFailures returns how often key failed within the window, and when it last did.
func (s *Store) LoginFailures(ctx context.Context, key string, window time.Duration) (int, time.Time, error) {
	var row struct {
		Failures int       `db:"failures"`
		Last     time.Time `db:"last_failure_at"`
	}
	err := s.db(ctx).GetContext(ctx, &row, `SELECT failures, last_failure_at FROM login_failures
		WHERE key = $1 AND window_start > now() - $2::interval`, key, window.String())
	if err != nil {
		if err = wrap("login failures", err); isNotFound(err) {
			return 0, time.Time{}, nil
		}
		return 0, time.Time{}, err
	}
	return row.Failures, row.Last, nil
}

// RecordLoginFailure counts a failed login for key, starting a new window when the old
// one expired, and prunes the rows whose window is over.
func (s *Store) RecordLoginFailure(ctx context.Context, key string, window time.Duration) error {
	_, err := s.db(ctx).ExecContext(ctx, `INSERT INTO login_failures (key, failures, window_start, last_failure_at) VALUES ($1, 1, now(), now())
		ON CONFLICT (key) DO UPDATE SET
		  failures = CASE WHEN login_failures.window_start > now() - $2::interval THEN login_failures.failures + 1 ELSE 1 END,
		  window_start = CASE WHEN login_failures.window_start > now() - $2::interval THEN login_failures.window_start ELSE now() END,
		  last_failure_at = now()`,
		key, window.String())
	if err != nil {
		return wrap("record login failure", err)
	}
	_, err = s.db(ctx).ExecContext(ctx, `DELETE FROM login_failures WHERE window_start < now() - $1::interval`, window.String())
	return wrap("prune login failures", err)
}

var dummyHash = sync.OnceValue(func() []byte {
	h, _ := bcrypt.GenerateFromPassword([]byte(crypt.RandomToken("")), bcrypt.DefaultCost)
	return h
})

// CheckLogin reports whether p is the password of u. For an unknown account (u nil) it
// compares against a dummy hash all the same, so that both take as long.
func CheckLogin(u *User, p string) bool {
	if u == nil {
		_ = bcrypt.CompareHashAndPassword(dummyHash(), []byte(p))
		return false
	}
	return u.CheckPassword(p)
}

// ClearLoginFailures forgets the failures of key after a successful login.
func (s *Store) ClearLoginFailures(ctx context.Context, key string) error {
	_, err := s.db(ctx).ExecContext(ctx, `DELETE FROM login_failures WHERE key = $1`, key)
	return wrap("clear login failures", err)
}

// The role rules refuse a change of users with a *problem.Forbidden for lack of rights
// (403) and a *problem.Invalid about the input (422).

func forbidden(msg string) error { return &problem.Forbidden{Reason: msg} }

// invalid refuses a change of users about one field.
func invalid(field, msg string) error { return &problem.Invalid{Fields: map[string]string{field: msg}} }

// CheckGrant enforces who may hand out a role: only an owner may create an owner.
// actor nil is the operator's CLI, which holds the database and may do it.
func CheckGrant(actor *User, role string) error {
	if !ValidRole(role) {
		return invalid("role", "Choose owner, admin, member or viewer.")
	}
	if role == "owner" && actor != nil && actor.Role != "owner" {
		return forbidden("Only an owner may make someone an owner.")
	}
	return nil
}

// ChangeUserRole changes a user's role under the role rules: only owners grant or
// remove the owner role, nobody changes their own role, and the last owner stays
// owner. The owners are locked for the change, so two demotions at once cannot leave
// the console without one. actor nil is the operator's CLI.
func (s *Store) ChangeUserRole(ctx context.Context, actor *User, id, role string) error {
	if err := CheckGrant(actor, role); err != nil {
		return err
	}
	if actor != nil && actor.ID == id {
		return forbidden("Nobody changes their own role: ask another owner.")
	}
	return s.inOwnerLock(ctx, func(tx *sqlx.Tx) error {
		u := &User{}
		if err := tx.GetContext(ctx, u, `SELECT * FROM users WHERE id = $1 AND `+sameCircle, id); err != nil {
			return wrap("user "+id, err)
		}
		if u.Role == role {
			return nil
		}
		if u.Role == "owner" {
			if actor != nil && actor.Role != "owner" {
				return forbidden("Only an owner may change an owner's role.")
			}
			if err := lastOwner(ctx, tx, "role", "This is the last owner: make someone else owner first."); err != nil {
				return err
			}
		}
		res, err := tx.ExecContext(ctx, `UPDATE users SET role = $2, updated_at = now() WHERE id = $1`, id, role)
		return affected("set role of user "+id, res, err)
	})
}

// RemoveUser deletes a user under the role rules: nobody deletes themselves, only an
// owner deletes an owner, and the last owner stays. actor nil is the operator's CLI.
func (s *Store) RemoveUser(ctx context.Context, actor *User, id string) error {
	if actor != nil && actor.ID == id {
		return forbidden("You cannot delete yourself.")
	}
	return s.inOwnerLock(ctx, func(tx *sqlx.Tx) error {
		u := &User{}
		if err := tx.GetContext(ctx, u, `SELECT * FROM users WHERE id = $1 AND `+sameCircle, id); err != nil {
			return wrap("user "+id, err)
		}
		if u.Role == "owner" {
			if actor != nil && actor.Role != "owner" {
				return forbidden("Only an owner may delete an owner.")
			}
			if err := lastOwner(ctx, tx, "id", "This is the last owner: make someone else owner first."); err != nil {
				return err
			}
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM users WHERE id = $1`, id)
		return affected("delete user "+id, res, err)
	})
}

// inOwnerLock runs f in a transaction that holds the owners' rows.
func (s *Store) inOwnerLock(ctx context.Context, f func(tx *sqlx.Tx) error) error {
	tx, err := s.begin(ctx)
	if err != nil {
		return wrap("users", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SELECT id FROM users WHERE role = 'owner' AND `+sameCircle+` FOR UPDATE`); err != nil {
		return wrap("lock owners", err)
	}
	if err := f(tx); err != nil {
		return err
	}
	return wrap("users", tx.Commit())
}

func lastOwner(ctx context.Context, tx *sqlx.Tx, field, msg string) error {
	var n int
	if err := tx.GetContext(ctx, &n, `SELECT count(*) FROM users WHERE role = 'owner' AND `+sameCircle); err != nil {
		return wrap("count owners", err)
	}
	if n <= 1 {
		return invalid(field, msg)
	}
	return nil
}
