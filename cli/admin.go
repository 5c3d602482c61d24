package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"runr.dev/console/accounts"
	"runr.dev/console/crypt"
	"runr.dev/console/ops/tenancy"
	"runr.dev/console/perm"
	"runr.dev/console/store"
)

func migrateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Apply pending database migrations",
		Args:  cobra.NoArgs,
		RunE: withStore(func(cmd *cobra.Command, st *store.Store) error {
			n, err := st.Migrate(cmd.Context())
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Applied %d migration(s)\n", n)
			return nil
		}),
	}
}

// userCmd holds `runr user …`: the operator's tools for console users.
func userCmd() *cobra.Command {
	user := &cobra.Command{Use: "user", Short: "Manage console users"}
	user.AddCommand(userCreateCmd(), userBootstrapCmd(), userSetRoleCmd(), userDeleteCmd())
	return user
}

// userCreateCmd is `runr user create`: it creates a user (of a tenant with --tenant,
// which is created when it does not exist: its first owner), and prints the password it
// generated when none was given.
func userCreateCmd() *cobra.Command {
	var email, role, password, tenant string
	create := &cobra.Command{
		Use:   "create",
		Short: "Create a user (prints a generated password when none is given)",
		Args:  cobra.NoArgs,
		RunE: withStore(func(cmd *cobra.Command, st *store.Store) error {
			in := accounts.UserInput{Email: email, Role: role, Password: password}
			// The operator holds the database: no actor, and the CLI may make an owner.
			var u *store.User
			var generated string
			var err error
			if tenant != "" {
				u, generated, err = createTenantUser(cmd, st, tenant, in)
			} else {
				u, generated, err = accounts.CreateUser(cmd.Context(), st, nil, in)
			}
			if err != nil {
				return err
			}
			if generated != "" {
				fmt.Fprintln(cmd.OutOrStdout(), generated)
			} else {
				fmt.Fprintf(cmd.ErrOrStderr(), "Created %s (%s)\n", u.Email, u.Role)
			}
			return nil
		}),
	}
	create.Flags().StringVar(&email, "email", "", "e-mail address (required)")
	create.Flags().StringVar(&role, "role", "member", "owner, admin, member or viewer")
	create.Flags().StringVar(&password, "password", "", "password (generated and printed when empty)")
	create.Flags().StringVar(&tenant, "tenant", "", "the tenant's name (Tenancy module): a user of that tenant, created with it when it does not exist")
	_ = create.MarkFlagRequired("email")
	return create
}

// createTenantUser creates a user of the tenant named name, creating the tenant first
// when it does not exist (its first owner).
func createTenantUser(cmd *cobra.Command, st *store.Store, name string, in accounts.UserInput) (*store.User, string, error) {
	ctx := cmd.Context()
	t, err := st.TenantByName(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		tin := tenancy.TenantInput{Name: name}
		if err := tenancy.ValidateTenant(&tin); err != nil {
			return nil, "", fmt.Errorf("tenant %q: %w", name, err)
		}
		if t, err = st.CreateTenant(ctx, tin.Name); err != nil {
			return nil, "", fmt.Errorf("create tenant %s: %w", name, err)
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "Created tenant %s\n", t.Name)
	} else if err != nil {
		return nil, "", err
	}
	return accounts.CreateTenantUser(ctx, st, nil, t.ID, in)
}

// userBootstrapCmd is `runr user bootstrap`: it creates the first owner when there is no
// user, and prints its credentials once.
func userBootstrapCmd() *cobra.Command {
	var email string
	bootstrap := &cobra.Command{
		Use:   "bootstrap",
		Short: "Create the first owner when there is no user, and print its credentials once",
		Args:  cobra.NoArgs,
		RunE: withStore(func(cmd *cobra.Command, st *store.Store) error {
			n, err := st.CountUsers(cmd.Context(), "")
			if err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			pw := accounts.GeneratePassword()
			if _, err := st.CreateUser(cmd.Context(), email, "Administrator", "owner", pw); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "\n  First administrator created (shown once):\n    e-mail:   %s\n    password: %s\n\n", email, pw)
			return nil
		}),
	}
	bootstrap.Flags().StringVar(&email, "email", "admin@runr.local", "e-mail of the first owner")
	return bootstrap
}

// userSetRoleCmd is `runr user set-role`: it changes a user's role, under the owner rules.
func userSetRoleCmd() *cobra.Command {
	var email, role string
	setRole := &cobra.Command{
		Use:   "set-role",
		Short: "Change a user's role (the last owner keeps theirs)",
		Args:  cobra.NoArgs,
		RunE: withStore(func(cmd *cobra.Command, st *store.Store) error {
			u, err := userByEmail(cmd, st, email)
			if err != nil {
				return err
			}
			// The operator holds the database: no actor, but the owner rules still hold.
			if err := accounts.SetRole(cmd.Context(), st, nil, u.ID, role); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "%s is now %s\n", u.Email, role)
			return nil
		}),
	}
	setRole.Flags().StringVar(&email, "email", "", "the user (required)")
	setRole.Flags().StringVar(&role, "role", "", "owner, admin, member or viewer (required)")
	_ = setRole.MarkFlagRequired("email")
	_ = setRole.MarkFlagRequired("role")
	return setRole
}

