// Package cli is the `runr` command: `runr serve` runs the console, and the other
// subcommands are the operator's tools and the client of the JSON API.
package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"runr.dev/console/config"
	"runr.dev/console/crypt"
	"runr.dev/console/store"
)

// NewRoot builds the `runr` command and its subcommands.
func NewRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "runr",
		Short:         "runr's regions console and its operator tools",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(serveCmd(), migrateCmd(), userCmd(), tokenCmd(), secretsCmd(), responderCmd(), agentCmd(), domainAliasCmd(), regionsCmd(), tenantsCmd(), billingCmd(), jobsCmd(), loginCmd(), logoutCmd(), reconcileCmd(), registryCmd(), sandboxCmd(), prepullCmd(), statusCmd(), versionCmd())
	// `runr` alone shows the commands (`runr serve` serves): a console started by a stray
	// invocation would bind the port and read the environment's database.
	return root
}

func newLogger(level string) *slog.Logger {
	var l slog.Level
	switch strings.ToLower(level) {
	case "debug":
		l = slog.LevelDebug
	case "warn":
		l = slog.LevelWarn
	case "error":
		l = slog.LevelError
	default:
		l = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
}

// openStore reads the configuration and connects to the database.
func openStore(ctx context.Context) (*config.Config, *store.Store, error) {
	cfg, err := config.FromEnv()
	if err != nil {
		return nil, nil, err
	}
	cipher, err := crypt.NewCipher(cfg.AppKey, cfg.PreviousAppKeys...)
	if err != nil {
		return nil, nil, err
	}
	st, err := store.Open(ctx, cfg.DatabaseURL, cipher)
	if err != nil {
		return nil, nil, err
	}
	return cfg, st, nil
}

// openMigratedStore is openStore for commands that need the schema up to date: with a
// migration pending it closes the store and says to run `runr migrate` first.
func openMigratedStore(ctx context.Context) (*config.Config, *store.Store, error) {
	cfg, st, err := openStore(ctx)
	if err != nil {
		return nil, nil, err
	}
	if n, err := st.PendingMigrations(ctx); err != nil || n > 0 {
		st.Close()
		if err == nil {
			err = fmt.Errorf("%d migration(s) pending: run `runr migrate` first", n)
		}
		return nil, nil, err
	}
	return cfg, st, nil
}

func versionCmd() *cobra.Command {
	return &cobra.Command{Use: "version", Short: "Print the version", Args: cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) { fmt.Fprintln(cmd.OutOrStdout(), config.Version) }}
}

// withStore wraps a command body so it runs with an open store that is closed afterwards.
func withStore(run func(cmd *cobra.Command, st *store.Store) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		_, st, err := openStore(cmd.Context())
		if err != nil {
			return err
		}
		defer st.Close()
		return run(cmd, st)
	}
}
