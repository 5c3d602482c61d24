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

// regionsCmd holds `runr regions …`: the operator's region tools (moves, listing).
func regionsCmd() *cobra.Command {
	regions := &cobra.Command{Use: "regions", Short: "Regions: list them and move them to another cluster"}
	regions.AddCommand(&cobra.Command{
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
	})
	migration := &cobra.Command{Use: "migration", Short: "Move a region to another cluster"}
	var kubeconfig, dataLocation string
	start := &cobra.Command{
		Use: "start REGION --kubeconfig FILE", Short: "Start moving a region (the running console carries it out)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, r, done, err := regionService(cmd, args[0])
			if err != nil {
				return err
			}
			defer done()
			raw, err := os.ReadFile(kubeconfig)
			if err != nil {
				return fmt.Errorf("read the kubeconfig: %w", err)
			}
			j, err := svc.StartMigration(cmd.Context(), r, string(raw), dataLocation, "cli")
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Move of %s queued as job %s; follow it with `runr regions migration status %s`\n", r.Name, j.ID, r.Name)
			return nil
		},
	}
	start.Flags().StringVar(&kubeconfig, "kubeconfig", "", "the new cluster's kubeconfig (required)")
	start.Flags().StringVar(&dataLocation, "data-location", "", "the new cluster's data location (required when the region has one)")
	_ = start.MarkFlagRequired("kubeconfig")
	var domain bool
	complete := &cobra.Command{
		Use: "complete REGION", Short: "Complete a move in dns_check (with --domain: a base-domain migration)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, r, done, err := regionService(cmd, args[0])
			if err != nil {
				return err
			}
			defer done()
			if domain {
				if r.DomainMigrationStatus != store.MigrationDNSCheck {
					return fmt.Errorf("region %s has no domain migration in dns_check", r.Name)
				}
				j, err := svc.CompleteDomainMigration(cmd.Context(), r, "cli")
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Domain migration of %s completes in job %s\n", r.Name, j.ID)
				return nil
			}
			if err := svc.CompleteMigrationByHand(cmd.Context(), r, "cli"); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Move of %s completed\n", r.Name)
			return nil
		},
	}
	complete.Flags().BoolVar(&domain, "domain", false, "complete the base-domain migration instead")
	rollback := &cobra.Command{
		Use: "rollback REGION", Short: "Roll a move back (in dns_check or failed)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, r, done, err := regionService(cmd, args[0])
			if err != nil {
				return err
			}
			defer done()
			j, err := svc.RollbackMigration(cmd.Context(), r, "cli")
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Rollback of %s queued as job %s\n", r.Name, j.ID)
			return nil
		},
	}
	status := &cobra.Command{
		Use: "status REGION", Short: "Show a move's status", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, r, done, err := regionService(cmd, args[0])
			if err != nil {
				return err
			}
			defer done()
			out := map[string]any{"region": r.Name, "migration_status": r.MigrationStatus, "detail": r.MigrationDetail.V,
				"dns_check_at": r.MigrationDNSCheckAt, "external_ip": r.ExternalIP, "old_external_ip": r.OldExternalIP}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			return enc.Encode(out)
		},
	}
	migration.AddCommand(start, complete, rollback, status)
	regions.AddCommand(migration)
	return regions
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
