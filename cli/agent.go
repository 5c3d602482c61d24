package cli

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"runr.dev/console/agent"
	"runr.dev/console/config"
)

func agentCmd() *cobra.Command {
	var kubeconfig, url, token, region string
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "The runr-agent: runs in a region and reports to the console over WebSocket",
		Long: "Reports per-minute metric snapshots, pod sessions and Kubernetes events to the console.\n" +
			"The region's runr-agent Deployment runs it with RUNR_AGENT_URL, RUNR_AGENT_TOKEN and RUNR_REGION;\n" +
			"it uses the in-cluster service account unless --kubeconfig is given.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if url == "" {
				url = os.Getenv("RUNR_AGENT_URL")
			}
			if token == "" {
				token = os.Getenv("RUNR_AGENT_TOKEN")
			}
			if region == "" {
				region = os.Getenv("RUNR_REGION")
			}
			if url == "" || token == "" {
				return fmt.Errorf("the agent needs the console's address and its region's token (RUNR_AGENT_URL, RUNR_AGENT_TOKEN)")
			}
			var rc *rest.Config
			var err error
			if kubeconfig != "" {
				rc, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
			} else {
				rc, err = rest.InClusterConfig()
			}
			if err != nil {
				return fmt.Errorf("agent: cluster access: %w", err)
			}
			cs, err := kubernetes.NewForConfig(rc)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			a := agent.New(agent.Config{URL: url, Token: token, Region: region, Version: config.Version, Interval: interval, Client: cs, Log: newLogger(os.Getenv("RUNR_LOG_LEVEL"))})
			return a.Run(ctx)
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default: the in-cluster service account)")
	cmd.Flags().StringVar(&url, "url", "", "the console's agent endpoint (default RUNR_AGENT_URL)")
	cmd.Flags().StringVar(&token, "token", "", "the region's agent token (default RUNR_AGENT_TOKEN)")
	cmd.Flags().StringVar(&region, "region", "", "the region's name (default RUNR_REGION)")
	cmd.Flags().DurationVar(&interval, "interval", time.Minute, "metric snapshot interval")
	return cmd
}
