package store

import (
	"context"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"
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
	err = s.DB.GetContext(ctx, u, `INSERT INTO users (id, email, name, role, password_hash)
		VALUES ($1, $2, $3, $4, $5) RETURNING *`, NewID(), strings.TrimSpace(email), name, role, h)
	return u, wrap("create user "+email, err)
}

// UserByID returns one user.
func (s *Store) UserByID(ctx context.Context, id string) (*User, error) {
	u := &User{}
	err := s.DB.GetContext(ctx, u, `SELECT * FROM users WHERE id = $1`, id)
	return u, wrap("user "+id, err)
}

// UserByEmail returns the user with that e-mail, case-insensitively.
func (s *Store) UserByEmail(ctx context.Context, email string) (*User, error) {
	u := &User{}
	err := s.DB.GetContext(ctx, u, `SELECT * FROM users WHERE lower(email) = lower($1)`, strings.TrimSpace(email))
	return u, wrap("user "+email, err)
}

// ListUsers returns every user, by e-mail.
func (s *Store) ListUsers(ctx context.Context) ([]User, error) {
	var us []User
	err := s.DB.SelectContext(ctx, &us, `SELECT * FROM users ORDER BY lower(email)`)
	return us, wrap("list users", err)
}

// CountUsers counts users, optionally of one role ("" for all).
func (s *Store) CountUsers(ctx context.Context, role string) (int, error) {
	var n int
	err := s.DB.GetContext(ctx, &n, `SELECT count(*) FROM users WHERE $1 = '' OR role = $1`, role)
	return n, wrap("count users", err)
}

// SetUserRole changes a user's role.
func (s *Store) SetUserRole(ctx context.Context, id, role string) error {
	res, err := s.DB.ExecContext(ctx, `UPDATE users SET role = $2, updated_at = now() WHERE id = $1`, id, role)
	return affected("set role of user "+id, res, err)
}

// SetUserPassword changes a user's password.
func (s *Store) SetUserPassword(ctx context.Context, id, password string) error {
	h, err := HashPassword(password)
	if err != nil {
		return wrap("set password", err)
	}
	res, err := s.DB.ExecContext(ctx, `UPDATE users SET password_hash = $2, updated_at = now() WHERE id = $1`, id, h)
	return affected("set password of user "+id, res, err)
}

// DeleteUser removes a user and their tokens.
func (s *Store) DeleteUser(ctx context.Context, id string) error {
	res, err := s.DB.ExecContext(ctx, `DELETE FROM users WHERE id = $1`, id)
	return affected("delete user "+id, res, err)
}

// TouchLogin records a successful login.
func (s *Store) TouchLogin(ctx context.Context, id string) error {
	_, err := s.DB.ExecContext(ctx, `UPDATE users SET last_login_at = now() WHERE id = $1`, id)
	return wrap("touch login", err)
}

// LoginThrottled reports whether key has failed too often within the window.
func (s *Store) LoginThrottled(ctx context.Context, key string, max int, window time.Duration) (bool, error) {
	var n int
	err := s.DB.GetContext(ctx, &n, `SELECT failures FROM login_failures WHERE key = $1 AND window_start > now() - $2::interval`, key, window.String())
	if err != nil {
		if err = wrap("login throttle", err); isNotFound(err) {
			return false, nil
		}
		return false, err
	}
	return n >= max, nil
}

// RecordLoginFailure counts a failed login for key, starting a new window when the old one expired.
func (s *Store) RecordLoginFailure(ctx context.Context, key string, window time.Duration) error {
	_, err := s.DB.ExecContext(ctx, `INSERT INTO login_failures (key, failures, window_start) VALUES ($1, 1, now())
		ON CONFLICT (key) DO UPDATE SET
		  failures = CASE WHEN login_failures.window_start > now() - $2::interval THEN login_failures.failures + 1 ELSE 1 END,
		  window_start = CASE WHEN login_failures.window_start > now() - $2::interval THEN login_failures.window_start ELSE now() END`,
		key, window.String())
	return wrap("record login failure", err)
}

// ClearLoginFailures forgets the failures of key after a successful login.
func (s *Store) ClearLoginFailures(ctx context.Context, key string) error {
	_, err := s.DB.ExecContext(ctx, `DELETE FROM login_failures WHERE key = $1`, key)
	return wrap("clear login failures", err)
}
