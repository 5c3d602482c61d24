package ops

import (
	"context"
	"fmt"

	"runr.dev/console/engine"
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/problem"
	"runr.dev/console/store"
)

// KindTeardown is the kind of job that removes what the console installed on a region's
// cluster, part after part as the removal page lists them, and then the region's record.
const KindTeardown = "region-teardown"

// TeardownParams are the removals a teardown runs, chosen when it was queued (from what
// the region had installed then), so that a resumed job runs the same ones.
type TeardownParams struct {
	Parts []engine.Part `json:"parts"`
}

// teardownParts are the removals of what the console installed on r, in the order of the
// removal page's table (views.RemoveRegion): what is not installed has no part.
func (s *Service) teardownParts(ctx context.Context, r *store.Region) ([]engine.Part, error) {
	var parts []engine.Part
	for _, of := range []func() ([]engine.Part, error){
		func() ([]engine.Part, error) { return s.Projects.TeardownParts(ctx, r) },
		func() ([]engine.Part, error) { return s.functionTLSTeardown(r) },
		func() ([]engine.Part, error) { return s.Redis.TeardownParts(r) },
		func() ([]engine.Part, error) { return s.Knative.TeardownParts(r) },
		func() ([]engine.Part, error) { return s.Registry.TeardownParts(r) },
		func() ([]engine.Part, error) { return s.Data.TeardownParts(ctx, r) },
		func() ([]engine.Part, error) { return s.GPU.TeardownParts(ctx, r) },
		func() ([]engine.Part, error) { return s.Isolation.TeardownParts(ctx, r) },
		func() ([]engine.Part, error) { return s.Admission.TeardownParts(r) },
	} {
		ps, err := of()
		if err != nil {
			return nil, err
		}
		parts = append(parts, ps...)
	}
	return parts, nil
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
// GPUs or a sandbox runtime).
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
	parts, err := s.teardownParts(ctx, r)
	if err != nil {
		return nil, err
	}
	return s.Enqueue(ctx, engine.Request{Kind: KindTeardown, Title: "Remove region " + r.Name + " and what RunR installed on its cluster",
		Subject: r.ID, Params: TeardownParams{Parts: parts}, CreatedBy: actor.Email})
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
	jc.Note("Region %s removed", r.Name)
	s.Log.Info("region removed", "region", r.Name, "user", jc.Job.CreatedBy, "job", jc.Job.ID)
	return nil
}
