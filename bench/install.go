package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"runr.dev/console/store"
	"runr.dev/console/testcluster"
)

// jobView is GET /api/jobs/:id's answer.
type jobView struct {
	store.Job
	Steps []store.JobStep `json:"steps"`
}

// waitJob polls GET /api/jobs/:id until the job ends and returns it with the time the
// poll saw it end.
func waitJob(c *Console, id string, every, timeout time.Duration) (*jobView, time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		var ans struct{ Data jobView }
		st, err := c.API("GET", "/api/jobs/"+id, nil, &ans)
		if err != nil {
			return nil, time.Time{}, err
		}
		if st != 200 {
			return nil, time.Time{}, fmt.Errorf("GET /api/jobs/%s: %d", id, st)
		}
		if ans.Data.Done() {
			return &ans.Data, time.Now(), nil
		}
		if time.Now().After(deadline) {
			return &ans.Data, time.Now(), fmt.Errorf("job %s (%s) did not finish within %s; status %s", id, ans.Data.Kind, timeout, ans.Data.Status)
		}
		time.Sleep(every)
	}
}

// jobEvents reads every event of a job (GET /api/jobs/:id/events).
func jobEvents(c *Console, id string) ([]store.JobEvent, error) {
	var all []store.JobEvent
	after := int64(0)
	for {
		var ans struct{ Data []store.JobEvent }
		if _, err := c.API("GET", fmt.Sprintf("/api/jobs/%s/events?after=%d", id, after), nil, &ans); err != nil {
			return nil, err
		}
		if len(ans.Data) == 0 {
			return all, nil
		}
		all = append(all, ans.Data...)
		after = ans.Data[len(ans.Data)-1].ID
	}
}

// namedWait is one named wait of a job: its start and end events.
type namedWait struct {
	Job     string
	Step    int
	What    string
	Start   time.Time
	End     time.Time
	Elapsed time.Duration // elapsed_ms of the end event, as the console measured it
}

// waitsOf pairs the start and end events of a job's named waits.
func waitsOf(job string, evs []store.JobEvent) ([]namedWait, int) {
	var out []namedWait
	open := map[string]int{}
	unpaired := 0
	for _, e := range evs {
		if e.Kind != "wait" {
			continue
		}
		var d struct {
			Phase     string `json:"phase"`
			What      string `json:"what"`
			ElapsedMS int64  `json:"elapsed_ms"`
		}
		if json.Unmarshal(e.Data, &d) != nil {
			continue
		}
		k := fmt.Sprintf("%d|%s", e.StepIdx, d.What)
		switch d.Phase {
		case "start":
			out = append(out, namedWait{Job: job, Step: e.StepIdx, What: d.What, Start: e.CreatedAt})
			open[k] = len(out) - 1
		case "end":
			if i, ok := open[k]; ok {
				out[i].End = e.CreatedAt
				out[i].Elapsed = time.Duration(d.ElapsedMS) * time.Millisecond
				delete(open, k)
			} else {
				unpaired++
			}
		}
	}
	return out, unpaired + len(open)
}

func sumWaits(ws []namedWait) time.Duration {
	var t time.Duration
	for _, w := range ws {
		t += w.Elapsed
	}
	return t
}

func stepDur(s store.JobStep) time.Duration {
	if s.StartedAt == nil || s.FinishedAt == nil {
		return 0
	}
	return s.FinishedAt.Sub(*s.StartedAt)
}

// installRun is one run of the wizard.
type installRun struct {
	cluster string
	// helm is the same releases as install-serving's, installed one after the other
	// with the Helm SDK and --wait on a fresh cluster (helmBaseline); helmReleases names them.
	helm         time.Duration
	helmReleases []string
	wall         time.Duration
	waited       time.Duration
	waits        []namedWait
	unpaired     int
	phases       []*phase
	t0           time.Time
	cmd          string
}

func (r *installRun) overhead() time.Duration { return r.wall - r.waited }
func (r *installRun) share() float64          { return float64(r.overhead()) / float64(r.wall) }

// phase is one job of the wizard.
type phase struct {
	name      string
	post      string
	postStart time.Time
	postTook  time.Duration
	job       *jobView
	seen      time.Time
	// firstEvent is from the POST to the first event on the job's WebSocket (0: not measured).
	firstEvent time.Duration
	firstErr   error
}

