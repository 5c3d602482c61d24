package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"runr.dev/console/apiclient"
	"runr.dev/console/ops"
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/reconcile"
	"runr.dev/console/store"
)

// reconcileActor is who `runr reconcile` acts as in the job history.
var reconcileActor = kit.Actor{Email: "runr reconcile"}

// reconcileCmd is `runr reconcile [--dry-run] [--region NAME] [--step STEP]`: it brings
// every active region up to what this release installs. It reads the database (like
// `runr migrate`, it runs in the chart's bootstrap Job, before any token exists): the
// dry run reads the clusters and changes nothing; otherwise it queues a reconcile job and
// carries it out here (or follows it when a running console took it first).
func reconcileCmd() *cobra.Command {
	var in reconcile.Input
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "reconcile [--dry-run] [--region NAME] [--step STEP]",
		Short: "Bring existing regions up to what this release installs (" + strings.Join(reconcile.Steps, ", ") + ")",
		Long: "Every step is idempotent: settings (Traefik's timeouts, Knative's max revision timeout), status-block\n" +
			"(applied to every region with Serving ready that is not active, removed from active ones),\n" +
			"image-registry (references to earlier namespaces of the console's images, RUNR_IMAGE_MOVES, moved;\n" +
			"the queue Redis and the sandbox node installers keep their running pods), tracing, traefik-image,\n" +
			"agent, observability (Prometheus and Loki) and image-mirror. A region that is not active is left\n" +
			"out of the cluster steps. --dry-run lists per region and step what would change and changes nothing.\n" +
			"Reads DATABASE_URL and RUNR_APP_KEY; the job shows in the console's job history.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			cfg, st, err := openMigratedStore(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			svc := ops.NewService(st, cfg, newLogger(cfg.LogLevel))
			if dryRun {
				return printPlan(cmd, svc, in)
			}
			return runReconcile(ctx, cmd, svc, in)
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list per region and step what would change; change nothing")
	cmd.Flags().StringVar(&in.Region, "region", "", "only this region (name or id) and, for the cluster steps, its cluster")
	cmd.Flags().StringVar(&in.Step, "step", "", "only this step: "+strings.Join(reconcile.Steps, ", "))
	_ = cmd.RegisterFlagCompletionFunc("step", cobra.FixedCompletions(reconcile.Steps, cobra.ShellCompDirectiveNoFileComp))
	addOutputFlag(cmd)
	return cmd
}

// printPlan prints the dry run.
func printPlan(cmd *cobra.Command, svc *ops.Service, in reconcile.Input) error {
	plan, err := svc.Reconcile.Plan(cmd.Context(), reconcileActor, in)
	if err != nil {
		return err
	}
	if plan == nil {
		plan = []reconcile.Change{}
	}
	return printed(cmd, plan, func(w io.Writer) error {
		fmt.Fprintln(w, "REGION\tSTEP\tRESULT\tWHAT")
		for _, c := range plan {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", c.Region, c.Step, c.Result, c.What)
		}
		if len(plan) == 0 {
			fmt.Fprintln(w, "(no region)")
		}
		return nil
	})
}

// runReconcile queues the reconcile job, runs it here unless a console took it, and shows
// its progress from the database until it ends.
func runReconcile(ctx context.Context, cmd *cobra.Command, svc *ops.Service, in reconcile.Input) error {
	j, err := svc.Reconcile.Start(ctx, reconcileActor, in)
	if err != nil {
		return err
	}
	ran := make(chan error, 1)
	go func() {
		_, err := svc.Engine.RunNow(ctx, j.ID)
		ran <- err
	}()
	end, err := followStored(ctx, svc.Store, j.ID, cmd.OutOrStdout())
	if rerr := <-ran; rerr != nil && err == nil {
		err = rerr
	}
	if err != nil {
		return err
	}
	if end.Status != store.JobSucceeded {
		return fmt.Errorf("reconcile (job %s) %s: %s", end.ID, end.Status, end.Error)
	}
	return nil
}

// followStored shows a job's progress from the database (the console's own event feed)
// until it ends.
func followStored(ctx context.Context, st *store.Store, id string, out io.Writer) (*store.Job, error) {
	steps, err := st.JobSteps(ctx, id)
	if err != nil {
		return nil, err
	}
	p := &progress{out: out, tty: isTerminal(out)}
	for _, s := range steps {
		p.steps = append(p.steps, apiclient.Step{Idx: s.Idx, Name: s.Name, Title: s.Title, Status: apiclient.StepPending})
	}
	var last int64
	for {
		j, err := st.JobByID(ctx, id)
		if err != nil {
			return nil, err
		}
		es, err := st.JobEvents(ctx, id, last, 1000)
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			last = e.ID
			var ae apiclient.Event
			raw, _ := json.Marshal(e)
			if json.Unmarshal(raw, &ae) == nil {
				p.event(ae)
			}
		}
		if j.Done() && len(es) == 0 {
			p.clear()
			fmt.Fprintf(out, "%s: %s\n", j.Title, j.Status)
			return j, nil
		}
		select {
		case <-ctx.Done():
			p.clear()
			return nil, ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
}
