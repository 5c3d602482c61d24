package domains

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/problem"
	"runr.dev/console/store"
)

// KindDomainMigration moves a region to a new base domain (or ends such a move).
const KindDomainMigration = "domain-migration"

// AliasName is the proxy that serves a region's projects on the domain it moves to.
const AliasName = "runr-domain-alias"

// DomainMigrationParams say what to do with a region's domain migration.
type DomainMigrationParams struct {
	Op     string `json:"op"` // start | move | end | complete
	Target string `json:"target,omitempty"`
}

// BaseDomainChanged brings every region that follows the base domain along: the first
// base domain gives function domains, a change starts (or moves, or ends) a domain
// migration, a cleared one removes the function domain.
func (s *Service) BaseDomainChanged(ctx context.Context, old, next, by string) error {
	regions, err := s.Store.ListRegions(ctx, store.RegionFilter{}, false)
	if err != nil {
		return err
	}
	for i := range regions {
		r := &regions[i]
		kd := r.Settings.V.KnativeDomain
		migrating := r.DomainMigrationStatus != ""
		follows := kd == "" || (old != "" && kd == r.Name+"."+old) || migrating
		if !follows {
			continue
		}
		var req *engine.Request
		switch {
		case next == "":
			if migrating {
				req = &engine.Request{Params: DomainMigrationParams{Op: "end"}}
				if _, err := s.enqueueDomain(ctx, r, *req, by); err != nil {
					return err
				}
			}
			if kd != "" {
				req = &engine.Request{Kind: KindSetDomain, Title: "Remove the function domain of " + r.Name, Params: DomainParams{Domain: "", Old: kd}}
			} else {
				req = nil
			}
		case kd == "":
			if r.ServingStatus == store.ComponentReady {
				req = &engine.Request{Kind: KindSetDomain, Title: "Function domain of " + r.Name, Params: DomainParams{Domain: r.Name + "." + next}}
			}
		case migrating && kd == r.Name+"."+next:
			// Back to the old base domain: the migration ends, the region keeps its domain.
			req = &engine.Request{Params: DomainMigrationParams{Op: "end"}}
		case migrating:
			req = &engine.Request{Params: DomainMigrationParams{Op: "move", Target: r.Name + "." + next}}
		case kd != r.Name+"."+next:
			req = &engine.Request{Params: DomainMigrationParams{Op: "start", Target: r.Name + "." + next}}
		}
		if req == nil {
			continue
		}
		if _, err := s.enqueueDomain(ctx, r, *req, by); err != nil {
			return err
		}
	}
	return nil
}

func (s *Service) enqueueDomain(ctx context.Context, r *store.Region, req engine.Request, by string) (*store.Job, error) {
	if req.Kind == "" {
		req.Kind = KindDomainMigration
		p := req.Params.(DomainMigrationParams)
		req.Title = fmt.Sprintf("Domain migration of %s: %s %s", r.Name, p.Op, p.Target)
	}
	req.Subject, req.CreatedBy = r.ID, by
	return s.Enqueue(ctx, req)
}

// SetBaseDomain saves the platform's base domain ("" clears it) and brings the regions
// that follow it along.
func (s *Service) SetBaseDomain(ctx context.Context, actor kit.Actor, domain string) error {
	next := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(domain)), ".")
	if m := kit.ValidateDomain(next); m != "" {
		return &problem.Invalid{Fields: map[string]string{"base_domain": m}}
	}
	old, err := s.Store.BaseDomain(ctx)
	if err != nil {
		return fmt.Errorf("set the base domain: %w", err)
	}
	if old == next {
		return nil
	}
	if err := s.Store.SetSetting(ctx, "base_domain", next); err != nil {
		return fmt.Errorf("set the base domain: %w", err)
	}
	s.Log.Info("base domain changed", "from", old, "to", next, "user", actor.Email)
	if err := s.BaseDomainChanged(ctx, old, next, actor.Email); err != nil {
		return fmt.Errorf("base domain %s: %w", next, err)
	}
	return nil
}

// CompleteDomainMigration makes the domain a region moves to its function domain, once
// the migration waits for DNS (dns_check).
func (s *Service) CompleteDomainMigration(ctx context.Context, actor kit.Actor, r *store.Region) (*store.Job, error) {
	if r.DomainMigrationStatus != store.MigrationDNSCheck {
		return nil, &problem.Refused{Reason: "The region has no domain migration to complete."}
	}
	return s.enqueueDomain(ctx, r, engine.Request{Params: DomainMigrationParams{Op: "complete", Target: r.DomainMigrationTarget}}, actor.Email)
}

