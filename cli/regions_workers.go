package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"runr.dev/console/apiclient"
	"runr.dev/console/ops/nodes"
)

// workersCmd holds `runr regions workers …`: the Workers tab (nodes, dedicated workers,
// capacity) through the API.
func workersCmd() *cobra.Command {
	w := &cobra.Command{Use: "workers", Short: "A region's nodes, dedicated workers and capacity"}
	var none, belowFloor bool
	set := jobCommand("set REGION NODE...", "Dedicate these nodes to projects (labelled and tainted; the others are cleared)", http.MethodPut, "workers", 0, false,
		func(_ *cobra.Command, args []string) (any, error) {
			if len(args) == 0 && !none {
				return nil, fmt.Errorf("name the nodes to dedicate, or --none to clear the selection")
			}
			return map[string]any{"nodes": append([]string{}, args...), "confirm_below_floor": belowFloor}, nil
		})
	set.Args = cobra.MinimumNArgs(1)
	set.Flags().BoolVar(&none, "none", false, "clear the selection: projects run on every schedulable node")
	set.Flags().BoolVar(&belowFloor, "confirm-below-floor", false, "dedicate nodes that fail the preflight floor (refused otherwise, naming the failed checks)")
	probe := jobCommand("probe REGION", "Measure every node against the preflight floor on the node (cgroup v2, free disk, egress)", http.MethodPost, "nodes-probe", 0, false, nil)
	var perNode int
	upgrade := jobCommand("upgrade REGION VERSION", "Upgrade a k3s or rke2 cluster to a release, node by node (cordon, drain, upgrade, uncordon)", http.MethodPost, "kubernetes-upgrade", 1, false,
		func(_ *cobra.Command, args []string) (any, error) {
			return nodes.UpgradeInput{Version: args[0], TimeoutSeconds: perNode}, nil
		})
	upgrade.Flags().IntVar(&perNode, "timeout-per-node", 0, "seconds each node may take (default 900)")
	w.AddCommand(workersListCmd(), workersCapacityCmd(), set, probe, upgrade,
		nodeJobCommand("rm REGION NODE", "Take a node out of the dedicated workers (label and taint removed)", http.MethodDelete, "workers"),
		nodeJobCommand("cordon REGION NODE", "Cordon a node", http.MethodPost, "cordon"),
		nodeJobCommand("uncordon REGION NODE", "Uncordon a node", http.MethodPost, "uncordon"),
		nodeJobCommand("drain REGION NODE", "Drain a node (cordon, then evict its pods)", http.MethodPost, "drain"),
		nodeJobCommand("delete-node REGION NODE", "Delete a node from the cluster (refused for the last control-plane node)", http.MethodDelete, ""),
		deletePreflightCmd())
	return w
}

// deletePreflightCmd is `runr regions workers delete-preflight REGION NODE`: what deleting
// the node would do, without deleting it. An even etcd voting-member count is a warning
// (advisory: exit 0); only the last control-plane node is refused (exit 1).
func deletePreflightCmd() *cobra.Command {
	return regionCommand("delete-preflight REGION NODE", "Say what deleting a node would do (a warning for an even etcd member count is advisory)", 1,
		func(cmd *cobra.Command, c *apiclient.Client, r *apiclient.Region, args []string) error {
			var out struct{ Data nodes.NodeDeleteCheck }
			if err := c.Do(cmd.Context(), http.MethodGet, apiclient.RegionPath(r.ID, "nodes/"+apiclient.PathEscape(args[0])+"/delete-preflight"), nil, &out); err != nil {
				return err
			}
			d := out.Data
			if err := printed(cmd, d, func(w io.Writer) error {
				switch {
				case d.Refused != "":
					fmt.Fprintf(w, "refused\t%s\n", d.Refused)
				case d.Warning != "":
					fmt.Fprintf(w, "warning\t%s\n", d.Warning)
				default:
					fmt.Fprintf(w, "ok\t%s may be deleted\n", d.Node)
				}
				if e := d.Etcd; e != nil {
					for _, m := range e.Members {
						state := "healthy"
						if !m.Healthy {
							state = "not answering"
						}
						fmt.Fprintf(w, "etcd member\t%s\t%s\t%s\n", m.Name, m.ID, state)
					}
					if e.Note != "" {
						fmt.Fprintf(w, "etcd\t%s\n", e.Note)
					}
				}
				return nil
			}); err != nil {
				return err
			}
			if d.Refused != "" {
				return fmt.Errorf("deleting %s is refused", d.Node)
			}
			return nil
		})
}

