package store

import (
	"context"
	"time"

	"github.com/lib/pq"
	"runr.dev/console/crypt"
)

// APIToken is a machine credential of a user; only its hash is stored.
type APIToken struct {
	ID         string         `db:"id" json:"id"`
	UserID     string         `db:"user_id" json:"user_id"`
	Name       string         `db:"name" json:"name"`
	Prefix     string         `db:"prefix" json:"prefix"`
	TokenHash  string         `db:"token_hash" json:"-"`
	Scopes     pq.StringArray `db:"scopes" json:"scopes"`
	CreatedAt  time.Time      `db:"created_at" json:"created_at"`
	LastUsedAt *time.Time     `db:"last_used_at" json:"last_used_at"`
	// ExpiresAt is when the token stops working (nil: never).
	ExpiresAt *time.Time `db:"expires_at" json:"expires_at"`
}

// Expired reports whether the token no longer works at now.
func (t *APIToken) Expired(now time.Time) bool {
	return t.ExpiresAt != nil && !now.Before(*t.ExpiresAt)
}

// TokenUseInterval is how often a token's last use is recorded: APITokenUser writes it
// when the recorded one is older, and a console that keeps tokens (web/credcache.go)
// goes back to the database at the same age, so that each of its lookups records a use.
const TokenUseInterval = time.Minute

// CreateAPIToken creates a token for a user, working until expiresAt (nil: until
// revoked), and returns it with its plaintext, shown once.
func (s *Store) CreateAPIToken(ctx context.Context, userID, name string, scopes []string, expiresAt *time.Time) (*APIToken, string, error) {
	plain := crypt.RandomToken("runr_")
	t := &APIToken{}
	err := s.db(ctx).GetContext(ctx, t, `INSERT INTO api_tokens (id, user_id, name, prefix, token_hash, scopes, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *`,
		NewID(), userID, name, plain[:12], crypt.HashToken(plain), pq.StringArray(scopes), expiresAt)
	if err != nil {
		return nil, "", wrap("create api token", err)
	}
	return t, plain, nil
}

// APITokenByPlain finds a token by its plaintext and records its use (at most once a
// minute, so that a busy script does not write on every request).
func (s *Store) APITokenByPlain(ctx context.Context, plain string) (*APIToken, error) {
	t, _, err := s.APITokenUser(ctx, plain)
	return t, err
}

// APITokenUser finds a token and its user in one query, and records the token's use.
func (s *Store) APITokenUser(ctx context.Context, plain string) (*APIToken, *User, error) {
	var row struct {
		User
		TokenID       string         `db:"token_id"`
		TokenName     string         `db:"token_name"`
		TokenScopes   pq.StringArray `db:"token_scopes"`
		TokenLastUsed *time.Time     `db:"token_last_used_at"`
		TokenExpires  *time.Time     `db:"token_expires_at"`
	}
	// An expired token is not found: it answers 401 like a revoked one.
	err := s.db(ctx).GetContext(ctx, &row, `SELECT u.*, t.id AS token_id, t.name AS token_name, t.scopes AS token_scopes,
		t.last_used_at AS token_last_used_at, t.expires_at AS token_expires_at FROM api_tokens t JOIN users u ON u.id = t.user_id
		WHERE t.token_hash = $1 AND (t.expires_at IS NULL OR t.expires_at > now())`, crypt.HashToken(plain))
	if err != nil {
		return nil, nil, wrap("api token", err)
	}
	t := &APIToken{ID: row.TokenID, UserID: row.User.ID, Name: row.TokenName, Scopes: row.TokenScopes, LastUsedAt: row.TokenLastUsed, ExpiresAt: row.TokenExpires}
	if t.LastUsedAt == nil || time.Since(*t.LastUsedAt) > TokenUseInterval {
		now := time.Now().UTC()
		if _, err := s.db(ctx).ExecContext(ctx, `UPDATE api_tokens SET last_used_at = $2 WHERE id = $1`, t.ID, now); err != nil {
			return nil, nil, wrap("api token", err)
		}
		t.LastUsedAt = &now
	}
	u := row.User
	return t, &u, nil
}

// ListAPITokens returns the tokens of a user ("" for every user's).
func (s *Store) ListAPITokens(ctx context.Context, userID string) ([]APIToken, error) {
	var ts []APIToken
	err := s.db(ctx).SelectContext(ctx, &ts, `SELECT * FROM api_tokens WHERE $1 = '' OR user_id = $1 ORDER BY created_at DESC`, userID)
	return ts, wrap("list api tokens", err)
}

// DeleteAPIToken revokes a token of a user ("" for any user).
func (s *Store) DeleteAPIToken(ctx context.Context, id, userID string) error {
	res, err := s.db(ctx).ExecContext(ctx, `DELETE FROM api_tokens WHERE id = $1 AND ($2 = '' OR user_id = $2)`, id, userID)
	return affected("delete api token "+id, res, err)
}
