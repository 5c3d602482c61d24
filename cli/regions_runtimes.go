package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"runr.dev/console/apiclient"
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
	classes := regionCommand("classes REGION KIND=CLASS...", "Set the runtime class each workload kind deploys with (the Isolation tab's classes)", 0,
		func(cmd *cobra.Command, c *apiclient.Client, r *apiclient.Region, pairs []string) error {
			in := map[string]string{}
			for _, a := range pairs {
				kind, class, ok := strings.Cut(a, "=")
				if !ok || kind == "" {
					return fmt.Errorf("%q is not KIND=CLASS (e.g. function=gvisor)", a)
				}
				in[kind] = class
			}
			var out json.RawMessage
			if err := c.Do(cmd.Context(), http.MethodPut, apiclient.RegionPath(r.ID, "runtime-classes"), in, &out); err != nil {
				return err
			}
			return printed(cmd, out, func(w io.Writer) error { return indented(w, out) })
		})
	classes.Args = cobra.MinimumNArgs(2)
	iso.AddCommand(install, remove, classes)
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
	var sizeGi int
	var class string
	storage := jobCommand("storage REGION --size-gi N [--storage-class CLASS]", "Set the model storage volume (ReadWriteMany) of the GPU projects", http.MethodPut, "gpu/model-storage", 0, false,
		func(*cobra.Command, []string) (any, error) {
			return gpu.ModelStorageParams{SizeGi: sizeGi, StorageClass: class}, nil
		})
	storage.Flags().IntVar(&sizeGi, "size-gi", 50, "the volume's size in GiB (1-10240)")
	storage.Flags().StringVar(&class, "storage-class", "", "a StorageClass offering ReadWriteMany (default: the cluster's default)")
	g.AddCommand(install, remove, storage)
	return g
}

// supplyChainCmd holds `runr regions supply-chain …` (the Supply chain tab).
func supplyChainCmd() *cobra.Command {
	sc := &cobra.Command{Use: "supply-chain", Short: "The supply chain's admission policy on a region (the Supply chain tab)"}
	show, set := settingsCommands("a region's supply chain settings", func(r *apiclient.Region) string { return apiclient.RegionPath(r.ID, "supply-chain") },
		func(set *cobra.Command) []string {
			f := set.Flags()
			f.Bool("require-sbom", false, "deploys need an SBOM attestation")
			f.Bool("require-scan", false, "deploys need a vulnerability scan attestation")
			f.String("fail-severity", "", "the scan's severity that refuses a deploy (e.g. high)")
			f.Bool("admission", false, "apply (true) or remove (false) the admission policy in the cluster")
			f.String("admission-mode", "", "the admission policy's mode (enforce or warn)")
			f.StringSlice("admission-images", nil, "image patterns the admission policy covers (comma-separated)")
			f.String("data-location", "", "the region's data location")
			f.StringSlice("public-key-file", nil, "PEM public keys signatures are checked with; replaces the region's keys (repeat; - reads standard input)")
			return []string{"require-sbom", "require-scan", "fail-severity", "admission", "admission-mode", "admission-images", "data-location"}
		},
		func(cmd *cobra.Command, body map[string]any) error {
			if !cmd.Flags().Changed("public-key-file") {
				return nil
			}
			files, _ := cmd.Flags().GetStringSlice("public-key-file")
			keys, err := readFiles(cmd, files)
			body["public_keys"] = keys
			return err
		})
	sc.AddCommand(show, set, jobCommand("rm-admission REGION", "Remove the admission policy (policy-controller and the region's ClusterImagePolicies)",
		http.MethodDelete, "supply-chain/admission", 0, false, nil))
	return sc
}