// runWizard runs the wizard once through the API on a fresh console and cluster.
func runWizard(env *Env, o *Options, cl *testcluster.Cluster, n int) (*installRun, error) {
	con, stop, err := env.StartConsole(fmt.Sprintf("install-%d", n), "install")
	if err != nil {
		return nil, err
	}
	defer stop()
	w := &wizard{con: con, poll: o.Poll, run: &installRun{cluster: cl.Name}}
	region, err := w.install(cl)
	if err != nil {
		return nil, err
	}
	if err := w.collectWaits(); err != nil {
		return nil, err
	}
	w.run.cmd = fmt.Sprintf("# run %d: console (PID %d), simulated cluster %s (API %s):\n%s %s serve\nPOST http://%s/api/registry-setup/start   {\"name\":\"eu-west-1\",\"registry_mode\":\"internal\",\"storage_type\":\"pvc\",\"pvc_config\":{\"storageClass\":\"standard\",\"size\":\"5Gi\"},\"redis_mode\":\"none\",\"data_location\":\"EU\",\"nodes\":[],\"kubeconfig\":…}\nPOST http://%s/api/knative-regions/%s/install-operator\nPOST http://%s/api/knative-regions/%s/install-serving   {\"version\":\"1.20\"}",
		n, con.Pid(), cl.Name, cl.Server, con.EnvFor(), env.Runr, con.Addr, con.Addr, region, con.Addr, region)
	return w.run, nil
}

// wizard drives the install wizard through one console's API and records its jobs.
type wizard struct {
	con  *Console
	poll time.Duration
	run  *installRun
}

// install runs the wizard's three jobs on a cluster — registry setup, Knative Operator,
// Serving — each after the previous one ended, and checks that Serving is ready; it
// returns the region.
func (w *wizard) install(cl *testcluster.Cluster) (string, error) {
	setupBody := map[string]any{"name": "eu-west-1", "kubeconfig": string(cl.Kubeconfig()), "nodes": []string{},
		"registry_mode": "internal", "storage_type": "pvc", "pvc_config": map[string]any{"storageClass": "standard", "size": "5Gi"},
		"redis_mode": "none", "data_location": "EU"}
	w.run.t0 = time.Now()
	setup, err := w.step("registry setup (steps 1-2)", "/api/registry-setup/start", setupBody)
	if err != nil {
		return "", err
	}
	region, err := w.regionOf(setup)
	if err != nil {
		return "", err
	}
	if _, err := w.step("install-operator", "/api/knative-regions/"+region+"/install-operator", nil); err != nil {
		return "", err
	}
	if _, err := w.step("install-serving", "/api/knative-regions/"+region+"/install-serving", map[string]any{"version": "1.20"}); err != nil {
		return "", err
	}
	w.run.wall = w.run.phases[len(w.run.phases)-1].seen.Sub(w.run.t0)
	return region, w.checkServingReady(region)
}

// step POSTs one step of the wizard, waits for its job to succeed and records it as a
// phase of the run.
func (w *wizard) step(name, path string, body any) (*phase, error) {
	p := &phase{name: name, post: path}
	var ans struct {
		JobID  string `json:"job_id"`
		Error  string
		Fields map[string]string
	}
	p.postStart = time.Now()
	st, err := w.con.API("POST", path, body, &ans)
	p.postTook = time.Since(p.postStart)
	if err != nil {
		return nil, err
	}
	if st != 202 || ans.JobID == "" {
		return nil, fmt.Errorf("POST %s: %d %s %v", path, st, ans.Error, ans.Fields)
	}
	first := make(chan struct{})
	go func() {
		defer close(first)
		p.firstEvent, p.firstErr = firstEventAfter(w.con, ans.JobID, p.postStart)
	}()
	if p.job, p.seen, err = waitJob(w.con, ans.JobID, w.poll, 10*time.Minute); err != nil {
		return nil, err
	}
	<-first
	if p.job.Status != store.JobSucceeded {
		return nil, fmt.Errorf("%s: job %s %s: %s", name, p.job.ID, p.job.Status, p.job.Error)
	}
	w.run.phases = append(w.run.phases, p)
	fmt.Printf("  %s: %s in %s\n", name, p.job.Status, p.seen.Sub(p.postStart).Round(time.Millisecond))
	return p, nil
}

