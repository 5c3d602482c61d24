package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"runr.dev/console/ops"
)

// SweepResult is what `runr status sweep --json` prints.
type SweepResult struct {
	Regions int     `json:"regions"`
	Seconds float64 `json:"seconds"`
	// PeakRSSKiB is this process's peak resident memory (VmHWM of /proc/self/status).
	PeakRSSKiB int64 `json:"peak_rss_kib"`
	// Checked is how many region checks this process saved (with --fleet, its shards' only).
	Checked int64  `json:"checked"`
	Error   string `json:"error,omitempty"`
}

// statusCmd holds `runr status …`: the status checks, run by hand.
func statusCmd() *cobra.Command {
	status := &cobra.Command{Use: "status", Short: "Region status checks"}
	var asJSON, fleet bool
	sweep := &cobra.Command{
		Use:   "sweep",
		Short: "Check every active region once (what the console does every RUNR_STATUS_INTERVAL) and print how long it took",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if path := os.Getenv("RUNR_CPU_PROFILE"); path != "" {
				// The benchmarks' profiles: one file per sweeping process.
				stopProfile, err := startCPUProfile(fmt.Sprintf("%s.sweep-%d", path, os.Getpid()))
				if err != nil {
					return err
				}
				defer stopProfile()
			}
			cfg, st, err := openMigratedStore(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			// Only the count: the sweep reads the regions of each part as it claims it, and a
			// list of every region held through the sweep would count in its memory.
			targets, err := st.SweepTargets(ctx)
			if err != nil {
				return err
			}
			regions := len(targets)
			svc := ops.NewService(st, cfg, newLogger(cfg.LogLevel))
			start := time.Now()
			sweepOnce := svc.Status.Sweep
			if fleet {
				sweepOnce = func(ctx context.Context) error { return svc.Status.SweepFleet(ctx, cfg.StatusInterval) }
			}
			serr := sweepOnce(ctx)
			res := SweepResult{Regions: regions, Seconds: time.Since(start).Seconds(), PeakRSSKiB: peakRSSKiB(), Checked: svc.Status.ChecksDone()}
			if serr != nil {
				res.Error = serr.Error()
			}
			if asJSON {
				if err := json.NewEncoder(cmd.OutOrStdout()).Encode(res); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "Checked %d of %d active region(s) in %.2f s; peak resident memory %.1f MiB\n",
					res.Checked, res.Regions, res.Seconds, float64(res.PeakRSSKiB)/1024)
			}
			return serr
		},
	}
	sweep.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	sweep.Flags().BoolVar(&fleet, "fleet", false, "claim the sweep's shards for this RUNR_STATUS_INTERVAL as console processes do: processes sweeping at once share them")
	status.AddCommand(sweep)
	return status
}

// peakRSSKiB reads VmHWM (peak resident set size, in KiB) from /proc/self/status; 0 when
// it cannot be read.
func peakRSSKiB() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}
