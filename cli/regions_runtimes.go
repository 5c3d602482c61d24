package cli

import (
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"runr.dev/console/ops/gpu"
	"runr.dev/console/store"
)

// sandboxRuntimes are the runtimes `runr regions isolation` installs and removes.
var sandboxRuntimes = []string{store.RuntimeKata, store.RuntimeGVisor, store.RuntimeWasm}

// isolationCmd holds `runr regions isolation …`: the sandbox runtimes (the Isolation tab).
func isolationCmd() *cobra.Command {
	iso := &cobra.Command{Use: "isolation", Short: "Sandbox runtimes on a region: Kata Containers, gVisor, WebAssembly (the Isolation tab)"}
	var hypervisors, nodes []string
	install := jobCommand("install REGION RUNTIME", "Install a sandbox runtime ("+strings.Join(sandboxRuntimes, ", ")+")", http.MethodPost, "install-sandbox", 1, false,
		func(_ *cobra.Command, args []string) (any, error) {
			return map[string]any{"runtime": args[0], "hypervisors": hypervisors, "nodes": nodes}, nil
		})
	install.Flags().StringSliceVar(&hypervisors, "hypervisors", nil, "Kata's hypervisors (comma-separated; default: what the nodes support)")
	install.Flags().StringSliceVar(&nodes, "nodes", nil, "WebAssembly only: the nodes it goes on (comma-separated)")
	install.ValidArgsFunction = completeRegionThen(sandboxRuntimes...)
	remove := jobCommand("rm REGION RUNTIME", "Remove a sandbox runtime (refused while workloads use it)", http.MethodPost, "uninstall-sandbox", 1, false,
		func(_ *cobra.Command, args []string) (any, error) { return map[string]any{"runtime": args[0]}, nil })
	remove.ValidArgsFunction = completeRegionThen(sandboxRuntimes...)
	iso.AddCommand(install, remove)
	return iso
}

// gpuCmd holds `runr regions gpu …`: GPU support (the GPU tab).
func gpuCmd() *cobra.Command {
	g := &cobra.Command{Use: "gpu", Short: "GPU support on a region (the GPU tab)"}
	var mode string
	install := jobCommand("install REGION --mode operator|device-plugin", "Install GPU support", http.MethodPost, "gpu/install", 0, false,
		func(*cobra.Command, []string) (any, error) { return map[string]any{"mode": mode}, nil })
	install.Flags().StringVar(&mode, "mode", gpu.GPUModes[0], "operator (NVIDIA's GPU operator installs drivers and toolkit) or device-plugin (the nodes have drivers)")
	_ = install.RegisterFlagCompletionFunc("mode", cobra.FixedCompletions(gpu.GPUModes, cobra.ShellCompDirectiveNoFileComp))
	remove := jobCommand("rm REGION", "Remove GPU support (refused while pods request GPUs)", http.MethodPost, "gpu/uninstall", 0, false, nil)
	g.AddCommand(install, remove)
	return g
}

// supplyChainCmd holds `runr regions supply-chain …` (the Supply chain tab).
func supplyChainCmd() *cobra.Command {
	sc := &cobra.Command{Use: "supply-chain", Short: "The supply chain's admission policy on a region (the Supply chain tab)"}
	sc.AddCommand(jobCommand("rm-admission REGION", "Remove the admission policy (policy-controller and the region's ClusterImagePolicies)",
		http.MethodDelete, "supply-chain/admission", 0, false, nil))
	return sc
}
