package observability

import (
	"context"
	"fmt"
	"strings"

	"runr.dev/console/engine"
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/problem"
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
	// Mode is on, off, or default (the console's default).
	Mode string `json:"mode"`
}

// SetTracing records a region's tracing mode and queues the job that brings its
// cluster's tracing backend to it.
func (s *Service) SetTracing(ctx context.Context, actor kit.Actor, r *store.Region, in TracingInput) (*store.Job, error) {
	var m store.TracingMode
	switch strings.TrimSpace(in.Mode) {
	case "on":
		m = store.TracingOn
	case "off":
		m = store.TracingOff
	case "default":
		m = store.TracingDefault
	default:
		return nil, &problem.Invalid{Fields: map[string]string{"mode": "Choose on, off or default (the console's default)."}}
	}
	if err := s.Store.SetTracingMode(ctx, r.ID, m); err != nil {
		return nil, err
	}
	return s.Enqueue(ctx, engine.Request{Kind: KindTracing, Title: "Tracing of " + r.Name + ": " + in.Mode, Subject: r.ID, CreatedBy: actor.Email})
}

// RemoveTracing is DELETE /api/observability/regions/{id}/tracing: the region's tracing
// mode becomes off (reconcile does not install it again) and the backend goes unless
// another region of the cluster still has tracing on.
func (s *Service) RemoveTracing(ctx context.Context, actor kit.Actor, r *store.Region) (*store.Job, error) {
	return s.SetTracing(ctx, actor, r, TracingInput{Mode: "off"})
}

func (s *Service) registerKinds() {
	s.Engine.Register(&engine.Kind{
		Name: KindTracing,
		Plan: func(*engine.JobContext) ([]engine.Step, error) {
			return []engine.Step{{Name: "tracing", Title: "Tracing backend", Run: s.applyTracingMode}}, nil
		},
	})
}

// applyTracingMode is the step "tracing" of KindTracing.
func (s *Service) applyTracingMode(ctx context.Context, jc *engine.JobContext) error {
	r, c, err := s.RegionAndCluster(ctx, jc)
	if err != nil {
		return err
	}
	others, err := s.OtherRegionsOnCluster(ctx, r)
	if err != nil {
		return err
	}
	var users, served []store.Region
	for _, x := range append([]store.Region{*r}, others...) {
		if x.ServingStatus != store.ComponentReady {
			continue
		}
		served = append(served, x)
		if s.TracingEnabled(&x) {
			users = append(users, x)
		}
	}
	switch {
	case len(users) > 0:
		// The regions show "installing" until the backend's pods run, and the error if
		// they never do (a retry of the job completes it).
		if err := s.recordTracing(ctx, served, store.ComponentState{Status: store.ComponentInstalling}); err != nil {
			return err
		}
		if err := s.InstallTracing(ctx, jc, c); err != nil {
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
	jc.Note("No region of the cluster has tracing on: removed the OpenTelemetry Collector and Tempo (their traces with them)")
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
