package accounts_test

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"

	"runr.dev/console/accounts"
	"runr.dev/console/problem"
	"runr.dev/console/store/storetest"
)

func TestValidatePasswordChange(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   accounts.PasswordInput
		want []string
	}{
		{"valid", accounts.PasswordInput{Current: "x", New: "ten chars!", Confirm: "ten chars!"}, nil},
		{"empty", accounts.PasswordInput{}, []string{"current_password", "new_password"}},
		{"short", accounts.PasswordInput{Current: "x", New: "nine char", Confirm: "nine char"}, []string{"new_password"}},
		{"73 bytes", accounts.PasswordInput{Current: strings.Repeat("p", 73), New: strings.Repeat("p", 73), Confirm: strings.Repeat("p", 73)}, []string{"current_password", "new_password"}},
		{"confirmation differs", accounts.PasswordInput{Current: "x", New: "ten chars!", Confirm: "ten chars?"}, []string{"confirm_password"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for k := range accounts.ValidatePasswordChange(tc.in) {
				got = append(got, k)
			}
			sort.Strings(got)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("fields %v, want %v", got, tc.want)
			}
		})
	}
}

// A password change needs the current password; it sets the new one and moves the
// session generation on in one statement; ending the other sessions moves it on alone.
// A refusal changes neither.
func TestChangePassword(t *testing.T) {
	st := storetest.New(t)
	ctx := context.Background()
	u, _, err := accounts.CreateUser(ctx, st, nil, accounts.UserInput{Email: "pw@example.com", Role: "viewer", Password: "the first password"})
	if err != nil {
		t.Fatal(err)
	}
	if u.SessionGeneration != 0 {
		t.Fatalf("a new user's generation: %d", u.SessionGeneration)
	}
	var inv *problem.Invalid
	_, err = accounts.ChangePassword(ctx, st, u.ID, accounts.PasswordInput{Current: "not the password", New: "the second password", Confirm: "the second password"})
	if !errors.Is(err, accounts.ErrWrongPassword) || !errors.As(err, &inv) || inv.Fields["current_password"] == "" {
		t.Fatalf("a wrong current password: %v", err)
	}
	if again, _ := st.UserByID(ctx, u.ID); again.PasswordHash != u.PasswordHash || again.SessionGeneration != 0 {
		t.Fatal("a refused change changed the user")
	}
	gen, err := accounts.ChangePassword(ctx, st, u.ID, accounts.PasswordInput{Current: "the first password", New: "the second password", Confirm: "the second password"})
	if err != nil || gen != 1 {
		t.Fatalf("the change: %d %v", gen, err)
	}
	after, _ := st.UserByID(ctx, u.ID)
	if after.SessionGeneration != 1 || after.CheckPassword("the first password") || !after.CheckPassword("the second password") {
		t.Fatalf("after the change: generation %d", after.SessionGeneration)
	}
	if gen, err := accounts.EndOtherSessions(ctx, st, u.ID); err != nil || gen != 2 {
		t.Fatalf("end others: %d %v", gen, err)
	}
	if _, err := accounts.EndOtherSessions(ctx, st, "01NOTANID0000000000000000"); err == nil {
		t.Fatal("ending the sessions of nobody must fail")
	}
}
