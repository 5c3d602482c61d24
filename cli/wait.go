package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"runr.dev/console/apiclient"
)

// addWaitFlag gives a command that queues a job --wait.
func addWaitFlag(cmd *cobra.Command, wait *bool) {
	cmd.Flags().BoolVar(wait, "wait", false, "follow the job until it ends (exit 1 when it fails)")
}

// queued reports a queued job: with --wait it follows the job to its end, else it prints
// how to follow it.
func queued(cmd *cobra.Command, c *apiclient.Client, what string, jobID string, wait bool) error {
	return queuedJobs(cmd, c, what, []string{jobID}, wait)
}

// queuedJobs reports several queued jobs (a region's creation queues up to three) and,
// with --wait, follows them one after the other; the first that fails ends the command.
func queuedJobs(cmd *cobra.Command, c *apiclient.Client, what string, ids []string, wait bool) error {
	format, err := outputFormat(cmd)
	if err != nil {
		return err
	}
	if !wait {
		if format != outTable {
			return printed(cmd, map[string]any{"job_ids": ids}, nil)
		}
		for _, id := range ids {
			fmt.Fprintf(cmd.OutOrStdout(), "%s: job %s queued; follow it with `runr jobs logs %s --follow`\n", what, id, id)
		}
		return nil
	}
	// With -o json|yaml the progress goes to stderr and the jobs as they ended to stdout.
	progressOut := cmd.OutOrStdout()
	if format != outTable {
		progressOut = cmd.ErrOrStderr()
	}
	var ended []*apiclient.Job
	var failed error
	for _, id := range ids {
		j, err := follow(cmd.Context(), c, id, progressOut)
		if err != nil {
			return err
		}
		ended = append(ended, j)
		if j.Status != apiclient.JobSucceeded {
			failed = fmt.Errorf("job %s (%s) %s: %s", j.ID, j.Title, j.Status, j.Error)
			break
		}
	}
	if format != outTable {
		if err := printed(cmd, rawList(ended, func(j *apiclient.Job) json.RawMessage { return j.Raw }), nil); err != nil {
			return err
		}
	}
	return failed
}

// follow shows a job's progress until it ends and returns the job as it ended.
func follow(ctx context.Context, c *apiclient.Client, id string, out io.Writer) (*apiclient.Job, error) {
	j, err := c.Job(ctx, id)
	if err != nil {
		return nil, err
	}
	// The feed is read from its first event: every step starts pending.
	for i := range j.Steps {
		j.Steps[i].Status = apiclient.StepPending
	}
	p := &progress{out: out, tty: isTerminal(out), steps: j.Steps}
	fmt.Fprintf(out, "%s (job %s)\n", j.Title, j.ID)
	end, err := c.Follow(ctx, id, p.event)
	p.clear()
	if err != nil {
		return nil, err
	}
	switch end.Status {
	case apiclient.JobSucceeded:
		fmt.Fprintf(out, "%s: succeeded\n", end.Title)
	default:
		// The error itself is the command's error, printed once by the caller.
		fmt.Fprintf(out, "%s: %s\n", end.Title, end.Status)
	}
	return end, nil
}

// progress draws a job's events: on a terminal, finished steps and log lines scroll above
// a status line redrawn in place; otherwise one plain line per event.
type progress struct {
	out    io.Writer
	tty    bool
	steps  []apiclient.Step
	status string
	// lastLog is the last log line, which a failed step repeats as its message.
	lastLog string
}

// event shows one event of the job's feed.
func (p *progress) event(e apiclient.Event) {
	switch e.Kind {
	case apiclient.EventStep:
		s, ok := e.StepOf()
		if !ok {
			return
		}
		if s.Idx < 0 || s.Idx >= len(p.steps) {
			return
		}
		prev := p.steps[s.Idx].Status
		p.steps[s.Idx] = s
		if s.Status == apiclient.StepRunning && prev == apiclient.StepRunning {
			// A wait of the running step: the status line says what it waits for.
			p.setStatus(s.Idx, s.Wait)
			return
		}
		p.step(s)
	case apiclient.EventLog:
		p.lastLog = e.Message
		if e.Level == "warn" || e.Level == "error" {
			p.line(fmt.Sprintf("    %s: %s", e.Level, e.Message))
		} else {
			p.line("    " + e.Message)
		}
	case apiclient.EventWait:
		if e.Message != "" && !strings.Contains(e.Message, " after ") {
			p.setStatus(e.StepIdx, e.Message)
			if !p.tty {
				p.line("    " + e.Message)
			}
		}
	}
}

// step shows a step's change.
func (p *progress) step(s apiclient.Step) {
	label := fmt.Sprintf("[%d/%d] %s", s.Idx+1, len(p.steps), s.Title)
	mark := map[string]string{apiclient.StepDone: "✓", apiclient.StepSkipped: "–", apiclient.StepFailed: "✗"}[s.Status]
	switch s.Status {
	case apiclient.StepRunning:
		p.setStatus(s.Idx, "")
		if !p.tty {
			p.line(label + ": running")
		}
	case apiclient.StepDone, apiclient.StepSkipped, apiclient.StepFailed:
		msg := label + ": " + s.Status
		if p.tty {
			msg = mark + " " + label
		}
		if s.Message != "" && s.Message != p.lastLog {
			msg += " — " + s.Message
		}
		p.clear()
		p.status = ""
		fmt.Fprintln(p.out, msg)
	}
}

// setStatus redraws the status line: the running step and what it waits for.
func (p *progress) setStatus(idx int, wait string) {
	if idx < 0 || idx >= len(p.steps) {
		return
	}
	p.status = fmt.Sprintf("… [%d/%d] %s", idx+1, len(p.steps), p.steps[idx].Title)
	if wait != "" {
		p.status += " — " + wait
	}
	p.draw()
}

// line prints a line above the status line.
func (p *progress) line(s string) {
	p.clear()
	fmt.Fprintln(p.out, s)
	p.draw()
}

// draw writes the status line (a terminal only).
func (p *progress) draw() {
	if p.tty && p.status != "" {
		fmt.Fprint(p.out, p.status)
	}
}

// clear erases the status line (a terminal only).
func (p *progress) clear() {
	if p.tty && p.status != "" {
		fmt.Fprint(p.out, "\r\033[K")
	}
}