// firstEventAfter follows a job's progress as the browser does once Save & Next has
// answered (its WebSocket, here the JSON form) and returns the time from start to the
// first event it receives, replayed or live.
func firstEventAfter(c *Console, jobID string, start time.Time) (time.Duration, error) {
	conn, _, err := wsDialer.Dial("ws://"+c.Addr+"/ws/jobs/"+jobID+"?format=json", http.Header{"Authorization": {"Bearer " + c.Token}})
	if err != nil {
		return 0, fmt.Errorf("follow job %s: %w", jobID, err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
	if _, _, err := conn.ReadMessage(); err != nil {
		return 0, fmt.Errorf("first event of job %s: %w", jobID, err)
	}
	return time.Since(start), nil
}

// regionOf is the region the setup job created: the job's own, or else the one the
// console lists as eu-west-1.
func (w *wizard) regionOf(setup *phase) (string, error) {
	if region := setup.job.Region(); region != "" {
		return region, nil
	}
	var list struct{ Data []struct{ ID, Name string } }
	if _, err := w.con.API("GET", "/api/knative-regions?q=eu-west-1", nil, &list); err != nil || len(list.Data) != 1 {
		return "", fmt.Errorf("the setup created no region eu-west-1: %v", err)
	}
	return list.Data[0].ID, nil
}

// checkServingReady checks that the region's Serving is ready after the wizard.
func (w *wizard) checkServingReady(region string) error {
	var reg struct{ Data map[string]any }
	if _, err := w.con.API("GET", "/api/knative-regions/"+region, nil, &reg); err != nil {
		return fmt.Errorf("read region %s: %w", region, err)
	}
	if reg.Data["serving_status"] != "ready" {
		return fmt.Errorf("serving_status %v after the wizard", reg.Data["serving_status"])
	}
	return nil
}

// collectWaits reads the named waits of every job of the run from their events.
func (w *wizard) collectWaits() error {
	for _, p := range w.run.phases {
		evs, err := jobEvents(w.con, p.job.ID)
		if err != nil {
			return fmt.Errorf("read the events of %s: %w", p.name, err)
		}
		ws, u := waitsOf(p.name, evs)
		w.run.waits = append(w.run.waits, ws...)
		w.run.unpaired += u
	}
	w.run.waited = sumWaits(w.run.waits)
	return nil
}

// benchInstall runs the wizard through the API on simulated clusters and splits its
// time into waits on the cluster and the console's own work (issue #11, item 3).
func benchInstall(env *Env, rep *Report, o *Options) error {
	sec := rep.section("3", "Install overhead")
	runs, err := runWizards(env, o)
	if err != nil {
		return err
	}
	med := medianRun(runs)
	var cmds []string
	for _, r := range runs {
		cmds = append(cmds, r.cmd)
	}
	id := sec.cmd("C3", fmt.Sprintf("%s\n# %d runs, each with a fresh database, console and simulated cluster (stand-in charts at %s); each POST after the previous job ended, each job polled with GET /api/jobs/<id> every %s, waits read from GET /api/jobs/<id>/events\n%s",
		benchCmd(o, "install"), len(runs), env.Repo.URL, o.Poll, strings.Join(cmds, "\n")))
	what := fmt.Sprintf("(median of %d runs)", len(runs))
	if len(runs) == 1 {
		what = ""
	}
	rep.add("3", strings.TrimSpace("wizard wall time, step 1 to Serving ready "+what), secs(med.wall), id)
	rep.add("3", fmt.Sprintf("waiting on the cluster (%d named waits)", len(med.waits)), fmt.Sprintf("%s (%.0f%%)", secs(med.waited), 100*float64(med.waited)/float64(med.wall)), id)
	rep.check("3", "console overhead (wall − waits)", fmt.Sprintf("%s (%.1f%%)", secs(med.overhead()), 100*med.share()), "< 10% of total", med.share() < 0.10, id)
	serving, base, ratio := servingVsHelm(runs)
	rep.add("3", "install-serving alone: wall time, from its POST to the poll that sees it end (median)", secs(serving), id)
	rep.add("3", "the same releases, one after the other with the Helm SDK and --wait (median)", secs(base), id)
	rep.check("3", "install-serving ÷ the same charts with Helm, one after the other (median of the runs' ratios)", fmt.Sprintf("%.2f", ratio), "≤ 0.6", ratio <= 0.6, id)
	if first, err := medianFirstEvent(runs); err != nil {
		rep.check("3", "from Save & Next (the setup POST) to the first progress event", err.Error(), "< 200 ms", false, id)
	} else {
		rep.check("3", fmt.Sprintf("from Save & Next (the setup POST) to the first progress event on the job's WebSocket (median of %d)", len(runs)), ms(first), "< 200 ms", first < 200*time.Millisecond, id)
	}

	sec.Details = append(sec.Details, runsTable(runs, med)+wallBreakdown(med, o.Poll)+stepsOutsideWaits(med)+waitTable(med.waits, med.t0))
	sec.note("Wall time runs from just before the first POST to the poll that sees the install-serving job succeeded. The waiting part is the sum of `elapsed_ms` of the \"end\" events of every named wait (`JobContext.Wait`, events of kind \"wait\") of the three jobs; a wait whose condition already holds at its first check emits no event and counts as the console's time. Overhead is wall minus waits, as the issue defines it: it includes the client's polling (every %s) and each POST (the setup POST checks the cluster before it answers), the runners' pick-up, and everything a step does outside a named wait — which includes the simulated API server's work and Helm's (rendering, applying, storing the release, and Helm's own wait for the CRDs a chart ships to be established).", o.Poll)
	sec.note("The simulated cluster makes workloads ready almost at once (kwok), so the named waits are short: most end at the first re-check, 250 ms after their start (the poll interval of `JobContext.Wait`). On a real cluster the waits (image pulls, scheduling, load balancers) are longer and the overhead's share smaller; the console's own seconds are what this figure isolates.")
	sec.note("The Helm baseline: after each run, the releases install-serving made (%s) are read from the cluster as Helm stored them (chart and values) and installed in the order the console installed them, on a fresh simulated cluster started the same way (not the same cluster: there the releases exist), one after the other with the Helm SDK (`helm.Apply` with `Wait`, i.e. `helm install --wait`), timed from the first install's start to the last one's end. install-serving's own time also holds what is not a Helm release: the project namespace's quota, the KnativeServing and its wait, the function domain, the external address and the runr-agent.", strings.Join(med.helmReleases, ", "))
	sec.note("Registry on a PVC (storage class standard, 5Gi), no managed Redis (redis_mode none: the Redis install is a job of its own that runs beside the wizard, not a step of it), Knative 1.20. %d runs, each on a fresh cluster, database and console; the run with the median overhead share is reported. Unpaired wait events in the reported run: %d.", len(runs), med.unpaired)
	return nil
}

// servingVsHelm is the median, over the runs, of install-serving's wall time, of the Helm
// baseline's and of their ratio.
func servingVsHelm(runs []*installRun) (time.Duration, time.Duration, float64) {
	var serving, base []time.Duration
	var ratios []float64
	for _, r := range runs {
		p := r.phases[len(r.phases)-1] // install-serving
		took := p.seen.Sub(p.postStart)
		serving, base = append(serving, took), append(base, r.helm)
		ratios = append(ratios, float64(took)/float64(r.helm))
	}
	sort.Slice(serving, func(i, j int) bool { return serving[i] < serving[j] })
	sort.Slice(base, func(i, j int) bool { return base[i] < base[j] })
	sort.Float64s(ratios)
	return serving[len(serving)/2], base[len(base)/2], ratios[len(ratios)/2]
}

// medianFirstEvent is the median, over the runs, of the time from the setup POST to the
// first event on its job's WebSocket.
func medianFirstEvent(runs []*installRun) (time.Duration, error) {
	var ds []time.Duration
	for _, r := range runs {
		p := r.phases[0]
		if p.firstErr != nil {
			return 0, p.firstErr
		}
		ds = append(ds, p.firstEvent)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2], nil
}

// runWizards runs the wizard -install-runs times, each on a fresh simulated cluster.
func runWizards(env *Env, o *Options) ([]*installRun, error) {
	var runs []*installRun
	for n := 1; n <= o.InstallRuns; n++ {
		fmt.Printf("run %d of %d: starting a simulated cluster\n", n, o.InstallRuns)
		cs, err := startClusters(1)
		if err != nil {
			return nil, err
		}
		r, err := runWizard(env, o, cs[0], n)
		if err == nil {
			r.helm, r.helmReleases, err = helmBaseline(cs[0], env.Repo.URL)
		}
		cs[0].Stop()
		if err != nil {
			return nil, fmt.Errorf("run %d: %w", n, err)
		}
		fmt.Printf("  wall %s, waits %s, overhead %.1f%%\n", secs(r.wall), secs(r.waited), 100*r.share())
		runs = append(runs, r)
	}
	return runs, nil
}

// medianRun is the run with the median overhead share, the one that is reported.
func medianRun(runs []*installRun) *installRun {
	sorted := append([]*installRun(nil), runs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].share() < sorted[j].share() })
	return sorted[len(sorted)/2]
}

