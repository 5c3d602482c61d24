package registry

import (
	"context"

	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/store"
)

// Job kinds of the registry of an existing region.
const (
	KindInstall = "registry-install"
	KindRemove  = "registry-remove"
	KindTest    = "registry-test"
)

// registerKinds registers the registry's kinds of job.
func (s *Service) registerKinds() {
	s.Engine.Register(&engine.Kind{
		Name: KindInstall,
		Plan: engine.PlanWith(s.installSteps),
		Finished: func(ctx context.Context, jc *engine.JobContext, err error) {
			if err != nil {
				s.Record(s.Store.UpdateRegistry(ctx, jc.Job.Region(), store.RegistryUpdate{Status: store.Ptr(store.ComponentError), Message: store.Ptr(err.Error())}))
			}
		},
	})
	s.Engine.Register(&engine.Kind{
		Name: KindRemove,
		Plan: func(jc *engine.JobContext) ([]engine.Step, error) {
			return []engine.Step{s.RegionStep("remove", "Remove the registry", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
				if err := s.remove(ctx, jc, c, r); err != nil {
					return err
				}
				return s.Store.UpdateRegistry(ctx, r.ID, store.RegistryUpdate{Mode: store.Ptr(store.RegistryNone), Status: store.Ptr(store.ComponentNotInstalled),
					Message: store.Ptr(""), Config: &store.RegistryConfig{}, Secret: store.Ptr(""), Address: store.Ptr("")})
			})}, nil
		},
		Finished: func(ctx context.Context, jc *engine.JobContext, err error) {
			if err != nil {
				s.Record(s.Store.UpdateRegistry(ctx, jc.Job.Region(), store.RegistryUpdate{Status: store.Ptr(store.ComponentError), Message: store.Ptr("removal failed: " + err.Error())}))
			}
		},
	})
	s.Engine.Register(&engine.Kind{
		Name: KindTest,
		Plan: engine.PlanWith(func(p Params) []engine.Step {
			return []engine.Step{s.secretStep("test", "Test the registry storage from the cluster", func(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, sec Secrets) error {
				return s.StorageTest(ctx, jc, c, p, sec)
			})}
		}),
	})
}

// secretStep is a step on the job's region run with its cluster and the job's registry secrets.
func (s *Service) secretStep(name, title string, run func(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, sec Secrets) error) engine.Step {
	return s.RegionStep(name, title, func(ctx context.Context, jc *engine.JobContext, _ *store.Region, c *kube.Cluster) error {
		sec, err := kit.DecodeSecret[Secrets](jc)
		if err != nil {
			return err
		}
		return run(ctx, jc, c, sec)
	})
}

// installSteps set up (or replace) the registry of an existing region.
func (s *Service) installSteps(p Params) []engine.Step {
	return []engine.Step{
		s.secretStep("storage", "Test the storage", func(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, sec Secrets) error {
			s.Record(s.Store.UpdateRegistry(ctx, jc.Job.Region(), store.RegistryUpdate{Status: store.Ptr(store.ComponentInstalling), Message: store.Ptr("")}))
			return s.StorageTest(ctx, jc, c, p, sec)
		}),
		s.secretStep("zot", "Install Zot", func(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, sec Secrets) error {
			return s.InstallZot(ctx, jc, c, p, sec)
		}),
		s.RegionStep("mirror", "Node mirror", func(ctx context.Context, jc *engine.JobContext, _ *store.Region, c *kube.Cluster) error {
			return s.InstallMirror(ctx, jc, c, p)
		}),
		s.RegionStep("prepull", "Pre-pull common images", func(ctx context.Context, jc *engine.JobContext, _ *store.Region, c *kube.Cluster) error {
			return s.Prepull(ctx, jc, c, p)
		}),
		s.secretStep("record", "Record the registry", func(ctx context.Context, jc *engine.JobContext, _ *kube.Cluster, sec Secrets) error {
			jc.Note("Registry %s at %s", p.Mode, p.Address())
			return s.Store.UpdateRegistry(ctx, jc.Job.Region(), store.RegistryUpdate{Mode: store.Ptr(p.Mode), Status: store.Ptr(store.ComponentReady), Message: store.Ptr(""),
				Config: store.Ptr(p.Config()), Secret: store.Ptr(p.SecretValue(sec)), Address: store.Ptr(p.Address())})
		}),
	}
}
