package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops/domains"
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/knative"
	"runr.dev/console/ops/nodes"
	"runr.dev/console/ops/observability"
	"runr.dev/console/ops/statusblock"
	"runr.dev/console/problem"
	"runr.dev/console/store"
)

// Kind brings existing regions up to what this release installs (region:reconcile).
const Kind = "reconcile"

// Reconcile steps, in the order they run.
const (
	StepSettings      = "settings"
	StepStatusBlock   = "status-block"
	StepTracing       = "tracing"
	StepTraefikImage  = "traefik-image"
	StepAgent         = "agent"
	StepObservability = "observability"
)

// Steps lists the steps in their order.
var Steps = []string{StepSettings, StepStatusBlock, StepImageRegistry, StepTracing, StepTraefikImage, StepAgent, StepObservability,
	StepImageMirror}

// Input is what to reconcile: every region, or one (by name or id), every step
// or one. It is the body of POST /api/reconcile and the flags of `runr reconcile`.
type Input struct {
	Region string `json:"region"`
	Step   string `json:"step"`
}

// Outcomes of one step on one region (Change.Result).
const (
	// ResultChange: the step changes (or, in a dry run, would change) something.
	ResultChange = "change"
	// ResultUpToDate: nothing to do.
	ResultUpToDate = "up_to_date"
	// ResultLeftOut: the region is not part of the step (inactive, or Serving not ready).
	ResultLeftOut = "left_out"
	// ResultFailed: the step could not be checked or applied on the region.
	ResultFailed = "failed"
)

// Change is one line of a reconcile: a step on a region, its outcome and what it is.
type Change struct {
	Region string `json:"region"`
	Step   string `json:"step"`
	Result string `json:"result"`
	What   string `json:"what"`
}

// finding is what a step's check found on a target: Change says there is work, What
// says which (or, without Change, a note such as a Traefik of another version kept).
type finding struct {
	Change bool
	What   string
}

// reconcileTarget is what one step acts on: a region (status-block) or a cluster, through
// its first active region with Serving ready; Regions are every region of the cluster.
type reconcileTarget struct {
	Region  store.Region
	Regions []store.Region
	// Shared names the cluster's other regions the step covers too.
	Shared []string
	// First is the step's first target: what belongs to no cluster (the projects without
	// a region) goes with it.
	First bool
}

// label names the target in a change: the region, and the regions sharing its cluster.
func (t *reconcileTarget) label() string {
	if len(t.Shared) == 0 {
		return t.Region.Name
	}
	return t.Region.Name + " (cluster shared with " + strings.Join(t.Shared, ", ") + ")"
}

// reconcileStep is one step: whether it acts per region (else once per cluster), how it
// checks a target and how it brings it up to date.
type reconcileStep struct {
	Name      string
	Title     string
	PerRegion bool
	check     func(ctx context.Context, c *kube.Cluster, t *reconcileTarget) (finding, error)
	apply     func(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, t *reconcileTarget) error
}

// reconcileSteps are the steps in their order.
func (s *Service) reconcileSteps() []reconcileStep {
	return []reconcileStep{
		{Name: StepSettings, Title: "Traefik timeouts and Knative's max revision timeout", check: s.checkSettings, apply: s.applySettings},
		{Name: StepStatusBlock, Title: "Status blocks of the regions that are not active", PerRegion: true, check: s.checkBlock, apply: s.applyStatusBlock},
		{Name: StepImageRegistry, Title: "References to earlier namespaces of the console's images", check: s.checkImageRegistry, apply: s.applyImageRegistry},
		{Name: StepTracing, Title: "Tracing backend", check: s.checkTracing, apply: s.applyTracing},
		{Name: StepTraefikImage, Title: "Region Traefik image", check: s.checkTraefikImage, apply: s.applyTraefikImage},
		{Name: StepAgent, Title: "runr-agent and the console's other helpers", check: s.checkAgent, apply: s.applyAgent},
		{Name: StepObservability, Title: "Prometheus and Loki", check: s.checkObservability, apply: s.applyObservability},
		{Name: StepImageMirror, Title: "Images through the regions' image mirror", check: s.checkImageMirror, apply: s.applyImageMirror},
	}
}

// validReconcile checks the actor (a platform user) and the input: a known step, a region
// that exists.
func (s *Service) validReconcile(ctx context.Context, actor kit.Actor, in Input) error {
	if !actor.Platform() {
		return errReconcileIsPlatform
	}
	if in.Step != "" && !slices.Contains(Steps, in.Step) {
		return &problem.Invalid{Fields: map[string]string{"step": "Use one of " + strings.Join(Steps, ", ") + "."}}
	}
	if in.Region != "" {
		if _, err := s.Store.RegionRef(ctx, in.Region); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return &problem.Invalid{Fields: map[string]string{"region": "No region " + in.Region + "."}}
			}
			return fmt.Errorf("reconcile: %w", err)
		}
	}
	return nil
}

