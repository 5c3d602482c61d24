package isolation

import (
	"context"
	"fmt"
	"slices"

	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/store"
)

// neighbourRuntime names another region on r's cluster that has runtime installed (or
// being installed), with its record: the runtime's node installers and RuntimeClasses are
// the cluster's, so the regions of one cluster share one install.
func (s *Service) neighbourRuntime(ctx context.Context, r *store.Region, runtime string) (string, store.SandboxRuntime, error) {
	rs, err := s.OtherRegionsOnCluster(ctx, r)
	if err != nil {
		return "", store.SandboxRuntime{}, err
	}
	for _, x := range rs {
		// A region that only shares it (its own record says so) is no owner of it.
		if rt := x.Isolation.V.Runtime(runtime); rt.State() != store.ComponentNotInstalled && rt.SharedWith == "" {
			return x.Name, rt, nil
		}
	}
	return "", store.SandboxRuntime{}, nil
}

// sameHypervisors reports whether two picks of Kata hypervisors are the same set.
func sameHypervisors(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// shareRuntime records the install of the region p.SharedWith as this region's too: its
// RuntimeClasses serve this region's workloads from now on.
func (s *Service) shareRuntime(p SandboxParams) func(ctx context.Context, jc *engine.JobContext, r *store.Region, _ *kube.Cluster) error {
	return func(ctx context.Context, jc *engine.JobContext, r *store.Region, _ *kube.Cluster) error {
		owner, rt, err := s.neighbourRuntime(ctx, r, p.Runtime)
		if err != nil {
			return err
		}
		if owner == "" || !rt.Ready() {
			return fmt.Errorf("%s of region %s is not ready on the cluster (any more): install it again", runtimeLabels[p.Runtime], p.SharedWith)
		}
		rt.SharedWith, rt.Message = owner, ""
		if err := s.Store.SetSandboxRuntime(ctx, r.ID, p.Runtime, rt); err != nil {
			return err
		}
		jc.Note("%s of region %s serves this region too (RuntimeClasses %s); it is managed from %s", runtimeLabels[p.Runtime], owner, kit.OrNoneList(rt.Classes), owner)
		return nil
	}
}

// HandOver gives the runtimes a removed region installed to a region that shared them
// (the first by name; the others share its install from then on): the install stays on
// the cluster, so someone must be able to remove it.
func (s *Service) HandOver(ctx context.Context, gone *store.Region) error {
	rs, err := s.OtherRegionsOnCluster(ctx, gone)
	if err != nil {
		return err
	}
	for _, runtime := range SandboxRuntimes {
		heir := ""
		for _, x := range rs {
			rt := x.Isolation.V.Runtime(runtime)
			if rt.SharedWith != gone.Name {
				continue
			}
			rt.SharedWith = heir
			if heir == "" {
				heir = x.Name
			}
			if err := s.Store.SetSandboxRuntime(ctx, x.ID, runtime, rt); err != nil {
				return fmt.Errorf("hand %s of %s over to %s: %w", runtime, gone.Name, heir, err)
			}
		}
		if heir != "" {
			s.Log.Info("sandbox runtime handed over", "runtime", runtime, "from", gone.Name, "to", heir)
		}
	}
	return nil
}