func aliasRule(domain string) string {
	return fmt.Sprintf("HostRegexp(`^.+\\.%s$`)", regexp.QuoteMeta(domain))
}

// applyAlias runs the proxy that sends every <project>.<target> to the project's Knative
// Service (under the function domain), with its IngressRoutes.
func (s *Service) applyAlias(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, r *store.Region, target string) error {
	ns := r.Name
	if _, err := kit.EnsureNamespace(ctx, jc, c, ns, map[string]string{"runr.dev/region": r.Name}); err != nil {
		return err
	}
	image, err := s.RegionImage(ctx, r, s.Cfg.AgentImage)
	if err != nil {
		return err
	}
	labels := map[string]any{"app.kubernetes.io/name": AliasName, "app.kubernetes.io/managed-by": "runr"}
	upstream := "http://" + kit.TraefikRelease + "." + r.ServingNamespace + ".svc"
	route := func(suffix, entry string, tls bool) map[string]any {
		spec := map[string]any{"entryPoints": []any{entry}, "routes": []any{map[string]any{
			"kind": "Rule", "match": aliasRule(target),
			"services": []any{map[string]any{"name": AliasName, "port": 80}}}}}
		if tls {
			spec["tls"] = map[string]any{}
		}
		return map[string]any{"apiVersion": "traefik.io/v1alpha1", "kind": "IngressRoute",
			"metadata": map[string]any{"name": AliasName + suffix, "namespace": ns, "labels": labels}, "spec": spec}
	}
	objs := []map[string]any{
		{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": AliasName, "namespace": ns, "labels": labels},
			"spec": map[string]any{
				"replicas": 2,
				"selector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": AliasName}},
				"template": map[string]any{"metadata": map[string]any{"labels": labels}, "spec": map[string]any{
					"securityContext": kit.UnprivilegedPod(),
					"containers": []any{map[string]any{
						"name": "alias", "image": image, "securityContext": kit.UnprivilegedContainer(),
						"args":      []any{"domain-alias", "--from", target, "--to", r.Settings.V.KnativeDomain, "--upstream", upstream},
						"ports":     []any{map[string]any{"name": "http", "containerPort": 8080}},
						"resources": map[string]any{"requests": map[string]any{"cpu": "10m", "memory": "32Mi"}, "limits": map[string]any{"memory": "128Mi"}},
					}},
				}},
			}},
		{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": AliasName, "namespace": ns, "labels": labels},
			"spec": map[string]any{"selector": map[string]any{"app.kubernetes.io/name": AliasName},
				"ports": []any{map[string]any{"name": "http", "port": 80, "targetPort": "http"}}}},
		route("", "websecure", true),
		route("-http", "web", false),
	}
	for _, o := range objs {
		if _, err := c.ApplyObject(ctx, o); err != nil {
			return err
		}
	}
	if err := jc.Wait(ctx, "Deployment "+ns+"/"+AliasName+" to be available", engine.WaitOpts{}, c.DeploymentAvailable(ns, AliasName)); err != nil {
		return err
	}
	jc.Note("Region %s also answers on %s: create the wildcard record *.%s → %s", r.Name, target, target, r.ExternalIP)
	return nil
}

func (s *Service) removeAlias(ctx context.Context, c *kube.Cluster, ns string) error {
	for _, n := range []string{AliasName, AliasName + "-http"} {
		if err := c.Delete(ctx, kube.GVKIngressRoute, ns, n); err != nil {
			return err
		}
	}
	if err := c.Clientset.AppsV1().Deployments(ns).Delete(ctx, AliasName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Deployment %s/%s: %w", ns, AliasName, err)
	}
	if err := c.Clientset.CoreV1().Services(ns).Delete(ctx, AliasName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Service %s/%s: %w", ns, AliasName, err)
	}
	return nil
}

func (s *Service) registerBaseDomainKinds() {
	s.Engine.Register(&engine.Kind{Name: KindDomainMigration, Plan: engine.PlanWith(func(p DomainMigrationParams) []engine.Step {
		return []engine.Step{
			s.RegionStep("alias", "Alias of the new domain", s.domainMoveAlias(p)),
			s.RegionStep("domain", "Knative's domain configuration", s.domainMoveDomain(p)),
			s.RegionStep("record", "Record", s.domainMoveRecord(p)),
		}
	})})
}