// selectedSteps are the steps the input names (every step when none).
func (s *Service) selectedSteps(in Input) []reconcileStep {
	var out []reconcileStep
	for _, st := range s.reconcileSteps() {
		if in.Step == "" || in.Step == st.Name {
			out = append(out, st)
		}
	}
	return out
}

// reconcileTargets reads what a step acts on: for a per-region step every region with
// Serving ready; for a cluster step one target per cluster with an active region whose
// Serving is ready. Regions left out are returned as changes that say why.
func (s *Service) reconcileTargets(ctx context.Context, in Input, st reconcileStep) ([]reconcileTarget, []Change, error) {
	all, err := s.Store.ListRegions(ctx, store.RegionFilter{}, true)
	if err != nil {
		return nil, nil, fmt.Errorf("reconcile: %w", err)
	}
	byCluster := map[string][]store.Region{}
	for _, r := range all {
		byCluster[r.ClusterKey] = append(byCluster[r.ClusterKey], r)
	}
	var targets []reconcileTarget
	var left []Change
	seen := map[string]bool{}
	for _, r := range all {
		if in.Region != "" && r.Name != in.Region && r.ID != in.Region {
			continue
		}
		if reason := leftOut(r, st.PerRegion); reason != "" {
			left = append(left, Change{Region: r.Name, Step: st.Name, Result: ResultLeftOut, What: reason})
			continue
		}
		if st.PerRegion {
			targets = append(targets, reconcileTarget{Region: r, Regions: byCluster[r.ClusterKey]})
			continue
		}
		if seen[r.ClusterKey] {
			continue
		}
		seen[r.ClusterKey] = true
		t := reconcileTarget{Region: r, Regions: byCluster[r.ClusterKey]}
		for _, o := range byCluster[r.ClusterKey] {
			if o.ID != r.ID && leftOut(o, false) == "" {
				t.Shared = append(t.Shared, o.Name)
			}
		}
		targets = append(targets, t)
	}
	if len(targets) > 0 {
		targets[0].First = true
	}
	return targets, left, nil
}

// leftOut says why a region is not part of a step ("" when it is): a region that is not
// active is left out of the cluster steps, and every step needs Serving ready.
func leftOut(r store.Region, perRegion bool) string {
	switch {
	case !perRegion && r.Status != store.RegionActive:
		return "the region is " + string(r.Status) + ": left out of the cluster steps"
	case r.ServingStatus != store.ComponentReady:
		return "Knative Serving is " + string(r.ServingStatus) + ": nothing of this step is installed yet"
	}
	return ""
}

// Plan is the dry run: per region and step what a reconcile would change, from
// the clusters as they are now. It changes nothing.
func (s *Service) Plan(ctx context.Context, actor kit.Actor, in Input) ([]Change, error) {
	if err := s.validReconcile(ctx, actor, in); err != nil {
		return nil, err
	}
	var out []Change
	for _, st := range s.selectedSteps(in) {
		targets, left, err := s.reconcileTargets(ctx, in, st)
		if err != nil {
			return nil, err
		}
		for i := range targets {
			t := &targets[i]
			f, err := s.reconcileCheck(ctx, st, t)
			out = append(out, changeOf(st, t, f, err))
		}
		out = append(out, left...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Region < out[j].Region })
	return out, nil
}

// reconcileCheck checks one target of a step on its cluster.
func (s *Service) reconcileCheck(ctx context.Context, st reconcileStep, t *reconcileTarget) (finding, error) {
	c, err := s.RegionCluster(&t.Region)
	if err != nil {
		return finding{}, err
	}
	cctx, cancel := context.WithTimeout(ctx, nodes.ClusterReadTimeout)
	defer cancel()
	return st.check(cctx, c, t)
}

// changeOf turns a check's outcome into a change line.
func changeOf(st reconcileStep, t *reconcileTarget, f finding, err error) Change {
	ch := Change{Region: t.label(), Step: st.Name, Result: ResultUpToDate, What: f.What}
	switch {
	case err != nil:
		ch.Result, ch.What = ResultFailed, err.Error()
	case f.Change:
		ch.Result = ResultChange
	case ch.What == "":
		ch.What = "up to date"
	}
	return ch
}