// runsTable is the table of every run's wall time, waits and overhead.
func runsTable(runs []*installRun, med *installRun) string {
	var d strings.Builder
	d.WriteString("| Run | Cluster | Wall time | Named waits | Overhead | Overhead share |\n| --- | --- | --- | --- | --- | --- |\n")
	for i, r := range runs {
		mark := ""
		if r == med {
			mark = " (reported)"
		}
		fmt.Fprintf(&d, "| %d%s | %s | %s | %s (%d) | %s | %.1f%% |\n", i+1, mark, r.cluster, secs(r.wall), secs(r.waited), len(r.waits), secs(r.overhead()), 100*r.share())
	}
	return d.String()
}

// wallBreakdown is the table of where a run's wall time went: for each job, the client's
// part before it (poll, POST), its time in the queue and its run, split into named waits
// and the rest.
func wallBreakdown(r *installRun, poll time.Duration) string {
	var d strings.Builder
	d.WriteString("\nWhere the reported run's wall time went (server times from the jobs and steps; client times from the bench):\n\n")
	d.WriteString("| Part | Time | Of which named waits | Not waiting |\n| --- | --- | --- | --- |\n")
	prev := r.t0
	for _, p := range r.phases {
		j := p.job
		gap := j.CreatedAt.Sub(prev)
		fmt.Fprintf(&d, "| before %s: the client sees the previous job's end (poll every %s), then POST %s (answered in %s) | %s | — | %s |\n", p.name, poll, p.post, ms(p.postTook), ms(gap), ms(gap))
		if j.StartedAt != nil {
			q := j.StartedAt.Sub(j.CreatedAt)
			fmt.Fprintf(&d, "| %s: queued until a runner claims it | %s | — | %s |\n", p.name, ms(q), ms(q))
		}
		if j.StartedAt != nil && j.FinishedAt != nil {
			run := j.FinishedAt.Sub(*j.StartedAt)
			jw, _ := waitedIn(r.waits, p.name, -1)
			fmt.Fprintf(&d, "| %s: running (%d steps) | %s | %s | %s |\n", p.name, len(j.Steps), secs(run), secs(jw), secs(run-jw))
			prev = *j.FinishedAt
		}
	}
	tail := r.phases[len(r.phases)-1].seen.Sub(prev)
	fmt.Fprintf(&d, "| after the last job: the client sees its end | %s | — | %s |\n\n", ms(tail), ms(tail))
	return d.String()
}

