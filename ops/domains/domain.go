package domains

import (
	"context"

	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/store"
)

// KindSetDomain gives a region its function domain on the cluster.
const KindSetDomain = "set-domain"

// DomainParams name a function domain.
type DomainParams struct {
	Domain string `json:"domain"`
	Old    string `json:"old,omitempty"`
}

func (s *Service) registerDomainKinds() {
	s.Engine.Register(&engine.Kind{Name: KindSetDomain, Plan: engine.PlanWith(func(p DomainParams) []engine.Step {
		return []engine.Step{s.RegionStep("domain", "Function domain in Knative's configuration", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
			if r.ServingStatus == store.ComponentReady {
				if err := SetDomain(ctx, c, r.ServingNamespace, r.Name, p.Domain, p.Old); err != nil {
					return err
				}
			}
			settings := r.Settings.V
			settings.KnativeDomain = p.Domain
			if p.Domain == "" {
				jc.Note("Region %s has no function domain any more", r.Name)
			} else {
				jc.Note("Region %s answers on %s", r.Name, p.Domain)
			}
			return s.Store.SetRegionSettings(ctx, r.ID, settings)
		})}
	})})
}

// domainSelector maps a function domain to the region's Knative Services in Knative's
// domain configuration.
func domainSelector(region string) string { return "selector:\n  runr.dev/region: " + region + "\n" }

// SetDomain adds (or removes, when domain is "") the region's function domain in the
// KnativeServing's domain configuration.
func SetDomain(ctx context.Context, c *kube.Cluster, ns, region, domain, old string) error {
	patch := map[string]any{}
	if old != "" && old != domain {
		patch[old] = nil
	}
	if domain != "" {
		patch[domain] = domainSelector(region)
	}
	if len(patch) == 0 {
		return nil
	}
	return c.MergePatch(ctx, kube.GVKKnativeServing, ns, kit.KnativeServingName, map[string]any{"spec": map[string]any{"config": map[string]any{"domain": patch}}})
}
