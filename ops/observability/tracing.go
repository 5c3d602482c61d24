package observability

import (
	"context"
	"fmt"
	"runr.dev/console/kube"
	"strings"

	"runr.dev/console/engine"
	"runr.dev/console/ops/kit"
	"runr.dev/console/problem"
	"runr.dev/console/store"
)

// KindTracing brings a cluster's tracing backend to what its regions want: installed
// while one of them with Knative Serving ready has tracing on, removed when none has.
const KindTracing = "tracing"

// TracingEnabled says whether a region wants the tracing backend: its own mode, or the
// console's default (RUNR_TRACING_DEFAULT_MODE) when it has none.
func (s *Service) TracingEnabled(r *store.Region) bool {
	switch r.TracingMode {
	case store.TracingOn:
		return true
	case store.TracingOff:
		return false
	}
	return !s.Cfg.TracingOff
}

// TracingInput is the body of PUT /api/observability/regions/{id}/tracing.
type TracingInput struct {
	// Mode is on, off, or default (the console's default); empty keeps the region's.
	Mode string `json:"mode"`
	// RetentionHours is the region's own Tempo retention, 1 to 8760 (a year); 0 takes the
	// console's; absent keeps the region's.
	RetentionHours *int `json:"retention_hours"`
}

// maxTracingRetentionHours is the longest retention a region may ask for (a year).
const maxTracingRetentionHours = 8760

// SetTracing records a region's tracing mode and retention and queues the job that brings
// its cluster's tracing backend to them.
func (s *Service) SetTracing(ctx context.Context, actor kit.Actor, r *store.Region, in TracingInput) (*store.Job, error) {
	var u store.TracingUpdate
	fields := map[string]string{}
	switch mode := strings.TrimSpace(in.Mode); mode {
	case "on", "off":
		u.Mode = store.Ptr(store.TracingMode(mode))
	case "default":
		u.Mode = store.Ptr(store.TracingDefault)
	case "":
		if in.RetentionHours == nil {
			fields["mode"] = "Choose on, off or default (the console's default)."
		}
	default:
		fields["mode"] = "Choose on, off or default (the console's default)."
	}
	if h := in.RetentionHours; h != nil && (*h < 0 || *h > maxTracingRetentionHours) {
		fields["retention_hours"] = fmt.Sprintf("Between 1 and %d hours, or 0 for the console's (%d).", maxTracingRetentionHours, s.Cfg.TracingRetentionHours)
	}
	if len(fields) > 0 {
		return nil, &problem.Invalid{Fields: fields}
	}
	u.RetentionHours = in.RetentionHours
	if err := s.Store.SetTracing(ctx, r.ID, u); err != nil {
		return nil, err
	}
	what := in.Mode
	if what == "" {
		what = "retention"
	}
	return s.Enqueue(ctx, engine.Request{Kind: KindTracing, Title: "Tracing of " + r.Name + ": " + what, Subject: r.ID, CreatedBy: actor.Email})
}

// RemoveTracing is DELETE /api/observability/regions/{id}/tracing: the region's tracing
// mode becomes off (reconcile does not install it again) and the backend goes unless
// another region of the cluster still has tracing on.
func (s *Service) RemoveTracing(ctx context.Context, actor kit.Actor, r *store.Region) (*store.Job, error) {
	return s.SetTracing(ctx, actor, r, TracingInput{Mode: "off"})
}

// TracingState is a region's tracing as its Tracing tab shows it.
type TracingState struct {
	// Mode is the region's own mode (TracingDefault: the console's default).
	Mode store.TracingMode
	// Enabled is the mode in effect; DefaultOn is the console's default.
	Enabled, DefaultOn bool
	// RetentionHours is the region's own retention (0: the console's, DefaultRetentionHours).
	RetentionHours, DefaultRetentionHours int
	// Backend is what the cluster's backend is installed with.
	Backend TracingBackend
	// Sharing are the other regions of the cluster with tracing on: the backend is the
	// cluster's, so it stays while one of them wants it.
	Sharing []string
}

// Tracing is the region's tracing mode, what is in effect and who shares the backend.
func (s *Service) Tracing(ctx context.Context, r *store.Region) (TracingState, error) {
	st := TracingState{Mode: r.TracingMode, Enabled: s.TracingEnabled(r), DefaultOn: !s.Cfg.TracingOff,
		RetentionHours: r.TracingRetentionHours, DefaultRetentionHours: s.Cfg.TracingRetentionHours}
	users, err := s.TracingUsers(ctx, r)
	if err != nil {
		return st, err
	}
	for _, u := range users {
		if u.ID != r.ID {
			st.Sharing = append(st.Sharing, u.Name)
		}
	}
	st.Backend = s.Backend(users)
	return st, nil
}

// TracingUsers are the regions of r's cluster with tracing on: r itself, and the others
// once their Knative Serving is ready.
func (s *Service) TracingUsers(ctx context.Context, r *store.Region) ([]store.Region, error) {
	others, err := s.OtherRegionsOnCluster(ctx, r)
	if err != nil {
		return nil, err
	}
	var users []store.Region
	if s.TracingEnabled(r) {
		users = append(users, *r)
	}
	for _, x := range others {
		if x.ServingStatus == store.ComponentReady && s.TracingEnabled(&x) {
			users = append(users, x)
		}
	}
	return users, nil
}