// waitedIn sums and counts the named waits of one job (of one of its steps when step ≥ 0).
func waitedIn(ws []namedWait, job string, step int) (time.Duration, int) {
	var t time.Duration
	n := 0
	for _, w := range ws {
		if w.Job == job && (step < 0 || w.Step == step) {
			t += w.Elapsed
			n++
		}
	}
	return t, n
}

// stepRow is one step of a run with its named waits.
type stepRow struct {
	job, name, title string
	took, waited     time.Duration
	waits            int
}

// stepsOutsideWaits is the table of the 10 steps of a run that spent the most time
// outside named waits.
func stepsOutsideWaits(r *installRun) string {
	var rows []stepRow
	for _, p := range r.phases {
		for _, s := range p.job.Steps {
			row := stepRow{job: p.name, name: s.Name, title: s.Title, took: stepDur(s)}
			row.waited, row.waits = waitedIn(r.waits, p.name, s.Idx)
			rows = append(rows, row)
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].took-rows[i].waited > rows[j].took-rows[j].waited })
	var d strings.Builder
	d.WriteString("Steps by time outside named waits (the console's own work, including the API calls it makes and Helm's install actions):\n\n| Job | Step | Step time | Named waits | Not waiting |\n| --- | --- | --- | --- | --- |\n")
	for _, row := range rows[:min(10, len(rows))] {
		fmt.Fprintf(&d, "| %s | %s (%s) | %s | %s (%d) | %s |\n", row.job, row.name, row.title, secs(row.took), secs(row.waited), row.waits, secs(row.took-row.waited))
	}
	d.WriteString("\n")
	return d.String()
}

// waitTable lists every named wait with its start and end (offsets from t0).
func waitTable(ws []namedWait, t0 time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<details><summary>Every named wait: start and end (%d waits, offsets from the first POST)</summary>\n\n", len(ws))
	b.WriteString("| # | Job | Step | Waiting for | Start | End | Elapsed |\n| --- | --- | --- | --- | --- | --- | --- |\n")
	for i, w := range ws {
		end := "—"
		if !w.End.IsZero() {
			end = fmt.Sprintf("+%.3f s", w.End.Sub(t0).Seconds())
		}
		fmt.Fprintf(&b, "| %d | %s | %d | %s | +%.3f s | %s | %s |\n", i+1, w.Job, w.Step, strings.ReplaceAll(w.What, "|", "\\|"), w.Start.Sub(t0).Seconds(), end, ms(w.Elapsed))
	}
	b.WriteString("\n</details>\n\n")
	return b.String()
}

