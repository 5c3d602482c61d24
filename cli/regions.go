package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"runr.dev/console/apiclient"
)

// regionsCmd holds `runr regions …`: the regions, through the console's JSON API.
func regionsCmd() *cobra.Command {
	regions := &cobra.Command{Use: "regions", Short: "Regions, through the console's API (runr login first, or RUNR_URL and RUNR_TOKEN)"}
	addOutputFlag(regions)
	regions.AddCommand(regionsListCmd(), regionsShowCmd(), regionsCheckCmd(), regionsCreateCmd(), regionsSetCmd(), regionsRmCmd(),
		knativeCmd(), regionRegistryCmd(), redisCmd(), tracingCmd(), functionTLSCmd(), monitoringCmd(), regionsMigrationCmd(), workersCmd(),
		demoCmd(), dataServicesCmd(), skupperCmd(), isolationCmd(), gpuCmd(), supplyChainCmd(), regionBillingCmd())
	return regions
}

// regionRun is the body of a command whose first argument names a region.
type regionRun func(cmd *cobra.Command, c *apiclient.Client, r *apiclient.Region, args []string) error

// withAPIRegion resolves the region the first argument names (by name or id) and runs the body.
func withAPIRegion(run regionRun) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c, err := apiClient(cmd)
		if err != nil {
			return err
		}
		r, err := c.Region(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		return run(cmd, c, r, args[1:])
	}
}

// completeRegions completes a region name (the first argument) from the console.
func completeRegions(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, err := apiClient(cmd)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	rs, err := c.Regions(cmd.Context(), "")
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.Name
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// regionCommand is a command on one region (REGION first), completed from the console.
func regionCommand(use, short string, extraArgs int, run regionRun) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, Args: cobra.ExactArgs(1 + extraArgs),
		ValidArgsFunction: completeRegions, RunE: withAPIRegion(run)}
}