// TracingBackend is what a cluster's tracing backend is installed with.
type TracingBackend struct {
	// RetentionHours is how long Tempo keeps traces.
	RetentionHours int
	// DecidedBy is the region that decided it ("" when no region has tracing on).
	DecidedBy string
	// Monitoring is that region's storage settings (Tempo's volume).
	Monitoring store.Monitoring
}

// Backend is the tracing backend of a cluster whose regions with tracing on are users:
// the first of them (by creation) decides, with its own retention or the console's.
func (s *Service) Backend(users []store.Region) TracingBackend {
	b := TracingBackend{RetentionHours: s.Cfg.TracingRetentionHours}
	var first *store.Region
	for i := range users {
		if first == nil || users[i].CreatedAt.Before(first.CreatedAt) {
			first = &users[i]
		}
	}
	if first != nil {
		b.DecidedBy, b.Monitoring = first.Name, first.Monitoring.V
		if first.TracingRetentionHours > 0 {
			b.RetentionHours = first.TracingRetentionHours
		}
	}
	return b
}

func (s *Service) registerKinds() {
	s.Engine.Register(&engine.Kind{
		Name: KindTracing,
		Plan: func(*engine.JobContext) ([]engine.Step, error) {
			return []engine.Step{s.RegionStep("tracing", "Tracing backend", s.applyTracingMode)}, nil
		},
	})
}

// tracingRegions are the regions of r's cluster with Serving ready (served), and those of
// them with tracing on (users).
func (s *Service) tracingRegions(ctx context.Context, r *store.Region) (users, served []store.Region, err error) {
	others, err := s.OtherRegionsOnCluster(ctx, r)
	if err != nil {
		return nil, nil, err
	}
	for _, x := range append([]store.Region{*r}, others...) {
		if x.ServingStatus != store.ComponentReady {
			continue
		}
		served = append(served, x)
		if s.TracingEnabled(&x) {
			users = append(users, x)
		}
	}
	return users, served, nil
}

// RefreshTracing is a step that applies the tracing backend again where the job's region's
// cluster runs it (Tempo's volume follows its deciding region's storage settings), and
// does nothing where it does not.
func (s *Service) RefreshTracing(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	users, _, err := s.tracingRegions(ctx, r)
	if err != nil {
		return err
	}
	if len(users) == 0 {
		jc.Note("No region of the cluster with Knative Serving ready has tracing on: no Tempo to update")
		return engine.ErrSkip
	}
	return s.InstallTracing(ctx, jc, c, s.Backend(users))
}

// applyTracingMode is the step "tracing" of KindTracing.
func (s *Service) applyTracingMode(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	users, served, err := s.tracingRegions(ctx, r)
	if err != nil {
		return err
	}
	switch {
	case len(users) > 0:
		// The regions show "installing" until the backend's pods run, and the error if
		// they never do (a retry of the job completes it).
		if err := s.recordTracing(ctx, served, store.ComponentState{Status: store.ComponentInstalling}); err != nil {
			return err
		}
		if err := s.InstallTracing(ctx, jc, c, s.Backend(users)); err != nil {
			s.Record(s.recordTracing(ctx, served, store.ComponentState{Status: store.ComponentError, Message: err.Error()}))
			return err
		}
		if !s.TracingEnabled(r) {
			jc.Note("Tracing is off for %s; the backend stays for %s on the same cluster", r.Name, regionNames(users))
		}
		return s.recordTracing(ctx, served, store.ComponentState{Status: store.ComponentReady, Version: ChartTempo.Version})
	case r.ServingStatus != store.ComponentReady && s.TracingEnabled(r):
		jc.Note("Tracing is on for %s: the backend is installed with Knative Serving", r.Name)
		return nil
	}
	for _, name := range []string{OtelRelease, TempoRelease} {
		if err := s.HelmUninstall(ctx, jc, c, ObservabilityNamespace, name); err != nil {
			return fmt.Errorf("uninstall %s: %w", name, err)
		}
	}
	jc.Note("No region of the cluster with Knative Serving ready has tracing on: the OpenTelemetry Collector and Tempo are not installed (where they were, they are removed with their traces)")
	return s.recordTracing(ctx, served, store.ComponentState{Status: store.ComponentNotInstalled})
}

// recordTracing records the tracing component's state on regions sharing the backend.
func (s *Service) recordTracing(ctx context.Context, rs []store.Region, cs store.ComponentState) error {
	for _, x := range rs {
		if err := s.Store.SetComponent(ctx, x.ID, "tracing", cs); err != nil {
			return err
		}
	}
	return nil
}

func regionNames(rs []store.Region) string {
	names := make([]string, len(rs))
	for i, x := range rs {
		names[i] = x.Name
	}
	return strings.Join(names, ", ")
}