// createRegion creates a region at once (POST /api/knative-regions) and waits for its
// preparation jobs.
func createRegion(c *Console, name string, kc []byte, o *Options) (string, error) {
	var ans struct {
		Data   struct{ ID string }
		Jobs   map[string]string
		Error  string
		Fields map[string]string
	}
	st, err := c.API("POST", "/api/knative-regions", map[string]any{"name": name, "kubeconfig": string(kc), "redis_mode": "none"}, &ans)
	if err != nil {
		return "", err
	}
	if st != 201 {
		return "", fmt.Errorf("create region %s: %d %s %v", name, st, ans.Error, ans.Fields)
	}
	for kind, id := range ans.Jobs {
		j, _, err := waitJob(c, id, o.Poll, 5*time.Minute)
		if err != nil {
			return "", err
		}
		if j.Status != store.JobSucceeded {
			return "", fmt.Errorf("region %s: job %s %s: %s", name, kind, j.Status, j.Error)
		}
	}
	return ans.Data.ID, nil
}

// benchConcurrent installs Knative into 10 regions on 2 clusters at once and compares
// the total with one install alone (issue #11, item 5).
func benchConcurrent(env *Env, rep *Report, o *Options, solos []*testcluster.Cluster, shared []*testcluster.Cluster) error {
	sec := rep.section("5", "Concurrent installs")
	con, stop, err := env.StartConsole("concurrent", "concurrent")
	if err != nil {
		return err
	}
	defer stop()
	alone, err := installAlone(con, o, solos)
	if err != nil {
		return err
	}
	fmt.Printf("%d installs at once into %d clusters\n", o.Installs, len(shared))
	insts, err := createConcurrentRegions(con, o, shared)
	if err != nil {
		return err
	}
	t0 := time.Now()
	installAtOnce(con, o.Poll, insts)
	out := outcomeOf(insts, t0)
	table, conflicts, err := jobsTable(con, slices.Concat(alone, insts))
	if err != nil {
		return err
	}
	out.helmConflicts, out.logConflicts = conflicts, con.LogGrep("another operation")

	id := sec.cmd("C5", fmt.Sprintf("%s\n# console (PID %d, RUNR_WORKERS default 8):\n%s %s serve\n# regions created with POST http://%s/api/knative-regions {\"name\":…,\"kubeconfig\":…,\"redis_mode\":\"none\"} (preparation jobs awaited)\n# alone, one after the other, each region on its own fresh cluster (%s):\nPOST http://%s/api/knative-regions/<solo-N>/install-knative\n# at once, from %d goroutines: regions conc-1…conc-%d, odd ones on cluster %s, even ones on cluster %s:\nPOST http://%s/api/knative-regions/<conc-N>/install-knative\n# each job awaited with GET /api/jobs/<id> every %s",
		benchCmd(o, "concurrent"), con.Pid(), con.EnvFor(), env.Runr, con.Addr, clusterList(solos), con.Addr, o.Installs, o.Installs, shared[0].Name, shared[len(shared)-1].Name, con.Addr, o.Poll))
	reportConcurrent(rep, o, alone, out, id)
	sec.Details = append(sec.Details, table+"\n")
	if len(out.failures) > 0 {
		sec.note("Failures: %s.", strings.Join(out.failures, "; "))
	}
	sec.note("The single install runs first, alone, %d times one after the other, each on a fresh cluster of its own; the median is the reference. The %d installs then start together (one POST each from its own goroutine) on two other fresh clusters, %d regions per cluster. Every cluster runs during every measurement. Total time runs from just before the first POST to the poll that sees the last job end; \"Queued\" is the time from the job's creation until a runner claimed it.", len(alone), o.Installs, o.Installs/len(shared))
	sec.note("Several regions on one cluster share its Knative Operator and Serving: the first install creates them, the others wait for the release lock (a named wait) and adopt what exists. The console runs 8 job runners by default (RUNR_WORKERS), so with 10 jobs at once two wait in the queue for a free runner.")
	return nil
}

// knativeInstall is one install-knative job of benchmark 5.
type knativeInstall struct {
	name, region, job, cluster string
	alone                      bool // one of the installs alone, the reference
	view                       *jobView
	seen                       time.Time     // when the poll saw the job end
	took                       time.Duration // alone: from the POST to seen
	err                        error
}

