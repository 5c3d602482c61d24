package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"runr.dev/console/crypt"
	"runr.dev/console/store"
	"runr.dev/console/store/storetest"
)

// TestCLIUserAndTokenRules: `runr user` keeps the last owner, and `runr token create`
// caps a token's scopes at its user's role.
func TestCLIUserAndTokenRules(t *testing.T) {
	url := storetest.NewURL(t)
	t.Setenv("DATABASE_URL", url)
	t.Setenv("RUNR_APP_KEY", storetest.AppKey)
	c, _ := crypt.NewCipher(storetest.AppKey)
	st, err := store.Open(context.Background(), url, c)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	if _, err := st.CreateUser(ctx, "owner@example.com", "", "owner", "password-of-owner"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateUser(ctx, "viewer@example.com", "", "viewer", "password-of-viewer"); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		var cmd = userCmd()
		if args[0] == "token" {
			cmd = tokenCmd()
		}
		cmd.SetArgs(args[1:])
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		err := cmd.ExecuteContext(ctx)
		return out.String(), err
	}
	for _, args := range [][]string{
		{"user", "set-role", "--email", "owner@example.com", "--role", "admin"},
		{"user", "delete", "--email", "owner@example.com"},
		{"token", "create", "--email", "viewer@example.com", "--name", "x", "--scopes", "regions.manage"},
		{"user", "create", "--email", "long@example.com", "--role", "viewer", "--password", strings.Repeat("p", 73)},
	} {
		if out, err := run(args...); err == nil {
			t.Errorf("runr %v must be refused: %s", args, out)
		}
	}
	if u, _ := st.UserByEmail(ctx, "owner@example.com"); u.Role != "owner" {
		t.Fatal("the last owner lost the role")
	}
	if n, _ := st.CountUsers(ctx, ""); n != 2 {
		t.Fatalf("%d users", n)
	}
	if out, err := run("token", "create", "--email", "viewer@example.com", "--name", "x", "--scopes", "regions.view"); err != nil || !strings.HasPrefix(out, "runr_") {
		t.Fatalf("a token within the role: %v %s", err, out)
	}
	if _, err := run("user", "set-role", "--email", "viewer@example.com", "--role", "owner"); err != nil {
		t.Fatalf("the operator may make an owner: %v", err)
	}
	if _, err := run("user", "set-role", "--email", "owner@example.com", "--role", "admin"); err != nil {
		t.Fatalf("with a second owner the first may be demoted: %v", err)
	}
}