// regionsListCmd is `runr regions list`.
func regionsListCmd() *cobra.Command {
	var rq apiclient.RegionQuery
	cmd := &cobra.Command{
		Use: "list", Short: "List the regions with their health at a glance and their states", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := apiClient(cmd)
			if err != nil {
				return err
			}
			rs, err := c.RegionsWhere(cmd.Context(), rq)
			if err != nil {
				return err
			}
			return printed(cmd, rawList(rs, func(r apiclient.Region) json.RawMessage { return r.Raw }), func(w io.Writer) error {
				fmt.Fprintln(w, "NAME\tHEALTH\tSTATUS\tOPERATOR\tSERVING\tREGISTRY\tREDIS\tADDRESS\tMOVE\tWHY")
				for _, r := range rs {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Glance.State, r.RegionStatus, r.OperatorStatus, r.ServingStatus,
						r.RegistryStatus, r.RedisStatus, dash(r.ExternalIP), dash(r.MigrationStatus), r.Glance.Reason)
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&rq.Name, "query", "", "only regions whose name contains this")
	cmd.Flags().StringVar(&rq.Health, "health", "", "only regions in this health: attention (down or degraded), down, degraded, unknown or ok")
	cmd.Flags().StringVar(&rq.Sort, "sort", "", "name (the default) or health (the worst first)")
	return cmd
}

// regionsShowCmd is `runr regions show REGION`.
func regionsShowCmd() *cobra.Command {
	return regionCommand("show REGION", "Show a region: statuses, components, settings", 0,
		func(cmd *cobra.Command, _ *apiclient.Client, r *apiclient.Region, _ []string) error {
			return printed(cmd, r.Raw, func(w io.Writer) error { return regionTable(w, r) })
		})
}

// regionTable prints a region as name/value lines and its components.
func regionTable(w io.Writer, r *apiclient.Region) error {
	knative := r.ServingStatus
	if r.KnativeVersion != "" {
		knative += " (" + r.KnativeVersion + ")"
	}
	rows := [][2]string{{"Name", r.Name}, {"ID", r.ID}, {"Health", r.Glance.State + ": " + r.Glance.Reason}, {"Status", r.RegionStatus},
		{"Cluster", r.ClusterServer}, {"Kubernetes", r.K8sVersion}, {"Dedicated workers", strings.Join(r.Nodes, ", ")}, {"Data location", r.DataLocation},
		{"Operator", r.OperatorStatus}, {"Serving", knative}, {"Knative message", r.KnativeMessage},
		{"Registry", r.RegistryMode + " " + r.RegistryStatus}, {"Registry address", r.RegistryAddress}, {"Registry message", r.RegistryStatusMessage},
		{"Redis", r.RedisMode + " " + r.RedisStatus}, {"Function domain", r.KnativeDomain}, {"External address", r.ExternalIP},
		{"DNS", r.DNSInstruction}, {"Move", r.MigrationStatus}, {"Domain move", r.DomainMigrationStatus},
		{"Overcommit", fmt.Sprintf("cpu %g, memory %g", r.FaaSCPUOvercommit, r.FaaSMemoryOvercommit)},
		{"Projects", fmt.Sprint(r.ProjectCount)}, {"Secrets", r.SecretError}}
	for _, row := range rows {
		if strings.TrimSpace(row[1]) != "" {
			fmt.Fprintf(w, "%s:\t%s\n", row[0], row[1])
		}
	}
	if len(r.Components) > 0 {
		names := make([]string, 0, len(r.Components))
		for n := range r.Components {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintln(w, "\nCOMPONENT\tSTATUS\tVERSION\tMESSAGE")
		for _, n := range names {
			cs := r.Components[n]
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", n, cs.Status, dash(cs.Version), cs.Message)
		}
	}
	return nil
}

// checkResult is the answer of POST /api/knative-regions/check.
type checkResult struct {
	OK     bool `json:"ok"`
	Checks []struct {
		Title    string `json:"title"`
		Status   string `json:"status"`
		Evidence string `json:"evidence"`
	} `json:"checks"`
	Server         string `json:"server"`
	Version        string `json:"kubernetes_version"`
	StorageClasses []struct {
		Name    string `json:"name"`
		Default bool   `json:"default"`
	} `json:"storage_classes"`
}

// regionsCheckCmd is `runr regions check NAME --kubeconfig FILE`: the wizard's step 1.
func regionsCheckCmd() *cobra.Command {
	var kubeconfig string
	cmd := &cobra.Command{
		Use: "check NAME --kubeconfig FILE", Short: "Check a cluster for a new region (version, nodes, StorageClasses, the namespace); creates nothing",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := apiClient(cmd)
			if err != nil {
				return err
			}
			kc, err := readFileFlag("kubeconfig", kubeconfig)
			if err != nil {
				return err
			}
			var ans struct {
				Data json.RawMessage `json:"data"`
			}
			if err := c.Do(cmd.Context(), http.MethodPost, "/api/knative-regions/check", map[string]any{"name": args[0], "kubeconfig": kc}, &ans); err != nil {
				return err
			}
			var res checkResult
			if err := json.Unmarshal(ans.Data, &res); err != nil {
				return fmt.Errorf("read the check: %w", err)
			}
			if err := printed(cmd, ans.Data, func(w io.Writer) error { return checkTable(w, &res) }); err != nil {
				return err
			}
			if !res.OK {
				return fmt.Errorf("the cluster cannot become region %s: see the failed checks", args[0])
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "the cluster's kubeconfig (required)")
	_ = cmd.MarkFlagRequired("kubeconfig")
	return cmd
}

// checkTable prints the checklist.
func checkTable(w io.Writer, res *checkResult) error {
	fmt.Fprintf(w, "Cluster:\t%s (Kubernetes %s)\n", res.Server, dash(res.Version))
	var classes []string
	for _, sc := range res.StorageClasses {
		if sc.Default {
			classes = append(classes, sc.Name+" (default)")
		} else {
			classes = append(classes, sc.Name)
		}
	}
	fmt.Fprintf(w, "StorageClasses:\t%s\n\nCHECK\tRESULT\tEVIDENCE\n", dash(strings.Join(classes, ", ")))
	for _, it := range res.Checks {
		fmt.Fprintf(w, "%s\t%s\t%s\n", it.Title, it.Status, it.Evidence)
	}
	return nil
}

// regionsRmCmd is `runr regions rm REGION`: RunR's record only; nothing leaves the cluster.
func regionsRmCmd() *cobra.Command {
	var teardown, wait bool
	cmd := regionCommand("rm REGION", "Remove RunR's record of a region (nothing is removed from the cluster unless --teardown; its projects stay, without a region; --teardown is refused while projects remain)", 0,
		func(cmd *cobra.Command, c *apiclient.Client, r *apiclient.Region, _ []string) error {
			if teardown {
				ans, err := c.Post(cmd.Context(), http.MethodDelete, apiclient.RegionPath(r.ID, "")+"?teardown=true", nil)
				if err != nil {
					return err
				}
				return queued(cmd, c, "Remove what RunR installed on the cluster of "+r.Name+", then the region", ans.JobID, wait)
			}
			if err := c.Do(cmd.Context(), http.MethodDelete, apiclient.RegionPath(r.ID, ""), nil, nil); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Region %s removed; what RunR installed keeps running on the cluster\n", r.Name)
			if r.ProjectCount > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "Its %d project(s) stay in RunR without a region: move them to another region or delete them\n", r.ProjectCount)
			}
			return nil
		})
	cmd.Flags().BoolVar(&teardown, "teardown", false, "first remove what RunR installed on the cluster (one job, as the removal page's table lists it), then the record")
	addWaitFlag(cmd, &wait)
	return cmd
}

// regionByID re-reads a region after a change.
func regionByID(ctx context.Context, c *apiclient.Client, id string) (*apiclient.Region, error) {
	return c.Region(ctx, id)
}
