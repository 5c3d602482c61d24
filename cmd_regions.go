package main

import (
	"encoding/json"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"runr.dev/console/ops"
	"runr.dev/console/store"
)

// cliActor is who the operator's commands act as in the use cases.
var cliActor = ops.Actor{Email: "cli"}

// regionsCmd holds `runr regions …`: the operator's region tools (moves, listing).
func regionsCmd() *cobra.Command {
	regions := &cobra.Command{Use: "regions", Short: "Regions: list them and move them to another cluster"}
	regions.AddCommand(regionsListCmd(), regionsMigrationCmd())
	return regions
}

// regionsListCmd is `runr regions list`: one line per region with its statuses.
func regionsListCmd() *cobra.Command {
	return &cobra.Command{
		Use: "list", Short: "List the regions", Args: cobra.NoArgs,
		RunE: withStore(func(cmd *cobra.Command, st *store.Store) error {
			rs, err := st.ListRegions(cmd.Context(), store.RegionFilter{}, false)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tSTATUS\tSERVING\tREGISTRY\tREDIS\tADDRESS\tMOVE")
			for _, r := range rs {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Status, r.ServingStatus, r.RegistryStatus, r.RedisStatus, r.ExternalIP, r.MigrationStatus)
			}
			return w.Flush()
		}),
	}
}

// regionsMigrationCmd holds `runr regions migration …`: start, complete, roll back and follow a move.
func regionsMigrationCmd() *cobra.Command {
	migration := &cobra.Command{Use: "migration", Short: "Move a region to another cluster"}
	migration.AddCommand(migrationStartCmd(), migrationCompleteCmd(), migrationRollbackCmd(), migrationStatusCmd())
	return migration
}

// migrationStartCmd is `runr regions migration start`: it queues a region's move to the cluster of a kubeconfig.
func migrationStartCmd() *cobra.Command {
	var kubeconfig, dataLocation string
	start := &cobra.Command{
		Use: "start REGION --kubeconfig FILE", Short: "Start moving a region (the running console carries it out)", Args: cobra.ExactArgs(1),
		RunE: withRegion(func(cmd *cobra.Command, svc *ops.Service, r *store.Region) error {
			raw, err := os.ReadFile(kubeconfig)
			if err != nil {
				return fmt.Errorf("read the kubeconfig: %w", err)
			}
			j, err := svc.StartMigration(cmd.Context(), cliActor, r, ops.MigrateInput{Kubeconfig: string(raw), DataLocation: dataLocation})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Move of %s queued as job %s; follow it with `runr regions migration status %s`\n", r.Name, j.ID, r.Name)
			return nil
		}),
	}
	start.Flags().StringVar(&kubeconfig, "kubeconfig", "", "the new cluster's kubeconfig (required)")
	start.Flags().StringVar(&dataLocation, "data-location", "", "the new cluster's data location (required when the region has one)")
	_ = start.MarkFlagRequired("kubeconfig")
	return start
}

// migrationCompleteCmd is `runr regions migration complete`: it completes a move, or with --domain a base-domain migration, in dns_check.
func migrationCompleteCmd() *cobra.Command {
	var domain bool
	complete := &cobra.Command{
		Use: "complete REGION", Short: "Complete a move in dns_check (with --domain: a base-domain migration)", Args: cobra.ExactArgs(1),
		RunE: withRegion(func(cmd *cobra.Command, svc *ops.Service, r *store.Region) error {
			if domain {
				return completeDomainMigration(cmd, svc, r)
			}
			if err := svc.CompleteMigrationByHand(cmd.Context(), cliActor, r); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Move of %s completed\n", r.Name)
			return nil
		}),
	}
	complete.Flags().BoolVar(&domain, "domain", false, "complete the base-domain migration instead")
	return complete
}

// completeDomainMigration queues the completion of a region's base-domain migration in dns_check.
func completeDomainMigration(cmd *cobra.Command, svc *ops.Service, r *store.Region) error {
	j, err := svc.CompleteDomainMigration(cmd.Context(), cliActor, r)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "Domain migration of %s completes in job %s\n", r.Name, j.ID)
	return nil
}

// migrationRollbackCmd is `runr regions migration rollback`: it queues the rollback of a move.
func migrationRollbackCmd() *cobra.Command {
	return &cobra.Command{
		Use: "rollback REGION", Short: "Roll a move back (in dns_check or failed)", Args: cobra.ExactArgs(1),
		RunE: withRegion(func(cmd *cobra.Command, svc *ops.Service, r *store.Region) error {
			j, err := svc.RollbackMigration(cmd.Context(), cliActor, r)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Rollback of %s queued as job %s\n", r.Name, j.ID)
			return nil
		}),
	}
}

// migrationStatusCmd is `runr regions migration status`: a move's status as JSON.
func migrationStatusCmd() *cobra.Command {
	return &cobra.Command{
		Use: "status REGION", Short: "Show a move's status", Args: cobra.ExactArgs(1),
		RunE: withRegion(func(cmd *cobra.Command, _ *ops.Service, r *store.Region) error {
			out := map[string]any{"region": r.Name, "migration_status": r.MigrationStatus, "detail": r.MigrationDetail.V,
				"dns_check_at": r.MigrationDNSCheckAt, "external_ip": r.ExternalIP, "old_external_ip": r.OldExternalIP}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			return enc.Encode(out)
		}),
	}
}

// withRegion wraps a command body so it runs with the service and the region its first
// argument names, and closes the store afterwards.
func withRegion(run func(cmd *cobra.Command, svc *ops.Service, r *store.Region) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		svc, r, done, err := regionService(cmd, args[0])
		if err != nil {
			return err
		}
		defer done()
		return run(cmd, svc, r)
	}
}

// regionService opens the store and the cluster side for a region named or by id.
func regionService(cmd *cobra.Command, ref string) (*ops.Service, *store.Region, func(), error) {
	cfg, st, err := openStore(cmd.Context())
	if err != nil {
		return nil, nil, nil, err
	}
	r, err := st.RegionRef(cmd.Context(), ref)
	if err != nil {
		st.Close()
		return nil, nil, nil, fmt.Errorf("no region %s: %w", ref, err)
	}
	return ops.NewService(st, cfg, newLogger(cfg.LogLevel)), r, func() { st.Close() }, nil
}
