package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"runr.dev/console/apiclient"
)

// regionsMigrationCmd holds `runr regions migration …`: start, follow, complete and roll
// back a region's move to another cluster (the console carries it out).
func regionsMigrationCmd() *cobra.Command {
	migration := &cobra.Command{Use: "migration", Short: "Move a region to another cluster"}
	migration.AddCommand(migrationStartCmd(), migrationStatusCmd(), migrationCompleteCmd(),
		jobCommand("rollback REGION", "Roll a move back (in dns_check or failed): the old cluster again", http.MethodPost, "rollback-migration", 0, false, nil))
	return migration
}

// migrationStartCmd is `runr regions migration start REGION --kubeconfig FILE`.
func migrationStartCmd() *cobra.Command {
	var kubeconfig, dataLocation string
	cmd := jobCommand("start REGION --kubeconfig FILE", "Start moving a region to the cluster of a kubeconfig", http.MethodPost, "migrate", 0, false,
		func(*cobra.Command, []string) (any, error) {
			kc, err := readFileFlag("kubeconfig", kubeconfig)
			return map[string]any{"kubeconfig": kc, "data_location": dataLocation}, err
		})
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "the new cluster's kubeconfig (required)")
	cmd.Flags().StringVar(&dataLocation, "data-location", "", "the new cluster's data location (required when the region has one)")
	_ = cmd.MarkFlagRequired("kubeconfig")
	return cmd
}

// migrationStatus is GET /api/knative-regions/{id}/migration-status.
type migrationStatus struct {
	Status     string     `json:"migration_status"`
	JobID      string     `json:"job_id"`
	DNSCheckAt *time.Time `json:"dns_check_at"`
	Deadline   *time.Time `json:"deadline"`
	OldAddress string     `json:"old_external_ip"`
	Address    string     `json:"external_ip"`
	DNS        string     `json:"dns_instruction"`
	Steps      []struct {
		Title   string `json:"title"`
		Status  string `json:"status"`
		Message string `json:"message"`
	} `json:"steps"`
}

// migrationStatusCmd is `runr regions migration status REGION`.
func migrationStatusCmd() *cobra.Command {
	return regionCommand("status REGION", "Show a move's status and steps", 0,
		func(cmd *cobra.Command, c *apiclient.Client, r *apiclient.Region, _ []string) error {
			var raw json.RawMessage
			if err := c.Do(cmd.Context(), http.MethodGet, apiclient.RegionPath(r.ID, "migration-status"), nil, &raw); err != nil {
				return err
			}
			var ms migrationStatus
			if err := json.Unmarshal(raw, &ms); err != nil {
				return fmt.Errorf("read the move's status: %w", err)
			}
			return printed(cmd, raw, func(w io.Writer) error {
				status := ms.Status
				if status == "" {
					status = "none"
				}
				fmt.Fprintf(w, "Region:\t%s\nMove:\t%s\n", r.Name, status)
				for _, row := range [][2]string{{"Job", ms.JobID}, {"Old address", ms.OldAddress}, {"Address", ms.Address}, {"DNS", ms.DNS}} {
					if row[1] != "" {
						fmt.Fprintf(w, "%s:\t%s\n", row[0], row[1])
					}
				}
				if ms.Deadline != nil {
					fmt.Fprintf(w, "Completes by:\t%s\n", ms.Deadline.Local().Format(time.RFC1123))
				}
				if len(ms.Steps) > 0 {
					fmt.Fprintln(w, "\nSTEP\tSTATUS\tMESSAGE")
					for _, s := range ms.Steps {
						fmt.Fprintf(w, "%s\t%s\t%s\n", s.Title, s.Status, s.Message)
					}
				}
				return nil
			})
		})
}

// migrationCompleteCmd is `runr regions migration complete REGION [--domain]`.
func migrationCompleteCmd() *cobra.Command {
	var domain, wait bool
	cmd := regionCommand("complete REGION", "Complete a move in dns_check (with --domain: the base-domain migration)", 0,
		func(cmd *cobra.Command, c *apiclient.Client, r *apiclient.Region, _ []string) error {
			if domain {
				ans, err := c.Post(cmd.Context(), http.MethodPost, apiclient.RegionPath(r.ID, "complete-domain-migration"), nil)
				if err != nil {
					return err
				}
				return queued(cmd, c, "Domain migration of "+r.Name, ans.JobID, wait)
			}
			var ans struct {
				Data json.RawMessage `json:"data"`
			}
			if err := c.Do(cmd.Context(), http.MethodPost, apiclient.RegionPath(r.ID, "complete-migration"), nil, &ans); err != nil {
				return err
			}
			return printed(cmd, ans.Data, func(w io.Writer) error {
				fmt.Fprintf(w, "Move of %s completed: the old kubeconfig and address are forgotten\n", r.Name)
				return nil
			})
		})
	cmd.Flags().BoolVar(&domain, "domain", false, "complete the base-domain migration instead")
	addWaitFlag(cmd, &wait)
	return cmd
}
