package accounts_test

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"runr.dev/console/accounts"
	"runr.dev/console/perm"
	"runr.dev/console/problem"
	"runr.dev/console/store/storetest"
)

func TestValidateUser(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   accounts.UserInput
		want []string
	}{
		{"valid", accounts.UserInput{Email: "ada@example.com", Role: "admin", Password: "long enough pw"}, nil},
		{"generated password", accounts.UserInput{Email: " ada@example.com ", Role: "viewer"}, nil},
		{"named address", accounts.UserInput{Email: "Ada <ada@example.com>", Role: "viewer"}, []string{"email"}},
		{"everything wrong", accounts.UserInput{Email: "ada", Role: "root", Password: "short"}, []string{"email", "password", "role"}},
		{"73 bytes", accounts.UserInput{Email: "a@example.com", Role: "owner", Password: strings.Repeat("p", 73)}, []string{"password"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for k := range accounts.ValidateUser(tc.in) {
				got = append(got, k)
			}
			sort.Strings(got)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("fields %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseScopes(t *testing.T) {
	for _, tc := range []struct {
		raw  []string
		want []string
		err  string
	}{
		{[]string{"*"}, []string{"*"}, ""},
		{[]string{"regions.view, regions.view", "projects.view"}, []string{"regions.view", "projects.view"}, ""},
		{[]string{" , "}, nil, "at least one scope"},
		{[]string{"regions.destroy"}, nil, "unknown scope regions.destroy"},
	} {
		t.Run(strings.Join(tc.raw, "|"), func(t *testing.T) {
			got, err := accounts.ParseScopes(tc.raw)
			if !reflect.DeepEqual(got, tc.want) || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("%v %v, want %v %q", got, err, tc.want, tc.err)
			}
		})
	}
}

// TestAccountRules: a user is created once per e-mail, a password left empty is
// generated, only an owner makes an owner, and a token stays within what its grantor holds.
func TestAccountRules(t *testing.T) {
	st := storetest.New(t)
	ctx := context.Background()
	owner, pw, err := accounts.CreateUser(ctx, st, nil, accounts.UserInput{Email: " owner@example.com", Role: "owner"})
	if err != nil || len(pw) != 20 || owner.Email != "owner@example.com" {
		t.Fatalf("the operator creates an owner: %v %q %+v", err, pw, owner)
	}
	var inv *problem.Invalid
	if _, _, err := accounts.CreateUser(ctx, st, owner, accounts.UserInput{Email: "owner@example.com", Role: "viewer"}); !errors.As(err, &inv) || inv.Fields["email"] == "" {
		t.Fatalf("a second user with one e-mail: %v", err)
	}
	admin, pw, err := accounts.CreateUser(ctx, st, owner, accounts.UserInput{Email: "admin@example.com", Role: "admin", Password: "a long password"})
	if err != nil || pw != "" {
		t.Fatalf("an owner creates an admin: %v %q", err, pw)
	}
	var forbidden *problem.Forbidden
	if _, _, err := accounts.CreateUser(ctx, st, admin, accounts.UserInput{Email: "o2@example.com", Role: "owner"}); !errors.As(err, &forbidden) {
		t.Fatalf("an admin makes an owner: %v", err)
	}
	if err := accounts.SetRole(ctx, st, nil, owner.ID, "admin"); !errors.As(err, &inv) || inv.Fields["role"] == "" {
		t.Fatalf("the last owner is demoted: %v", err)
	}
	viewer := accounts.Grantor{User: admin, Perms: perm.Effective("viewer", nil), Star: false}
	if _, _, err := accounts.CreateToken(ctx, st, viewer, accounts.TokenInput{Name: " ", Scopes: []string{"*"}}); !errors.As(err, &inv) || inv.Fields["name"] == "" || inv.Fields["scopes"] == "" {
		t.Fatalf("a nameless star token from a token without star: %v", err)
	}
	if _, _, err := accounts.CreateToken(ctx, st, viewer, accounts.TokenInput{Name: "ci", Scopes: []string{"regions.manage"}}); !errors.As(err, &inv) || inv.Fields["scopes"] == "" {
		t.Fatalf("a scope beyond the grantor's: %v", err)
	}
	tok, plain, err := accounts.CreateToken(ctx, st, viewer, accounts.TokenInput{Name: " ci ", Scopes: []string{"regions.view"}})
	if err != nil || tok.Name != "ci" || !strings.HasPrefix(plain, "runr_") {
		t.Fatalf("a token within the grantor's: %v %+v %q", err, tok, plain)
	}
	// A token works for 90 days unless told otherwise; 0 is until revoked; a lifetime out
	// of range is refused on its field and creates nothing.
	if tok.ExpiresAt == nil || time.Until(*tok.ExpiresAt) < 89*24*time.Hour || time.Until(*tok.ExpiresAt) > 91*24*time.Hour {
		t.Fatalf("a token's default expiry: %v, want 90 days from now", tok.ExpiresAt)
	}
	never := 0
	if tok, _, err := accounts.CreateToken(ctx, st, viewer, accounts.TokenInput{Name: "forever", Scopes: []string{"regions.view"}, ExpiresInDays: &never}); err != nil || tok.ExpiresAt != nil {
		t.Fatalf("a token that never expires: %v %+v", err, tok)
	}
	before, err := st.ListAPITokens(ctx, admin.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, days := range []int{-1, accounts.MaxTokenDays + 1} {
		if _, _, err := accounts.CreateToken(ctx, st, viewer, accounts.TokenInput{Name: "odd", Scopes: []string{"regions.view"}, ExpiresInDays: &days}); !errors.As(err, &inv) || inv.Fields["expires_in_days"] == "" {
			t.Fatalf("a lifetime of %d days: %v", days, err)
		}
	}
	if after, err := st.ListAPITokens(ctx, admin.ID); err != nil || len(after) != len(before) {
		t.Fatalf("refused lifetimes created tokens: %d before, %d after (%v)", len(before), len(after), err)
	}
}