// Start queues a reconcile job (one at a time).
func (s *Service) Start(ctx context.Context, actor kit.Actor, in Input) (*store.Job, error) {
	if err := s.validReconcile(ctx, actor, in); err != nil {
		return nil, err
	}
	if j, err := s.Store.ActiveJobOfKind(ctx, Kind); err == nil {
		// One of another release that no console holds is left for good (its release's
		// consoles are gone after an upgrade): it fails, and this one runs.
		if j.Release == "" || j.Release == s.Engine.Release || s.Store.AbandonJob(ctx, j.ID, j.Release,
			"Left by release "+j.Release+": no console of that release is left to run it; release "+s.Engine.Release+" reconciles instead.") != nil {
			return nil, &problem.Refused{Reason: "A reconcile runs already; wait for it to finish."}
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("reconcile: %w", err)
	}
	title := "Reconcile every region"
	if in.Region != "" {
		title = "Reconcile region " + in.Region
	}
	if in.Step != "" {
		title += " (step " + in.Step + ")"
	}
	// Run by a console of this release only: an older one (still draining during an
	// upgrade) would bring the regions to what it installs.
	return s.Enqueue(ctx, engine.Request{Kind: Kind, Title: title, Params: in, CreatedBy: actor.Email, PinRelease: true})
}

// registerKinds registers the reconcile job: one engine step per reconcile step.
func (s *Service) registerKinds() {
	s.Engine.Register(&engine.Kind{Name: Kind, Plan: engine.PlanWith(func(in Input) []engine.Step {
		var steps []engine.Step
		for _, st := range s.selectedSteps(in) {
			steps = append(steps, engine.Step{Name: st.Name, Title: st.Title, Run: s.runReconcileStep(in, st)})
		}
		return steps
	})})
}

// errReconcileIsPlatform refuses a reconcile to a tenant's user: it reads and changes
// every region of every tenant, so it is the platform's alone (the dry run too).
var errReconcileIsPlatform = &problem.Forbidden{Reason: "A reconcile acts on every region of every tenant: only platform users run it (or its dry run)."}

// runReconcileStep brings every target of a step up to date: each is checked, then
// changed when it needs it. One target's failure does not stop the others; the step
// fails at the end when any did (a retry runs it again: every step is idempotent).
func (s *Service) runReconcileStep(in Input, st reconcileStep) func(ctx context.Context, jc *engine.JobContext) error {
	return func(ctx context.Context, jc *engine.JobContext) error {
		if jc.Job.TenantID != nil { // queued by a tenant's user before the refusal existed
			return errReconcileIsPlatform
		}
		targets, left, err := s.reconcileTargets(ctx, in, st)
		if err != nil {
			return err
		}
		for _, l := range left {
			jc.Logf("%s: %s", l.Region, l.What)
		}
		var failed []string
		changed := 0
		for i := range targets {
			t := &targets[i]
			did, err := s.reconcileOne(ctx, jc, st, t)
			if err != nil {
				jc.Warnf("%s: %v", t.label(), err)
				failed = append(failed, t.Region.Name)
				continue
			}
			if did {
				changed++
			}
		}
		if len(failed) > 0 {
			return fmt.Errorf("step %s failed on %s (see the log); the other regions are done", st.Name, strings.Join(failed, ", "))
		}
		if changed == 0 {
			jc.Note("Every region is up to date (%d checked)", len(targets))
			return nil
		}
		jc.Note("Brought %d of %d up to date", changed, len(targets))
		return nil
	}
}

// reconcileOne checks one target and changes it when it needs it; it reports whether it did.
func (s *Service) reconcileOne(ctx context.Context, jc *engine.JobContext, st reconcileStep, t *reconcileTarget) (bool, error) {
	if st.PerRegion {
		// A tenant-owned region is reconciled in its tenant's walls (Tenancy module).
		ctx = store.WithTenant(ctx, t.Region.Tenant())
	}
	c, err := s.RegionCluster(&t.Region)
	if err != nil {
		return false, err
	}
	// What a step installs on the target's cluster comes through the target's image mirror.
	mirror, err := s.ImageMirror(ctx, &t.Region)
	if err != nil {
		return false, err
	}
	ctx = kit.WithMirror(ctx, mirror)
	cctx, cancel := context.WithTimeout(ctx, nodes.ClusterReadTimeout)
	f, err := st.check(cctx, c, t)
	cancel()
	if err != nil {
		return false, err
	}
	if !f.Change {
		msg := f.What
		if msg == "" {
			msg = "up to date"
		}
		jc.Logf("%s: %s", t.label(), msg)
		return false, nil
	}
	jc.Logf("%s: %s", t.label(), f.What)
	if err := st.apply(ctx, jc, c, t); err != nil {
		return false, err
	}
	return true, nil
}

// Service brings existing regions up to what this release installs, step by step, and
// keeps the platform's image mirror applied.
type Service struct {
	*kit.Kit
	Deps
}

// Deps are the features whose parts a reconcile checks and applies again.
type Deps struct {
	Knative       *knative.Service
	Observability *observability.Service
	StatusBlock   *statusblock.Service
	Domains       *domains.Service
}

// New builds the reconcile and registers its kind of job.
func New(k *kit.Kit, d Deps) *Service {
	s := &Service{Kit: k, Deps: d}
	s.registerKinds()
	return s
}
