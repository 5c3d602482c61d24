package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"runr.dev/console/agent/nodemirror"
)

// registryCmd holds `runr registry …`: the node mirror and containerd's restart, which
// run on the region's nodes, and the rolling restart an operator starts.
func registryCmd() *cobra.Command {
	reg := &cobra.Command{Use: "registry", Short: "The region registry's node mirror and containerd restarts"}
	reg.AddCommand(registryMirrorCmd(), restartContainerdCmd(), rollingRestartCmd())
	return reg
}

// registryMirrorCmd is what the DaemonSet runr-registry-mirror runs on every node.
func registryMirrorCmd() *cobra.Command {
	var root string
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "mirror",
		Short: "Point the node's containerd at the region's Zot (the DaemonSet runr-registry-mirror runs this)",
		Long: "Writes containerd's hosts.toml for the region registry (RUNR_REGISTRY, host:port), ghcr.io and Docker Hub,\n" +
			"pointing them at the registry's cluster address, on plain containerd, k3s and rke2. On plain containerd it\n" +
			"also sets config_path in config.toml, which containerd reads after one restart. It checks again every interval.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			registry := os.Getenv("RUNR_REGISTRY")
			if registry == "" {
				return errors.New("RUNR_REGISTRY (the registry's host:port) is not set")
			}
			log := newLogger(os.Getenv("RUNR_LOG_LEVEL"))
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return runMirror(ctx, log, root, registry, interval)
		},
	}
	cmd.Flags().StringVar(&root, "root", "/host", "where the host's filesystem is mounted")
	cmd.Flags().DurationVar(&interval, "interval", 5*time.Minute, "how often to check the files again")
	return cmd
}

// runMirror syncs once, then every interval; failures are retried for a minute before
// the pod gives up (its DaemonSet then shows it as not ready, with this log).
func runMirror(ctx context.Context, log *slog.Logger, root, registry string, interval time.Duration) error {
	resolve := func(host string) (string, error) {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		addrs, err := net.DefaultResolver.LookupHost(rctx, host)
		if err != nil || len(addrs) == 0 {
			return "", fmt.Errorf("no address for %s: %v", host, err)
		}
		return addrs[0], nil
	}
	var failingSince time.Time
	for {
		res, err := nodemirror.Sync(root, registry, resolve)
		switch {
		case err != nil:
			if failingSince.IsZero() {
				failingSince = time.Now()
			}
			log.Error("node mirror", "err", err)
			if errors.Is(err, nodemirror.ErrMirrorsConfigured) || time.Since(failingSince) > time.Minute {
				return err
			}
		default:
			failingSince = time.Time{}
			if res.Changed || res.ConfigChanged {
				log.Info("node mirror: hosts.toml written", "containerd", res.Flavor.Name, "dir", res.CertsDir, "registry", registry, "address", res.RegistryIP)
			}
			if res.ConfigChanged {
				log.Warn("containerd needs one restart to read config_path: run `runr registry rolling-restart REGION` (or the Registry tab's Restart containerd); until then this node pulls without the mirror",
					"config", filepath.Join(res.Flavor.ConfigDir, "config.toml"))
			}
		}
		wait := interval
		if err != nil {
			wait = 10 * time.Second
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// restartContainerdCmd restarts the node's containerd; a privileged pod of the rolling
// restart runs it with the host's / at --root and the host's PID namespace.
func restartContainerdCmd() *cobra.Command {
	var root string
	cmd := &cobra.Command{
		Use:   "restart-containerd",
		Short: "Restart the node's containerd so that it reads config_path (run by `registry rolling-restart`)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := nodemirror.Detect(root)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if !f.NeedsConfigPath {
				fmt.Fprintf(out, "%s's containerd reads hosts.toml as it is: no restart needed\n", f.Name)
				return nil
			}
			if nodemirror.ConfiguredCertsDir(filepath.Join(root, f.ConfigDir, "config.toml")) == "" {
				return errors.New("config.toml sets no config_path yet: the node mirror has not run on this node")
			}
			// systemctl of the host, talking to the host's systemd (host PID namespace).
			if err := syscall.Chroot(root); err != nil {
				return fmt.Errorf("enter the host's filesystem: %w", err)
			}
			if err := os.Chdir("/"); err != nil {
				return err
			}
			c := exec.CommandContext(cmd.Context(), "systemctl", "restart", "containerd")
			c.Stdout, c.Stderr = out, cmd.ErrOrStderr()
			if err := c.Run(); err != nil {
				return fmt.Errorf("systemctl restart containerd: %w", err)
			}
			fmt.Fprintln(out, "containerd restarted: it reads the node mirror's hosts.toml")
			return nil
		},
	}
	cmd.Flags().StringVar(&root, "root", "/host", "where the host's filesystem is mounted")
	return cmd
}

// rollingRestartCmd queues the restart of containerd node by node (the running console
// carries it out).
func rollingRestartCmd() *cobra.Command {
	cmd := jobCommand("rolling-restart REGION", "Restart containerd on the region's nodes one at a time, so that they read the node mirror's config_path (through the console's API)",
		http.MethodPost, "registry/rolling-restart", 0, false, nil)
	addOutputFlag(cmd)
	return cmd
}