// nodeJobCommand is a command on one node of a region that queues a job.
func nodeJobCommand(use, short, method, action string) *cobra.Command {
	var wait bool
	cmd := regionCommand(use, short, 1, func(cmd *cobra.Command, c *apiclient.Client, r *apiclient.Region, args []string) error {
		node := apiclient.PathEscape(args[0])
		path := apiclient.RegionPath(r.ID, "nodes/"+node)
		switch {
		case action == "workers":
			path = apiclient.RegionPath(r.ID, "workers/"+node)
		case action != "":
			path += "/" + action
		}
		ans, err := c.Post(cmd.Context(), method, path, nil)
		if err != nil {
			return err
		}
		if ans.Warning != "" {
			fmt.Fprintln(cmd.ErrOrStderr(), "warning:", ans.Warning)
		}
		return queued(cmd, c, strings.SplitN(use, " ", 2)[0]+" "+args[0]+" ("+r.Name+")", ans.JobID, wait)
	})
	addWaitFlag(cmd, &wait)
	return cmd
}

// workersListCmd is `runr regions workers list REGION`: the nodes as the Workers tab shows them.
func workersListCmd() *cobra.Command {
	return regionCommand("list REGION", "The cluster's nodes: roles, heartbeat, resources, dedicated workers, warnings", 0,
		func(cmd *cobra.Command, c *apiclient.Client, r *apiclient.Region, _ []string) error {
			var raw json.RawMessage
			if err := c.Do(cmd.Context(), http.MethodGet, apiclient.RegionPath(r.ID, "nodes"), nil, &raw); err != nil {
				return err
			}
			var rep struct {
				Data     []nodes.NodeView     `json:"data"`
				Warnings []nodes.ShapeWarning `json:"warnings"`
				Upgrades nodes.Upgrades       `json:"upgrades"`
			}
			if err := json.Unmarshal(raw, &rep); err != nil {
				return fmt.Errorf("read the nodes: %w", err)
			}
			return printed(cmd, raw, func(w io.Writer) error {
				fmt.Fprintln(w, "NODE\tROLES\tSTATUS\tSCHEDULABLE\tDEDICATED\tCPU (m)\tMEMORY (Mi)\tKUBELET")
				for _, n := range rep.Data {
					ded := map[bool]string{true: "yes", false: ""}[n.Dedicated]
					fmt.Fprintf(w, "%s\t%s\t%s\t%v\t%s\t%d/%d\t%d/%d\t%s\n", n.Name, strings.Join(n.Roles, ","), n.Status, n.Schedulable, ded,
						n.CPURequestedM, n.CPUAllocatableM, n.MemoryRequestedMi, n.MemoryAllocatableMi, n.KubeletVersion)
				}
				for _, wn := range rep.Warnings {
					fmt.Fprintf(w, "warning:\t%s\n", wn.Message)
				}
				for _, p := range rep.Upgrades.Progress {
					for _, n := range p.Nodes {
						fmt.Fprintf(w, "upgrade to %s:\t%s\t%s%s\n", p.Version, n.Node, n.Stage, n.Detail)
					}
				}
				return nil
			})
		})
}

// workersCapacityCmd is `runr regions workers capacity REGION`: the capacity and budgets.
func workersCapacityCmd() *cobra.Command {
	return regionCommand("capacity REGION", "The region capacity and its always-on and FaaS budgets", 0,
		func(cmd *cobra.Command, c *apiclient.Client, r *apiclient.Region, _ []string) error {
			var ans struct {
				Data json.RawMessage `json:"data"`
			}
			if err := c.Do(cmd.Context(), http.MethodGet, apiclient.RegionPath(r.ID, "capacity"), nil, &ans); err != nil {
				return err
			}
			var rep nodes.CapacityReport
			if err := json.Unmarshal(ans.Data, &rep); err != nil {
				return fmt.Errorf("read the capacity: %w", err)
			}
			return printed(cmd, ans.Data, func(w io.Writer) error {
				fmt.Fprintf(w, "Capacity:\t%d m CPU, %d Mi memory\n", rep.Total.CPUm, rep.Total.MemoryMi)
				fmt.Fprintf(w, "Overcommit:\tcpu %g, memory %g\n\nBUDGET\tCPU FREE/BUDGET (m)\tMEMORY FREE/BUDGET (Mi)\tPROJECTS\n", rep.CPUOvercommit, rep.MemoryOvercommit)
				for _, b := range []nodes.Budget{rep.AlwaysOn, rep.FaaS} {
					fmt.Fprintf(w, "%s\t%d/%d\t%d/%d\t%d\n", b.Name, b.CPU.Free, b.CPU.Budget, b.Memory.Free, b.Memory.Budget, b.Projects)
				}
				return nil
			})
		})
}
