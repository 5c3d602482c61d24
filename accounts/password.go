package accounts

import (
	"context"
	"errors"
	"fmt"

	"runr.dev/console/problem"
	"runr.dev/console/store"
)

// PasswordInput is a password change: the body of POST /api/me/password and the
// Account page's form.
type PasswordInput struct {
	Current string `json:"current_password" form:"current_password"`
	New     string `json:"new_password" form:"new_password"`
	// Confirm repeats New (the form's guard against a typo; the API sends New again).
	Confirm string `json:"-" form:"confirm_password"`
}

// ErrWrongPassword marks the refusal of a change whose current password is wrong (it
// comes with an *problem.Invalid about current_password), so that callers log and count it.
var ErrWrongPassword = errors.New("the current password is wrong")

// ValidatePasswordChange checks a password change's fields, the current password aside:
// field name → message (empty when all are right). The new password follows the rules
// of a new user's (ValidatePassword), and is never left empty.
func ValidatePasswordChange(in PasswordInput) map[string]string {
	errs := map[string]string{}
	switch {
	case in.Current == "":
		errs["current_password"] = "Enter your current password."
	case len(in.Current) > 72:
		errs["current_password"] = "A password has at most 72 bytes."
	}
	switch {
	case in.New == "":
		errs["new_password"] = "Enter a new password."
	case len(in.New) > 72:
		errs["new_password"] = "Use at most 72 bytes (bcrypt ignores what follows)."
	case ValidatePassword(in.New) != "":
		errs["new_password"] = "Use at least 10 characters."
	}
	if in.Confirm != in.New && errs["new_password"] == "" {
		errs["confirm_password"] = "The two new passwords differ: type the new one again."
	}
	return errs
}

// ChangePassword changes the password of user id once the current password is right,
// and signs out every session of the user (their generation moves on): it returns the
// new generation, which the session that asked stores to stay signed in. A wrong
// current password is ErrWrongPassword with an *problem.Invalid; a refusal changes nothing.
func ChangePassword(ctx context.Context, st *store.Store, id string, in PasswordInput) (int, error) {
	if errs := ValidatePasswordChange(in); len(errs) > 0 {
		return 0, &problem.Invalid{Fields: errs}
	}
	u, err := st.UserByID(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("change password: %w", err)
	}
	if !u.CheckPassword(in.Current) {
		return 0, fmt.Errorf("%w: %w", ErrWrongPassword, &problem.Invalid{Fields: map[string]string{"current_password": "This is not your current password."}})
	}
	if in.New == in.Current {
		return 0, &problem.Invalid{Fields: map[string]string{"new_password": "Choose a password other than the current one."}}
	}
	gen, err := st.ChangePassword(ctx, id, in.New)
	if err != nil {
		return 0, fmt.Errorf("change password: %w", err)
	}
	return gen, nil
}

// EndOtherSessions signs out every session of user id (their generation moves on) and
// returns the new generation, which the session that asked stores to stay signed in.
func EndOtherSessions(ctx context.Context, st *store.Store, id string) (int, error) {
	gen, err := st.EndOtherSessions(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("sign out other sessions: %w", err)
	}
	return gen, nil
}
