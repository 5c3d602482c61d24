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

// jobsCmd holds `runr jobs …`: the console's jobs, through its API.
func jobsCmd() *cobra.Command {
	jobs := &cobra.Command{Use: "jobs", Short: "Jobs: show, follow, retry and cancel them (through the console's API)"}
	addOutputFlag(jobs)
	jobs.AddCommand(jobsListCmd(), jobsShowCmd(), jobsLogsCmd(), jobsRetryCmd(), jobsCancelCmd())
	return jobs
}

// withClient runs a command body with the API client.
func withClient(run func(cmd *cobra.Command, c *apiclient.Client, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c, err := apiClient(cmd)
		if err != nil {
			return err
		}
		return run(cmd, c, args)
	}
}

// jobsListCmd is `runr jobs list [--region REGION]`.
func jobsListCmd() *cobra.Command {
	var region string
	var page int
	cmd := &cobra.Command{
		Use: "list", Short: "The newest jobs (50 a page), of one region with --region", Args: cobra.NoArgs,
		RunE: withClient(func(cmd *cobra.Command, c *apiclient.Client, _ []string) error {
			regionID := ""
			if region != "" {
				r, err := c.Region(cmd.Context(), region)
				if err != nil {
					return err
				}
				regionID = r.ID
			}
			js, total, err := c.Jobs(cmd.Context(), regionID, page)
			if err != nil {
				return err
			}
			return printed(cmd, rawList(js, func(j apiclient.Job) json.RawMessage { return j.Raw }), func(w io.Writer) error {
				fmt.Fprintln(w, "ID\tKIND\tSTATUS\tCREATED\tTITLE")
				for _, j := range js {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", j.ID, j.Kind, j.Status, j.CreatedAt.Local().Format("2006-01-02 15:04:05"), j.Title)
				}
				fmt.Fprintf(w, "(%d of %d, page %d)\n", len(js), total, page)
				return nil
			})
		}),
	}
	cmd.Flags().StringVar(&region, "region", "", "only this region's jobs")
	cmd.Flags().IntVar(&page, "page", 1, "page of 50, newest first")
	_ = cmd.RegisterFlagCompletionFunc("region", completeRegions)
	return cmd
}

// jobsShowCmd is `runr jobs show ID`.
func jobsShowCmd() *cobra.Command {
	return &cobra.Command{
		Use: "show JOB", Short: "A job with its steps", Args: cobra.ExactArgs(1),
		RunE: withClient(func(cmd *cobra.Command, c *apiclient.Client, args []string) error {
			j, err := c.Job(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printed(cmd, j.Raw, func(w io.Writer) error {
				fmt.Fprintf(w, "Job:\t%s\nTitle:\t%s\nKind:\t%s\nStatus:\t%s (%d%%)\n", j.ID, j.Title, j.Kind, j.Status, j.Progress)
				if j.Error != "" {
					fmt.Fprintf(w, "Error:\t%s\n", j.Error)
				}
				if j.Wait != "" {
					fmt.Fprintf(w, "Waiting:\t%s\n", j.Wait)
				}
				fmt.Fprintf(w, "Attempts:\t%d\nCreated:\t%s by %s\n\nSTEP\tSTATUS\tMESSAGE\n", j.Attempts, j.CreatedAt.Local().Format(time.RFC1123), dash(j.CreatedBy))
				for _, s := range j.Steps {
					fmt.Fprintf(w, "%s\t%s\t%s\n", s.Title, s.Status, s.Message)
				}
				return nil
			})
		}),
	}
}

// jobsLogsCmd is `runr jobs logs ID [--follow]`: the job's events as lines.
func jobsLogsCmd() *cobra.Command {
	var followFlag bool
	cmd := &cobra.Command{
		Use: "logs JOB", Short: "A job's log (step changes, log lines, waits); --follow until it ends (exit 1 when it fails)", Args: cobra.ExactArgs(1),
		RunE: withClient(func(cmd *cobra.Command, c *apiclient.Client, args []string) error {
			if followFlag {
				return queued(cmd, c, "", args[0], true)
			}
			es, _, err := c.Events(cmd.Context(), args[0], 0, 0)
			if err != nil {
				return err
			}
			return printed(cmd, es, func(w io.Writer) error {
				for _, e := range es {
					fmt.Fprintf(w, "%s\t%s\t%s\n", e.CreatedAt.Local().Format("15:04:05"), eventLabel(e), e.Message)
				}
				return nil
			})
		}),
	}
	cmd.Flags().BoolVarP(&followFlag, "follow", "f", false, "follow the job until it ends")
	return cmd
}

// eventLabel names an event's kind and step for a log line.
func eventLabel(e apiclient.Event) string {
	if s, ok := e.StepOf(); ok {
		return fmt.Sprintf("step %d %s", s.Idx+1, s.Status)
	}
	if e.Level != "" && e.Level != "info" {
		return e.Kind + " " + e.Level
	}
	return e.Kind
}

// jobsRetryCmd is `runr jobs retry ID`: a failed or cancelled job continues where it stopped.
func jobsRetryCmd() *cobra.Command {
	var wait bool
	cmd := &cobra.Command{
		Use: "retry JOB", Short: "Queue a failed or cancelled job again; it continues where it stopped", Args: cobra.ExactArgs(1),
		RunE: withClient(func(cmd *cobra.Command, c *apiclient.Client, args []string) error {
			ans, err := c.Post(cmd.Context(), http.MethodPost, "/api/jobs/"+apiclient.PathEscape(args[0])+"/retry", nil)
			if err != nil {
				return err
			}
			return queued(cmd, c, "Retry", ans.JobID, wait)
		}),
	}
	addWaitFlag(cmd, &wait)
	return cmd
}

// jobsCancelCmd is `runr jobs cancel ID`: the runner stops the job at its next step.
func jobsCancelCmd() *cobra.Command {
	var wait bool
	cmd := &cobra.Command{
		Use: "cancel JOB", Short: "Ask the console to stop a job (a queued job is cancelled at once)", Args: cobra.ExactArgs(1),
		RunE: withClient(func(cmd *cobra.Command, c *apiclient.Client, args []string) error {
			if _, err := c.Post(cmd.Context(), http.MethodPost, "/api/jobs/"+apiclient.PathEscape(args[0])+"/cancel", nil); err != nil {
				return err
			}
			if !wait {
				fmt.Fprintf(cmd.OutOrStdout(), "Cancel of job %s requested\n", args[0])
				return nil
			}
			j, err := follow(cmd.Context(), c, args[0], cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			return printed(cmd, j.Raw, func(w io.Writer) error {
				fmt.Fprintf(w, "Job %s is %s\n", j.ID, j.Status)
				return nil
			})
		}),
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the job stopped")
	return cmd
}