// label names the install in the jobs table.
func (in *knativeInstall) label() string {
	if in.alone {
		return in.name + " (alone)"
	}
	return in.name
}

// run POSTs the install and waits for its job to end (up to timeout).
func (in *knativeInstall) run(con *Console, poll, timeout time.Duration) {
	if in.job, in.err = postInstallKnative(con, in.region); in.err != nil {
		return
	}
	in.view, in.seen, in.err = waitJob(con, in.job, poll, timeout)
}

// postInstallKnative starts the install of Knative into a region and returns its job.
func postInstallKnative(con *Console, region string) (string, error) {
	var ans struct {
		JobID string `json:"job_id"`
		Error string
	}
	st, err := con.API("POST", "/api/knative-regions/"+region+"/install-knative", nil, &ans)
	if err != nil {
		return "", err
	}
	if st != 202 {
		return "", fmt.Errorf("install-knative %s: %d %s", region, st, ans.Error)
	}
	return ans.JobID, nil
}

// installAlone installs Knative alone, one install after the other, into a region on
// each solo cluster (a fresh cluster of its own); each must succeed.
func installAlone(con *Console, o *Options, solos []*testcluster.Cluster) ([]*knativeInstall, error) {
	var done []*knativeInstall
	for i, solo := range solos {
		name := fmt.Sprintf("solo-%d", i+1)
		fmt.Printf("one install alone (%d of %d)\n", i+1, len(solos))
		region, err := createRegion(con, name, solo.Kubeconfig(), o)
		if err != nil {
			return nil, err
		}
		in := &knativeInstall{name: name, region: region, cluster: solo.Name, alone: true}
		t0 := time.Now()
		in.run(con, o.Poll, 10*time.Minute)
		if in.err != nil {
			return nil, in.err
		}
		if in.view.Status != store.JobSucceeded {
			return nil, fmt.Errorf("%s: install-knative %s: %s", name, in.view.Status, in.view.Error)
		}
		in.took = in.seen.Sub(t0)
		done = append(done, in)
		fmt.Printf("  %s in %s\n", in.view.Status, in.took.Round(time.Millisecond))
	}
	return done, nil
}

// medianAlone is the median time of the installs alone, the reference.
func medianAlone(alone []*knativeInstall) time.Duration {
	tooks := make([]time.Duration, len(alone))
	for i, in := range alone {
		tooks[i] = in.took
	}
	sort.Slice(tooks, func(i, j int) bool { return tooks[i] < tooks[j] })
	return tooks[len(tooks)/2]
}

// createConcurrentRegions creates the regions of the concurrent installs (conc-N), spread
// over the shared clusters, before any of them starts.
func createConcurrentRegions(con *Console, o *Options, shared []*testcluster.Cluster) ([]*knativeInstall, error) {
	insts := make([]*knativeInstall, o.Installs)
	for i := range insts {
		cl := shared[i%len(shared)]
		name := fmt.Sprintf("conc-%d", i+1)
		id, err := createRegion(con, name, cl.Kubeconfig(), o)
		if err != nil {
			return nil, err
		}
		insts[i] = &knativeInstall{name: name, region: id, cluster: cl.Name}
	}
	return insts, nil
}

// installAtOnce starts every install from a goroutine of its own and waits for all their
// jobs to end.
func installAtOnce(con *Console, poll time.Duration, insts []*knativeInstall) {
	var wg sync.WaitGroup
	for _, in := range insts {
		wg.Go(func() { in.run(con, poll, 15*time.Minute) })
	}
	wg.Wait()
}

// concurrentOutcome is how the concurrent installs ended.
type concurrentOutcome struct {
	succeeded int
	failures  []string
	total     time.Duration // from just before the first POST to the poll that saw the last job end
	// Helm's "another operation is in progress" in the concurrent jobs' events or
	// errors, and in the console's log.
	helmConflicts, logConflicts int
}

// outcomeOf counts the installs that succeeded and the failures of the others, and times
// them all from t0.
func outcomeOf(insts []*knativeInstall, t0 time.Time) concurrentOutcome {
	var out concurrentOutcome
	var last time.Time
	for _, in := range insts {
		if in.err != nil {
			out.failures = append(out.failures, in.name+": "+in.err.Error())
			continue
		}
		if in.seen.After(last) {
			last = in.seen
		}
		if in.view.Status == store.JobSucceeded {
			out.succeeded++
		} else {
			out.failures = append(out.failures, fmt.Sprintf("%s: %s: %s", in.name, in.view.Status, in.view.Error))
		}
	}
	out.total = last.Sub(t0)
	return out
}

