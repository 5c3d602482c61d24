// Package accounts holds the use cases of console users and their API tokens: create a
// user, change a role, delete a user, create a token. They are Fiber-free: handlers and
// the CLI call them alike. A wrong field is an *problem.Invalid, as in the regions' use
// cases; the role rules refuse with *problem.Forbidden or *problem.Invalid.
package accounts

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strings"

	"runr.dev/console/crypt"
	"runr.dev/console/problem"
	"runr.dev/console/store"
)

// UserInput is a new user: the body of POST /api/users, the Users form and
// `runr user create`.
type UserInput struct {
	Email    string `json:"email" form:"email"`
	Role     string `json:"role" form:"role"`
	Password string `json:"password" form:"password"`
	Name     string `json:"name" form:"name"`
}

// ValidateUser checks a new user's fields: field name → message (empty when all are right).
func ValidateUser(in UserInput) map[string]string {
	errs := map[string]string{}
	if a, err := mail.ParseAddress(in.Email); err != nil || a.Address != strings.TrimSpace(in.Email) {
		errs["email"] = "Enter an e-mail address such as ada@example.com."
	}
	if !store.ValidRole(in.Role) {
		errs["role"] = "Choose owner, admin, member or viewer."
	}
	if m := ValidatePassword(in.Password); m != "" {
		errs["password"] = m
	}
	return errs
}

// ValidatePassword checks a new password ("" asks for a generated one): at least 10
// characters, and at most 72 bytes, the most bcrypt reads.
func ValidatePassword(p string) string {
	switch {
	case p == "":
		return ""
	case len(p) < 10:
		return "Use at least 10 characters, or leave it empty to generate one."
	case len(p) > 72:
		return "Use at most 72 bytes (bcrypt ignores what follows)."
	}
	return ""
}

// GeneratePassword returns a random password for a new user.
func GeneratePassword() string { return crypt.RandomToken("")[:20] }

// CreateUser creates a user; by is who asks (nil: the operator at the CLI, who may make
// an owner). A password left empty is generated and returned, to be shown once.
func CreateUser(ctx context.Context, st *store.Store, by *store.User, in UserInput) (*store.User, string, error) {
	in.Email = strings.TrimSpace(in.Email)
	if errs := ValidateUser(in); len(errs) > 0 {
		return nil, "", &problem.Invalid{Fields: errs}
	}
	if err := store.CheckGrant(by, in.Role); err != nil {
		return nil, "", err
	}
	generated := ""
	if in.Password == "" {
		in.Password = GeneratePassword()
		generated = in.Password
	}
	u, err := st.CreateUser(ctx, in.Email, in.Name, in.Role, in.Password)
	if errors.Is(err, store.ErrConflict) {
		return nil, "", &problem.Invalid{Fields: map[string]string{"email": "A user with this e-mail exists already."}}
	}
	if err != nil {
		return nil, "", fmt.Errorf("create user %s: %w", in.Email, err)
	}
	return u, generated, nil
}

// CreateTenantUser creates a user of a tenant (POST /api/tenants/{id}/users, the Tenants
// page, `runr user create --tenant`): the user is created in the tenant's walls, so it is
// the tenant's, and the role rules hold among the tenant's users. by is who asks (a
// platform user; nil: the CLI).
func CreateTenantUser(ctx context.Context, st *store.Store, by *store.User, tenantID string, in UserInput) (*store.User, string, error) {
	return CreateUser(store.WithTenant(ctx, tenantID), st, by, in)
}

// SetRole changes a user's role under the role rules (the last owner keeps theirs); by
// is who asks (nil: the operator at the CLI, for a user of any tenant).
func SetRole(ctx context.Context, st *store.Store, by *store.User, id, role string) error {
	return st.ChangeUserRole(cliCircle(ctx, st, by, id), by, id, role)
}

// DeleteUser deletes a user and their tokens: never oneself, never the last owner; by
// is who asks (nil: the operator at the CLI, for a user of any tenant).
func DeleteUser(ctx context.Context, st *store.Store, by *store.User, id string) error {
	return st.RemoveUser(cliCircle(ctx, st, by, id), by, id)
}

// cliCircle gives the CLI (by nil) the circle of the user it acts on, so that the owner
// rules count that user's tenant (or the platform); a user's own request keeps its own.
func cliCircle(ctx context.Context, st *store.Store, by *store.User, id string) context.Context {
	if by != nil {
		return ctx
	}
	if u, err := st.UserByID(ctx, id); err == nil && u.Tenant() != "" {
		return store.WithTenant(ctx, u.Tenant())
	}
	return ctx
}
