package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"runr.dev/console/ops/status"
	"runr.dev/console/store"
)

// benchFleetSweep measures the sweep's scale-out (issue #22): o.FleetRegions regions, the
// same share of them behind the listener that never answers, swept by one process and
// then by two at once, each `runr status sweep --fleet` claiming the sweep's shards as
// console processes do. It runs after benchmark 4, on its world (clusters, black hole,
// DNS server), with a database of its own.
func benchFleetSweep(env *Env, rep *Report, o *Options, w *sweepWorld) error {
	if o.FleetRegions <= 0 {
		return nil
	}
	sec := rep.section("4b", "Status sweep by one and by two processes")
	ctx := context.Background()
	dbURL, st, drop, err := env.NewStore("fleet")
	if err != nil {
		return err
	}
	defer drop()
	con, err := env.NewConsole("fleet", dbURL, true, "RUNR_DNS_RESOLVER="+w.dns.Addr)
	if err != nil {
		return err
	}
	if err := st.SetSetting(ctx, "base_domain", sweepBaseDomain); err != nil {
		return fmt.Errorf("set the base domain: %w", err)
	}
	if err := w.seedRegions(ctx, st, o.FleetRegions, int(1/o.DeadFraction)); err != nil {
		return err
	}
	args := []string{"status", "sweep", "--fleet", "--json"}
	id := sec.cmd("C4b", fmt.Sprintf("%s\n# seeded with store.CreateRegion + store.SetRegion, then, with the console's environment, once not measured (so that every region has a last check, as after a console's first sweep), then, after DELETE FROM fleet_tasks each time, once alone and twice at once:\n%s %s %s",
		benchCmd(o, "sweep"), con.EnvFor(), env.Runr, strings.Join(args, " ")))

	// A first sweep (not measured) gives each region a last check, as a console's sweeps
	// have after the first: both measured sweeps start the clusters that failed first.
	fmt.Println("first sweep (not measured)")
	if _, _, _, err := runSweep(env.Runr, con.Env, args); err != nil {
		return err
	}
	forget := func() error {
		_, err := st.DB.ExecContext(ctx, `DELETE FROM fleet_tasks`)
		return err
	}
	if err := forget(); err != nil {
		return fmt.Errorf("forget the first sweep's claims: %w", err)
	}
	fmt.Println("sweep by one process")
	one, oneStarted, _, err := runSweep(env.Runr, con.Env, args)
	if err != nil {
		return err
	}
	oneRec, err := sweptSince(ctx, st, w, oneStarted)
	if err != nil {
		return err
	}
	if err := forget(); err != nil {
		return fmt.Errorf("forget the one-process sweep's claims: %w", err)
	}
	fmt.Println("sweep by two processes at once")
	var two [2]SweepResult
	var errs [2]error
	var wg sync.WaitGroup
	started := time.Now()
	for i := range two {
		wg.Go(func() { two[i], _, _, errs[i] = runSweep(env.Runr, con.Env, args) })
	}
	wg.Wait()
	wall := time.Since(started)
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	twoRec, err := sweptSince(ctx, st, w, started)
	if err != nil {
		return err
	}
	reportFleetSweep(rep, sec, w, one, two, wall, id)
	sec.Details = append(sec.Details, fmt.Sprintf("When the checks were saved, from the start of the process(es): by one process, %s; by two, %s.\n\n", oneRec.timeline(w), twoRec.timeline(w)))
	return nil
}

// sweptSince reads what a sweep that started at started saved of the fleet's regions.
func sweptSince(ctx context.Context, st *store.Store, w *sweepWorld, started time.Time) (sweepRecord, error) {
	rs, err := st.ListRegions(ctx, store.RegionFilter{}, false)
	if err != nil {
		return sweepRecord{}, fmt.Errorf("list the swept regions: %w", err)
	}
	return recordOf(rs, started, w.hole.URL()), nil
}

// reportFleetSweep records the two sweeps against the targets: two processes take at
// most 0.6 of one's time, each under 300 MB, and every region is checked once.
func reportFleetSweep(rep *Report, sec *Section, w *sweepWorld, one SweepResult, two [2]SweepResult, wall time.Duration, id string) {
	d1 := time.Duration(one.Seconds * float64(time.Second))
	d2 := time.Duration(max(two[0].Seconds, two[1].Seconds) * float64(time.Second))
	ratio := d2.Seconds() / d1.Seconds()
	rep.add("4b", fmt.Sprintf("sweep of %d regions (%d never answer) by one process", one.Regions, w.dead), secs(d1), id)
	rep.add("4b", "the same by two processes at once (the slower one)", fmt.Sprintf("%s (%.1f s and %.1f s)", secs(d2), two[0].Seconds, two[1].Seconds), id)
	rep.check("4b", "two processes ÷ one", fmt.Sprintf("%.2f", ratio), "≤ 0.6", ratio <= 0.6, id)
	peak := max(two[0].PeakRSSKiB, two[1].PeakRSSKiB, one.PeakRSSKiB)
	rep.check("4b", "resident memory of each sweeping process (peak, VmHWM)", fmt.Sprintf("%.0f / %.0f MiB (two), %.0f MiB (one)",
		float64(two[0].PeakRSSKiB)/1024, float64(two[1].PeakRSSKiB)/1024, float64(one.PeakRSSKiB)/1024), "< 300 MB", float64(peak)*1024 < 300e6, id)
	checked := two[0].Checked + two[1].Checked
	rep.check("4b", "region checks saved by the two processes (each region once)", fmt.Sprintf("%d + %d = %d of %d", two[0].Checked, two[1].Checked, checked, one.Regions),
		fmt.Sprintf("%d", one.Regions), checked == int64(one.Regions) && one.Checked == int64(one.Regions), id)
	sec.note("Each process is `runr status sweep --fleet` (cli/status.go): `ops.Service.SweepFleet` claims the sweep's %d shards for this interval in `fleet_tasks`, as the console's background loop does, one shard at a time when one of its RUNR_STATUS_CONCURRENCY (256) checkers is free, so processes that sweep together share the shards by how fast each gets through them; the shards and looks whose clusters failed the last check go first (a look at a cluster that accepts connections and never answers holds its checker for the connection's deadline, RUNR_STATUS_CONNECT_TIMEOUT 2 s); the parts of one cluster that a process takes share its first look. Both started together; %s passed from their start to the second one's exit.", status.SweepShards, secs(wall))
	sec.note("%d regions seeded as in benchmark 4: every %dth (%d) on a cluster of its own whose API never answers, the others spread over the same simulated clusters; the same DNS server answers their domains.", w.n, w.every, w.dead)
}