// jobsTable is the table of every install's job — status, queue and run times, named
// waits, waits for a Helm release lock, Helm conflicts — and the count of Helm conflicts
// of the installs that were not alone.
func jobsTable(con *Console, all []*knativeInstall) (string, int, error) {
	var rows strings.Builder
	rows.WriteString("| Region | Cluster | Status | Queued | Running | Named waits | of which waiting for a Helm release lock | Helm conflicts |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	conflicts := 0
	for _, in := range all {
		if in.job == "" || in.view == nil {
			fmt.Fprintf(&rows, "| %s | %s | error | | | | | |\n", in.label(), in.cluster)
			continue
		}
		row, n, err := jobRow(con, in)
		if err != nil {
			return "", 0, err
		}
		rows.WriteString(row)
		if !in.alone {
			conflicts += n
		}
	}
	return rows.String(), conflicts, nil
}

// jobRow reads the events of an install's job and returns its row of the jobs table and
// the Helm conflicts ("another operation is in progress") in its events and error.
func jobRow(con *Console, in *knativeInstall) (string, int, error) {
	evs, err := jobEvents(con, in.job)
	if err != nil {
		return "", 0, fmt.Errorf("read the events of %s: %w", in.name, err)
	}
	conflicts := 0
	for _, e := range evs {
		if strings.Contains(strings.ToLower(e.Message), "another operation") {
			conflicts++
		}
	}
	if strings.Contains(strings.ToLower(in.view.Error), "another operation") {
		conflicts++
	}
	ws, _ := waitsOf(in.label(), evs)
	var lock time.Duration
	for _, w := range ws {
		if strings.HasPrefix(w.What, "Helm release ") && strings.HasSuffix(w.What, " to be free") {
			lock += w.Elapsed
		}
	}
	q, r := "—", "—"
	if in.view.StartedAt != nil {
		q = secs(in.view.StartedAt.Sub(in.view.CreatedAt))
		if in.view.FinishedAt != nil {
			r = secs(in.view.FinishedAt.Sub(*in.view.StartedAt))
		}
	}
	return fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s | %d |\n", in.label(), in.cluster, in.view.Status, q, r, secs(sumWaits(ws)), secs(lock), conflicts), conflicts, nil
}

// reportConcurrent records benchmark 5's figures: the reference install alone, whether
// every concurrent install finished, the Helm conflicts and the total time against
// twice the reference.
func reportConcurrent(rep *Report, o *Options, alone []*knativeInstall, out concurrentOutcome, id string) {
	one := medianAlone(alone)
	var each []string
	for _, in := range alone {
		each = append(each, secs(in.took))
	}
	what := "one install-knative alone"
	if len(alone) > 1 {
		what = fmt.Sprintf("one install-knative alone (median of %d: %s)", len(alone), strings.Join(each, ", "))
	}
	rep.add("5", what, secs(one), id)
	rep.check("5", fmt.Sprintf("%d installs at once: all finish", o.Installs), fmt.Sprintf("%d of %d succeeded", out.succeeded, o.Installs), "all", out.succeeded == o.Installs, id)
	rep.check("5", "Helm \"another operation is in progress\" errors", fmt.Sprintf("%d (jobs) + %d (log)", out.helmConflicts, out.logConflicts), "0", out.helmConflicts+out.logConflicts == 0, id)
	ratio := float64(out.total) / float64(one)
	if out.succeeded == o.Installs {
		rep.check("5", fmt.Sprintf("%d installs at once: total time", o.Installs), fmt.Sprintf("%s (%.2f× one)", secs(out.total), ratio), "< 2× one install", ratio < 2, id)
	} else {
		rep.check("5", fmt.Sprintf("%d installs at once: total time", o.Installs), fmt.Sprintf("%s until the last ended (%.2f× one)", secs(out.total), ratio), "< 2× one install", false, id)
	}
}

func clusterList(cs []*testcluster.Cluster) string {
	var names []string
	for _, c := range cs {
		names = append(names, c.Name)
	}
	return strings.Join(names, ", ")
}

// startClusters starts n simulated clusters at once.
func startClusters(n int) ([]*testcluster.Cluster, error) {
	out := make([]*testcluster.Cluster, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			out[i], errs[i] = testcluster.Start(testcluster.Options{Log: func(f string, a ...any) { fmt.Printf("  "+f+"\n", a...) }})
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			for _, c := range out {
				if c != nil {
					c.Stop()
				}
			}
			return nil, fmt.Errorf("cluster %d: %w", i+1, err)
		}
	}
	return out, nil
}
