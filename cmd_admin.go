package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"runr.dev/console/handlers"
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

func userCmd() *cobra.Command {
	user := &cobra.Command{Use: "user", Short: "Manage console users"}
	var email, role, password string
	create := &cobra.Command{
		Use:   "create",
		Short: "Create a user (prints a generated password when none is given)",
		Args:  cobra.NoArgs,
		RunE: withStore(func(cmd *cobra.Command, st *store.Store) error {
			in := handlers.UserInput{Email: email, Role: role, Password: password}
			if errs := handlers.ValidateUser(in); len(errs) > 0 {
				return errs
			}
			generated := password == ""
			if generated {
				password = handlers.GeneratePassword()
			}
			u, err := st.CreateUser(cmd.Context(), strings.TrimSpace(email), "", role, password)
			if err != nil {
				return err
			}
			if generated {
				fmt.Fprintln(cmd.OutOrStdout(), password)
			} else {
				fmt.Fprintf(cmd.ErrOrStderr(), "Created %s (%s)\n", u.Email, u.Role)
			}
			return nil
		}),
	}
	create.Flags().StringVar(&email, "email", "", "e-mail address (required)")
	create.Flags().StringVar(&role, "role", "member", "owner, admin, member or viewer")
	create.Flags().StringVar(&password, "password", "", "password (generated and printed when empty)")
	_ = create.MarkFlagRequired("email")

	var bootEmail string
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
			pw := handlers.GeneratePassword()
			if _, err := st.CreateUser(cmd.Context(), bootEmail, "Administrator", "owner", pw); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "\n  First administrator created (shown once):\n    e-mail:   %s\n    password: %s\n\n", bootEmail, pw)
			return nil
		}),
	}
	bootstrap.Flags().StringVar(&bootEmail, "email", "admin@runr.local", "e-mail of the first owner")
	var roleEmail, newRole string
	setRole := &cobra.Command{
		Use:   "set-role",
		Short: "Change a user's role (the last owner keeps theirs)",
		Args:  cobra.NoArgs,
		RunE: withStore(func(cmd *cobra.Command, st *store.Store) error {
			u, err := st.UserByEmail(cmd.Context(), roleEmail)
			if err != nil {
				return fmt.Errorf("no user with e-mail %s: %w", roleEmail, err)
			}
			// The operator holds the database: no actor, but the owner rules still hold.
			if err := st.ChangeUserRole(cmd.Context(), nil, u.ID, newRole); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "%s is now %s\n", u.Email, newRole)
			return nil
		}),
	}
	setRole.Flags().StringVar(&roleEmail, "email", "", "the user (required)")
	setRole.Flags().StringVar(&newRole, "role", "", "owner, admin, member or viewer (required)")
	_ = setRole.MarkFlagRequired("email")
	_ = setRole.MarkFlagRequired("role")

	var delEmail string
	del := &cobra.Command{
		Use:   "delete",
		Short: "Delete a user and their tokens (never the last owner)",
		Args:  cobra.NoArgs,
		RunE: withStore(func(cmd *cobra.Command, st *store.Store) error {
			u, err := st.UserByEmail(cmd.Context(), delEmail)
			if err != nil {
				return fmt.Errorf("no user with e-mail %s: %w", delEmail, err)
			}
			if err := st.RemoveUser(cmd.Context(), nil, u.ID); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "Deleted %s\n", u.Email)
			return nil
		}),
	}
	del.Flags().StringVar(&delEmail, "email", "", "the user (required)")
	_ = del.MarkFlagRequired("email")
	user.AddCommand(create, bootstrap, setRole, del)
	return user
}

func tokenCmd() *cobra.Command {
	token := &cobra.Command{Use: "token", Short: "Manage API tokens"}
	var email, name, scopes string
	create := &cobra.Command{
		Use:   "create",
		Short: "Create an API token for a user; prints the token alone on stdout",
		Args:  cobra.NoArgs,
		RunE: withStore(func(cmd *cobra.Command, st *store.Store) error {
			u, err := st.UserByEmail(cmd.Context(), email)
			if err != nil {
				return fmt.Errorf("no user with e-mail %s: %w", email, err)
			}
			sc, err := handlers.ParseScopes([]string{scopes})
			if err != nil {
				return err
			}
			if err := store.CapScopes(store.EffectivePermissions(u.Role, nil), true, sc); err != nil {
				return err
			}
			if strings.TrimSpace(name) == "" {
				return fmt.Errorf("--name is required")
			}
			_, plain, err := st.CreateAPIToken(cmd.Context(), u.ID, strings.TrimSpace(name), sc)
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
	var newKey string
	rotate := &cobra.Command{
		Use:   "rotate-key",
		Short: "Re-encrypt every secret under a new APP_KEY (printed on stdout when not given)",
		Long: "Re-encrypts every secret column under a new key in one transaction. The new key is\n" +
			"printed alone on stdout: put it into RUNR_APP_KEY (or .data/app.key) before the next start.",
		Args: cobra.NoArgs,
		RunE: withStore(func(cmd *cobra.Command, st *store.Store) error {
			if newKey == "" {
				newKey = store.GenerateKey()
			}
			next, err := store.NewCipher(newKey)
			if err != nil {
				return err
			}
			n, err := st.RotateKey(cmd.Context(), next)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "Re-encrypted %d value(s) under the new key; set RUNR_APP_KEY to it now.\n", n)
			fmt.Fprintln(cmd.OutOrStdout(), newKey)
			return nil
		}),
	}
	rotate.Flags().StringVar(&newKey, "new-key", "", "the new key (base64 of 32 bytes); generated when empty")
	secrets.AddCommand(encrypt, rotate)
	return secrets
}
