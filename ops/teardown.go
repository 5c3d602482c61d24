package ops

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"runr.dev/console/engine"
	"runr.dev/console/ops/kit"
	"runr.dev/console/problem"
	"runr.dev/console/store"
)

// KindTeardown is the kind of job that removes what the console installed on a region's
// cluster, part after part as the removal page lists them, and then the region's record.
const KindTeardown = "region-teardown"

// TeardownParams are the removals a teardown runs, chosen when it was queued (from what
// the region had installed then), so that a resumed job runs the same ones.
type TeardownParams struct {
	Parts []engine.Part `json:"parts"`
	// Kept are the installs left for the cluster's other regions, Neighbours.
	Kept       []string `json:"kept,omitempty"`
	Neighbours []string `json:"neighbours,omitempty"`
}

// teardownSource is one row of the removal page's table: the parts it removes, and
// whether what it removes belongs to the cluster (its other regions use it too).
type teardownSource struct {
	label  string
	shared bool
	parts  func() ([]engine.Part, error)
}

// teardownParts are the removals of what the console installed on r, in the order of the
// removal page's table (views.RemoveRegion): what is not installed has no part. While
// the cluster hosts other regions, what they share (Knative, GPU support, isolation
// runtimes) is kept: kept names it. Data services are one region's (data.Service refuses
// a second region's install on the cluster), and the admission policy's removal keeps the
// policy-controller while another region's policy uses it.
func (s *Service) teardownParts(ctx context.Context, r *store.Region, neighbours []string) (parts []engine.Part, kept []string, err error) {
	for _, src := range []teardownSource{
		{"Demo projects", false, func() ([]engine.Part, error) { return s.Projects.TeardownParts(ctx, r) }},
		{"Function TLS", false, func() ([]engine.Part, error) { return s.functionTLSTeardown(r) }},
		{"Redis", false, func() ([]engine.Part, error) { return s.Redis.TeardownParts(r) }},
		{"Knative", true, func() ([]engine.Part, error) { return s.Knative.TeardownParts(r) }},
		{"Registry", false, func() ([]engine.Part, error) { return s.Registry.TeardownParts(r) }},
		{"Data services", false, func() ([]engine.Part, error) { return s.Data.TeardownParts(ctx, r) }},
		{"GPU support", true, func() ([]engine.Part, error) { return s.GPU.TeardownParts(ctx, r) }},
		{"Isolation runtimes", true, func() ([]engine.Part, error) { return s.Isolation.TeardownParts(ctx, r) }},
		{"Admission policy", false, func() ([]engine.Part, error) { return s.Admission.TeardownParts(r) }},
	} {
		ps, err := src.parts()
		var refused *problem.Refused
		switch {
		case src.shared && len(neighbours) > 0 && (len(ps) > 0 || errors.As(err, &refused)):
			// Kept for the other regions: a refusal to remove it (pods that use it) is moot.
			kept = append(kept, src.label)
		case err != nil:
			return nil, nil, err
		case !src.shared || len(neighbours) == 0:
			parts = append(parts, ps...)
		}
	}
	return parts, kept, nil
}

// Neighbours are the names of the other regions on r's cluster: they share its Knative
// Serving, tracing, runr-agent and every cluster-wide install.
func (s *Service) Neighbours(ctx context.Context, r *store.Region) ([]string, error) {
	rs, err := s.OtherRegionsOnCluster(ctx, r)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(rs))
	for i, x := range rs {
		names[i] = x.Name
	}
	return names, nil
}

func (s *Service) functionTLSTeardown(r *store.Region) ([]engine.Part, error) {
	if r.FunctionTLSCert == "" {
		return nil, nil
	}
	p, err := engine.PartOf("Function TLS", engine.Request{Kind: KindRemoveFunctionTLS, Subject: r.ID})
	return []engine.Part{p}, err
}

// Teardown queues the removal of what the console installed on r's cluster and then of
// its record (the removal page's option; the plain removal keeps the cluster as it is).
// It is refused while the region has projects other than the demo ones (which it
// removes), while a job of the region runs, and when a part refuses (pods that still use
// GPUs or a sandbox runtime). What the cluster's other regions share stays.
func (s *Service) Teardown(ctx context.Context, actor kit.Actor, r *store.Region) (*store.Job, error) {
	demos, err := s.Store.DemoProjects(ctx, r.ID)
	if err != nil {
		return nil, fmt.Errorf("teardown of %s: %w", r.Name, err)
	}
	if n := r.ProjectCount - len(demos); n > 0 {
		return nil, &problem.Refused{Reason: fmt.Sprintf("Region %s still has %d project(s): delete them or move them to another region first.", r.Name, n)}
	}
	if busy, err := s.Busy(ctx, r.ID, ""); err != nil {
		return nil, err
	} else if busy {
		return nil, &problem.Refused{Reason: "A job of region " + r.Name + " runs: wait for it to end (or cancel it) before removing the region."}
	}
	neighbours, err := s.Neighbours(ctx, r)
	if err != nil {
		return nil, err
	}
	parts, kept, err := s.teardownParts(ctx, r, neighbours)
	if err != nil {
		return nil, err
	}
	return s.Enqueue(ctx, engine.Request{Kind: KindTeardown, Title: "Remove region " + r.Name + " and what RunR installed on its cluster",
		Subject: r.ID, Params: TeardownParams{Parts: parts, Kept: kept, Neighbours: neighbours}, CreatedBy: actor.Email})
}

func (s *Service) registerTeardownKind() {
	s.Engine.Register(&engine.Kind{
		Name: KindTeardown,
		Plan: func(jc *engine.JobContext) ([]engine.Step, error) {
			var p TeardownParams
			if err := jc.Params(&p); err != nil {
				return nil, err
			}
			steps, err := s.Engine.PlanParts(jc, p.Parts)
			if err != nil {
				return nil, err
			}
			if len(p.Kept) > 0 {
				kept := engine.Step{Name: "kept", Title: "Keep what the cluster's other regions use", Run: func(ctx context.Context, jc *engine.JobContext) error {
					jc.Note("Kept for %s on the same cluster: %s", strings.Join(p.Neighbours, ", "), strings.Join(p.Kept, ", "))
					return nil
				}}
				steps = append([]engine.Step{kept}, steps...)
			}
			return append(steps, engine.Step{Name: "record", Title: "Remove the region's record", Run: s.removeRecord}), nil
		},
		Finished: func(ctx context.Context, jc *engine.JobContext, err error) {
			var p TeardownParams
			if jc.Params(&p) == nil {
				s.Engine.FinishParts(ctx, jc, p.Parts, err)
			}
		},
	})
}

// removeRecord is the last step of a teardown: the region's record goes.
func (s *Service) removeRecord(ctx context.Context, jc *engine.JobContext) error {
	r, err := s.Store.RegionByID(ctx, jc.Job.Region())
	if err != nil {
		return err
	}
	if err := s.Store.DeleteRegion(ctx, r.ID); err != nil {
		return fmt.Errorf("remove the record of region %s: %w", r.Name, err)
	}
	if err := s.Isolation.HandOver(ctx, r); err != nil {
		s.Log.Warn("sandbox runtimes not handed over", "region", r.Name, "err", err)
	}
	jc.Note("Region %s removed", r.Name)
	s.Log.Info("region removed", "region", r.Name, "user", jc.Job.CreatedBy, "job", jc.Job.ID)
	return nil
}
