package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"runr.dev/console/agent/nodemirror"
	"runr.dev/console/agent/nodeprobe"
	"runr.dev/console/agent/sandbox"
)

// sandboxCmd holds `runr sandbox regions show|set` (a region's Sandbox API settings) and,
// hidden, the sandbox runtimes' node installers, which the console's DaemonSets in
// runr-sandbox run on the nodes: the KVM probe and gVisor's installer.
func sandboxCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "sandbox", Short: "The Sandbox API's settings of the regions"}
	var root string
	probe := &cobra.Command{
		Use: "probe-kvm", Short: "Label this node runr.dev/kvm with whether /dev/kvm exists, then wait", Args: cobra.NoArgs, Hidden: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ok, why := sandbox.ProbeKVM(root)
			fmt.Fprintln(cmd.OutOrStdout(), why)
			if err := labelOwnNode(cmd.Context(), "runr.dev/kvm", fmt.Sprint(ok)); err != nil {
				return err
			}
			return waitForSignal(cmd.Context())
		},
	}
	nodeProbe := &cobra.Command{
		Use: "probe-node", Short: "Write this node's preflight measurements on it (annotation " + nodeprobe.Annotation + "), then wait", Args: cobra.NoArgs, Hidden: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			report, err := json.Marshal(nodeprobe.Probe(cmd.Context(), root, nodeprobe.Targets))
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), string(report))
			if err := patchOwnNode(cmd.Context(), "annotations", nodeprobe.Annotation, string(report)); err != nil {
				return err
			}
			return waitForSignal(cmd.Context())
		},
	}
	gvisor := gvisorInstallCmd(&root)
	gvisor.Hidden = true
	for _, installer := range []*cobra.Command{probe, nodeProbe, gvisor} {
		installer.Flags().StringVar(&root, "root", "/host", "where the host's filesystem is mounted")
	}
	cmd.AddCommand(probe, nodeProbe, gvisor, sandboxRegionsCmd())
	return cmd
}

// gvisorInstallCmd installs gVisor on the node, registers runsc with containerd (a
// restart of containerd when its configuration changed), labels the node and waits.
func gvisorInstallCmd(root *string) *cobra.Command {
	var release string
	cmd := &cobra.Command{
		Use: "install-gvisor", Short: "Install runsc and register it with the node's containerd", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := nodemirror.Detect(*root)
			if err != nil {
				return err
			}
			arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]
			ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Minute)
			defer cancel()
			archive, err := sandbox.Download(ctx, &http.Client{Timeout: 5 * time.Minute}, release, arch)
			if err != nil {
				return err
			}
			if err := sandbox.Extract(archive, filepath.Join(*root, "/usr/local/bin")); err != nil {
				return err
			}
			restart, err := sandbox.RegisterGVisor(*root, f)
			if err != nil {
				return err
			}
			if restart {
				if err := restartRuntime(*root, f.Name); err != nil {
					return err
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "gVisor installed (%s): runtime handler %s\n", f.Name, sandbox.GVisorHandler)
			if err := labelOwnNode(cmd.Context(), "runr.dev/gvisor", "true"); err != nil {
				return err
			}
			return waitForSignal(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&release, "release", "https://storage.googleapis.com/gvisor/releases/release/latest", "gVisor's release to install (its address)")
	return cmd
}

// restartRuntime restarts the node's containerd (k3s or rke2 with it) so that it reads a
// changed configuration: systemctl of the host, through its filesystem and PID namespace.
func restartRuntime(root, flavor string) error {
	unit := map[string]string{"containerd": "containerd", "k3s": "k3s", "rke2": "rke2-server"}[flavor]
	if err := syscall.Chroot(root); err != nil {
		return fmt.Errorf("enter the host's filesystem: %w", err)
	}
	if err := os.Chdir("/"); err != nil {
		return err
	}
	if out, err := exec.Command("systemctl", "restart", unit).CombinedOutput(); err != nil {
		return fmt.Errorf("systemctl restart %s: %w: %s", unit, err, out)
	}
	return nil
}

// labelOwnNode sets a label on the node this pod runs on (NODE_NAME, from the downward
// API), with the pod's service account.
func labelOwnNode(ctx context.Context, key, value string) error {
	return patchOwnNode(ctx, "labels", key, value)
}

// patchOwnNode sets one label or annotation (field) of the pod's own node.
func patchOwnNode(ctx context.Context, field, key, value string) error {
	node := os.Getenv("NODE_NAME")
	if node == "" {
		return errors.New("NODE_NAME is not set (the DaemonSet passes spec.nodeName)")
	}
	rc, err := rest.InClusterConfig()
	if err != nil {
		return fmt.Errorf("cluster access: %w", err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{field: map[string]string{key: value}}})
	if _, err := cs.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("set %s %s of node %s: %w", field, key, node, err)
	}
	return nil
}

// waitForSignal keeps the pod running (its DaemonSet is ready) until it is stopped.
func waitForSignal(ctx context.Context) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return nil
}