// userDeleteCmd is `runr user delete`: it deletes a user and their tokens, never the last owner.
func userDeleteCmd() *cobra.Command {
	var email string
	del := &cobra.Command{
		Use:   "delete",
		Short: "Delete a user and their tokens (never the last owner)",
		Args:  cobra.NoArgs,
		RunE: withStore(func(cmd *cobra.Command, st *store.Store) error {
			u, err := userByEmail(cmd, st, email)
			if err != nil {
				return err
			}
			if err := accounts.DeleteUser(cmd.Context(), st, nil, u.ID); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "Deleted %s\n", u.Email)
			return nil
		}),
	}
	del.Flags().StringVar(&email, "email", "", "the user (required)")
	_ = del.MarkFlagRequired("email")
	return del
}

// userByEmail finds the user an operator's --email names.
func userByEmail(cmd *cobra.Command, st *store.Store, email string) (*store.User, error) {
	u, err := st.UserByEmail(cmd.Context(), email)
	if err != nil {
		return nil, fmt.Errorf("no user with e-mail %s: %w", email, err)
	}
	return u, nil
}

func tokenCmd() *cobra.Command {
	token := &cobra.Command{Use: "token", Short: "Manage API tokens"}
	var email, name, scopes string
	var days int
	create := &cobra.Command{
		Use:   "create",
		Short: "Create an API token for a user; prints the token alone on stdout",
		Args:  cobra.NoArgs,
		RunE: withStore(func(cmd *cobra.Command, st *store.Store) error {
			u, err := userByEmail(cmd, st, email)
			if err != nil {
				return err
			}
			g := accounts.Grantor{User: u, Perms: perm.OfUser(u, nil), Star: true}
			_, plain, err := accounts.CreateToken(cmd.Context(), st, g, accounts.TokenInput{Name: name, Scopes: []string{scopes}, ExpiresInDays: &days})
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), plain)
			return nil
		}),
	}
	create.Flags().StringVar(&email, "email", "", "the token's user (required)")
	create.Flags().StringVar(&name, "name", "", "what the token is for (required)")
	create.Flags().StringVar(&scopes, "scopes", "*", "comma-separated permissions, or *")
	create.Flags().IntVar(&days, "expires-in-days", accounts.DefaultTokenDays, "how many days the token works (0: until it is revoked)")
	_ = create.MarkFlagRequired("email")
	_ = create.MarkFlagRequired("name")
	token.AddCommand(create)
	return token
}

func secretsCmd() *cobra.Command {
	secrets := &cobra.Command{Use: "secrets", Short: "Secrets at rest"}
	encrypt := &cobra.Command{
		Use:   "encrypt",
		Short: "Encrypt every secret value still stored in plain text",
		Args:  cobra.NoArgs,
		RunE: withStore(func(cmd *cobra.Command, st *store.Store) error {
			n, err := st.EncryptPlaintext(cmd.Context())
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Encrypted %d plaintext value(s)\n", n)
			return nil
		}),
	}
	generate := &cobra.Command{
		Use:   "generate-key",
		Short: "Print a new random APP_KEY (changes nothing)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), crypt.GenerateKey())
			return nil
		},
	}
	rotate := &cobra.Command{
		Use:   "rotate-key",
		Short: "Re-encrypt every secret under RUNR_APP_KEY and report the keys still in use",
		Long: "A key rotation that never stops a running console:\n" +
			"  1. runr secrets generate-key prints a new key.\n" +
			"  2. Restart every console with RUNR_APP_KEY=<new> and RUNR_PREVIOUS_APP_KEYS=<old>:\n" +
			"     they read with both keys and write with the new one.\n" +
			"  3. runr secrets rotate-key (same environment) re-encrypts what is left under the old\n" +
			"     key, in one transaction, and reports which keys the secrets still use.\n" +
			"  4. When the old key is no longer in use, drop it from RUNR_PREVIOUS_APP_KEYS.",
		Args: cobra.NoArgs,
		RunE: withStore(func(cmd *cobra.Command, st *store.Store) error {
			rep, err := st.RotateKey(cmd.Context())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Re-encrypted %d value(s) under key %s (RUNR_APP_KEY)\n", rep.Reencrypted, st.Cipher.KeyID())
			for _, id := range st.Cipher.KeyIDs()[1:] {
				if n := rep.InUse[id]; n > 0 {
					fmt.Fprintf(out, "Key %s (RUNR_PREVIOUS_APP_KEYS) is still in use by %d value(s)\n", id, n)
				} else {
					fmt.Fprintf(out, "Key %s (RUNR_PREVIOUS_APP_KEYS) is no longer in use: remove it once every console runs with the new key\n", id)
				}
			}
			if len(rep.Undecryptable) > 0 {
				return fmt.Errorf("%d value(s) open with no configured key and were left as they are: %s",
					len(rep.Undecryptable), strings.Join(rep.Undecryptable, "; "))
			}
			return nil
		}),
	}
	secrets.AddCommand(encrypt, generate, rotate)
	return secrets
}
