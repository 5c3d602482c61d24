package accounts

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"runr.dev/console/perm"
	"runr.dev/console/problem"
	"runr.dev/console/store"
)

// ParseScopes validates a list of scopes: permission names, or "*"; an entry may hold
// several, comma-separated.
func ParseScopes(raw []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, r := range raw {
		for _, s := range strings.Split(r, ",") {
			s = strings.TrimSpace(s)
			if s == "" || seen[s] {
				continue
			}
			if s != "*" && !perm.Valid(s) {
				return nil, errors.New("unknown scope " + s + ": use permission names such as regions.view, or *")
			}
			seen[s] = true
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("give at least one scope, or * for everything your role allows")
	}
	return out, nil
}

// TokenInput is a new API token: the body of POST /api/tokens, the Tokens form and
// `runr token create`.
type TokenInput struct {
	Name   string   `json:"name"`
	Scopes []string `json:"scopes"`
	// ExpiresInDays is how long the token works: 1 to MaxTokenDays days, 0 for until it is
	// revoked; nil takes DefaultTokenDays.
	ExpiresInDays *int `json:"expires_in_days"`
}

// Token lifetimes, in days.
const (
	DefaultTokenDays = 90
	MaxTokenDays     = 3650
)

// expiry is when a token of the input stops working (nil: never), or why the lifetime is
// not one.
func (in TokenInput) expiry(now time.Time) (*time.Time, string) {
	days := DefaultTokenDays
	if in.ExpiresInDays != nil {
		days = *in.ExpiresInDays
	}
	switch {
	case days == 0:
		return nil, ""
	case days < 0 || days > MaxTokenDays:
		return nil, fmt.Sprintf("Give 1 to %d days, or 0 for a token that works until it is revoked.", MaxTokenDays)
	}
	at := now.Add(time.Duration(days) * 24 * time.Hour).UTC()
	return &at, ""
}

// Grantor is who creates a token: the user it is for, the permissions it holds, and
// whether it may hand out "*" (a signed-in user or the operator may; a token only when
// it has "*" itself).
type Grantor struct {
	User  *store.User
	Perms map[string]bool
	Star  bool
}

// CreateToken checks a token's name and scopes (within what the grantor holds) and
// creates it for the grantor's user; the token's value is returned once.
func CreateToken(ctx context.Context, st *store.Store, g Grantor, in TokenInput) (*store.APIToken, string, error) {
	errs := map[string]string{}
	name := strings.TrimSpace(in.Name)
	if name == "" || len(name) > 100 {
		errs["name"] = "Give the token a name of up to 100 characters."
	}
	scopes, err := ParseScopes(in.Scopes)
	if err == nil {
		err = perm.CapScopes(g.Perms, g.Star, scopes)
	}
	if err != nil {
		errs["scopes"] = err.Error()
	}
	expires, msg := in.expiry(time.Now())
	if msg != "" {
		errs["expires_in_days"] = msg
	}
	if len(errs) > 0 {
		return nil, "", &problem.Invalid{Fields: errs}
	}
	t, plain, err := st.CreateAPIToken(ctx, g.User.ID, name, scopes, expires)
	if err != nil {
		return nil, "", fmt.Errorf("create token %s: %w", name, err)
	}
	return t, plain, nil
}