// domainMoveAlias is the step "alias" (Alias of the new domain) of registerBaseDomainKinds.
func (s *Service) domainMoveAlias(p DomainMigrationParams) kit.RegionRun {
	return func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
		switch p.Op {
		case "start", "move":
			if r.ServingStatus != store.ComponentReady {
				jc.Note("Knative Serving is not ready: the alias waits for it")
				return engine.ErrSkip
			}
			return s.applyAlias(ctx, jc, c, r, p.Target)
		default:
			if err := s.removeAlias(ctx, c, r.Name); err != nil {
				return err
			}
			jc.Note("The alias is removed")
			return nil
		}
	}
}

// domainMoveDomain is the step "domain" (Knative's domain configuration) of registerBaseDomainKinds.
func (s *Service) domainMoveDomain(p DomainMigrationParams) kit.RegionRun {
	return func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
		if p.Op != "complete" {
			return engine.ErrSkip
		}
		if r.ServingStatus == store.ComponentReady {
			if err := SetDomain(ctx, c, r.ServingNamespace, r.Name, p.Target, r.Settings.V.KnativeDomain); err != nil {
				return err
			}
		}
		if r.FunctionTLSCert != "" {
			// A certificate of both domains keeps serving; one of the old domain only is
			// replaced: Traefik's default certificate answers until one of the new is uploaded.
			if _, errs := kit.CheckCertificate(r.FunctionTLSCert, r.FunctionTLSKey, p.Target, time.Now()); errs != nil {
				jc.Warnf("The region's certificate does not cover *.%s: it is removed, and Traefik answers HTTPS with its default certificate until you upload one that does (General → Function-domain TLS)", p.Target)
				if err := s.RemoveFunctionTLS(ctx, jc, c, r); err != nil {
					return fmt.Errorf("remove the certificate of the old domain: %w", err)
				}
			} else {
				jc.Logf("The region's certificate covers *.%s too: it keeps serving", p.Target)
			}
		}
		jc.Note("Knative serves %s; %s is no longer served", p.Target, r.Settings.V.KnativeDomain)
		return nil
	}
}

// domainMoveRecord is the step "record" (Record) of registerBaseDomainKinds.
func (s *Service) domainMoveRecord(p DomainMigrationParams) kit.RegionRun {
	return func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
		status, target := store.MigrationNone, ""
		switch p.Op {
		case "start", "move":
			status, target = store.MigrationDNSCheck, p.Target
		case "complete":
			settings := r.Settings.V
			settings.KnativeDomain = p.Target
			if err := s.Store.SetRegionSettings(ctx, r.ID, settings); err != nil {
				return err
			}
		}
		if err := s.Store.SetDomainMigration(ctx, r.ID, status, target); err != nil {
			return err
		}
		if r.Status != store.RegionActive && r.ServingStatus == store.ComponentReady {
			now, err := s.Store.RegionByID(ctx, r.ID)
			if err != nil {
				return err
			}
			// The block covers the hosts the region answers on now.
			return s.StatusBlock.ApplyBlock(ctx, jc, c, now)
		}
		jc.Note("Domain migration: %s", map[string]string{"start": "started", "move": "moved on", "end": "ended", "complete": "completed"}[p.Op])
		return nil
	}
}

// CompleteDomainMigrations completes the domain migrations whose new domain's DNS
// reaches the region's external address.
func (s *Service) CompleteDomainMigrations(ctx context.Context) {
	rs, err := s.Store.ListRegions(ctx, store.RegionFilter{}, false)
	if err != nil {
		return
	}
	for i := range rs {
		r := &rs[i]
		if r.DomainMigrationStatus != store.MigrationDNSCheck || r.DomainMigrationTarget == "" || r.ExternalIP == "" {
			continue
		}
		if _, err := s.Store.ActiveJob(ctx, r.ID, KindDomainMigration); err == nil {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, s.Cfg.StatusTimeout)
		ok, _, err := (&Resolver{Server: s.Cfg.DNSResolver}).DNSCheck(cctx, r.DomainMigrationTarget, r.ExternalIP)
		cancel()
		if err == nil && ok {
			if _, err := s.CompleteDomainMigration(ctx, kit.Actor{Email: "status check"}, r); err != nil {
				s.Log.Warn("complete domain migration", "region", r.Name, "err", err)
			}
		}
	}
}
