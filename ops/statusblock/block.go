package statusblock

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/store"
)

// The status block of a region that is not active.
const (
	ResponderName = "runr-status-responder"
	// StatusHeader tells the responder which answer to give.
	StatusHeader = "X-Runr-Region-Status"
	// blockPriority puts the block in front of every Knative route.
	blockPriority = 1000000
)

// BlockName is the IngressRoute (and Middleware) of a region's status block.
func BlockName(region string) string { return "runr-region-block-" + region }

// BlockDomains are the domains a region answers under: its function domain and, during a
// base-domain migration, the domain it moves to.
func BlockDomains(r *store.Region) []string {
	var domains []string
	if d := r.Settings.V.KnativeDomain; d != "" {
		domains = append(domains, d)
	}
	if t := r.DomainMigrationTarget; t != "" && r.DomainMigrationStatus != "" {
		domains = append(domains, t)
	}
	return domains
}

// Hosts are what a region's block matches: every host under its domains, and the exact
// hosts of its Knative Services and DomainMappings outside them (a tenant's own base
// domain, a project's custom domain).
type Hosts struct {
	Domains []string
	Exact   []string
}

// Empty says the region answers on no host yet.
func (h Hosts) Empty() bool { return len(h.Domains) == 0 && len(h.Exact) == 0 }

// all lists the domains and hosts for a note.
func (h Hosts) all() string {
	return strings.Join(append(append([]string{}, h.Domains...), h.Exact...), ", ")
}

// covered says whether a host is under one of the domains.
func (h Hosts) covered(host string) bool {
	for _, d := range h.Domains {
		if host == d || strings.HasSuffix(host, "."+d) {
			return true
		}
	}
	return false
}

var gvrKService = schema.GroupVersionResource{Group: "serving.knative.dev", Version: "v1", Resource: "services"}

var gvrDomainMapping = schema.GroupVersionResource{Group: "serving.knative.dev", Version: "v1beta1", Resource: "domainmappings"}

// RegionHosts reads from the cluster the hosts a region answers on: its domains, the
// hosts of the Knative Services labelled with the region (their status.url, as Knative
// Serving reports it) and the DomainMappings beside them or labelled with the region.
func RegionHosts(ctx context.Context, c *kube.Cluster, r *store.Region) (Hosts, error) {
	h := Hosts{Domains: BlockDomains(r)}
	selector := metav1.ListOptions{LabelSelector: "runr.dev/region=" + r.Name}
	services, err := c.Dynamic.Resource(gvrKService).Namespace("").List(ctx, selector)
	if err != nil && !apierrors.IsNotFound(err) {
		return h, fmt.Errorf("list the Knative Services of region %s: %w", r.Name, err)
	}
	found := map[string]bool{}
	namespaces := map[string]bool{r.Name: true}
	add := func(host string) {
		host = strings.ToLower(strings.TrimSuffix(host, "."))
		if host != "" && !found[host] && !h.covered(host) {
			found[host] = true
			h.Exact = append(h.Exact, host)
		}
	}
	if services != nil {
		for _, ks := range services.Items {
			namespaces[ks.GetNamespace()] = true
			raw, _, _ := unstructured.NestedString(ks.Object, "status", "url")
			if u, err := url.Parse(raw); err == nil {
				add(u.Hostname())
			}
		}
	}
	mappings, err := c.Dynamic.Resource(gvrDomainMapping).Namespace("").List(ctx, metav1.ListOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return h, fmt.Errorf("list the DomainMappings of region %s: %w", r.Name, err)
	}
	if mappings != nil {
		for _, m := range mappings.Items {
			if namespaces[m.GetNamespace()] || m.GetLabels()["runr.dev/region"] == r.Name {
				add(m.GetName())
			}
		}
	}
	sort.Strings(h.Exact)
	return h, nil
}

// BlockRule is the Traefik rule that matches every host under the domains and each
// exact host.
func BlockRule(h Hosts) string {
	var parts []string
	for _, d := range h.Domains {
		parts = append(parts, fmt.Sprintf("HostRegexp(`^(.+\\.)?%s$`)", regexp.QuoteMeta(d)))
	}
	for _, host := range h.Exact {
		parts = append(parts, fmt.Sprintf("Host(`%s`)", host))
	}
	return strings.Join(parts, " || ")
}

// AppliedRule is the rule of a region's block on the cluster ("" when it has none).
func AppliedRule(ctx context.Context, c *kube.Cluster, r *store.Region) (string, error) {
	o, found, err := c.Get(ctx, kube.GVKIngressRoute, r.ServingNamespace, BlockName(r.Name))
	if err != nil || !found {
		return "", err
	}
	routes, _, _ := unstructured.NestedSlice(o.Object, "spec", "routes")
	if len(routes) == 0 {
		return "", nil
	}
	m, _ := routes[0].(map[string]any)
	match, _ := m["match"].(string)
	return match, nil
}

// ApplyBlock puts the status responder in front of a region that is not active: the
// responder (shared by the cluster's regions) and, per region, a Middleware that names
// the status and the IngressRoutes at the highest priority for HTTP and HTTPS.
func (s *Service) ApplyBlock(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, r *store.Region) error {
	ns := r.ServingNamespace
	hosts, err := RegionHosts(ctx, c, r)
	if err != nil {
		return err
	}
	if hosts.Empty() {
		jc.Note("Region %s has no function domain yet: nothing to block", r.Name)
		return nil
	}
	if err := s.ensureResponder(ctx, jc, c, ns); err != nil {
		return err
	}
	name := BlockName(r.Name)
	labels := map[string]any{"app.kubernetes.io/managed-by": "runr", "runr.dev/region": r.Name, "runr.dev/block": "true"}
	mw := map[string]any{"apiVersion": "traefik.io/v1alpha1", "kind": "Middleware",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": labels},
		"spec":     map[string]any{"headers": map[string]any{"customRequestHeaders": map[string]any{StatusHeader: r.Status}}}}
	route := func(suffix string, entry string, tls bool) map[string]any {
		spec := map[string]any{
			"entryPoints": []any{entry},
			"routes": []any{map[string]any{
				"kind": "Rule", "match": BlockRule(hosts), "priority": blockPriority,
				"middlewares": []any{map[string]any{"name": name}},
				"services":    []any{map[string]any{"name": ResponderName, "port": 80}},
			}},
		}
		if tls {
			spec["tls"] = map[string]any{}
		}
		return map[string]any{"apiVersion": "traefik.io/v1alpha1", "kind": "IngressRoute",
			"metadata": map[string]any{"name": name + suffix, "namespace": ns, "labels": labels}, "spec": spec}
	}
	// One IngressRoute per entry point: HTTPS (with TLS) and HTTP.
	for _, o := range []map[string]any{mw, route("", "websecure", true), route("-http", "web", false)} {
		if _, err := c.ApplyObject(ctx, o); err != nil {
			return err
		}
	}
	jc.Note("Region %s has status %s: requests to %s get the status responder's answer", r.Name, r.Status, hosts.all())
	return nil
}

func (s *Service) ensureResponder(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, ns string) error {
	image, err := s.JobImage(ctx, jc, s.Cfg.ResponderImage)
	if err != nil {
		return err
	}
	labels := map[string]any{"app.kubernetes.io/name": ResponderName, "app.kubernetes.io/managed-by": "runr"}
	objs := []map[string]any{
		{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": ResponderName, "namespace": ns, "labels": labels},
			"spec": map[string]any{
				"replicas": 1,
				"selector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": ResponderName}},
				"template": map[string]any{"metadata": map[string]any{"labels": labels}, "spec": map[string]any{
					"securityContext": kit.UnprivilegedPod(),
					"containers": []any{map[string]any{
						"name": "responder", "image": image, "args": []any{"responder"}, "securityContext": kit.UnprivilegedContainer(),
						"ports":     []any{map[string]any{"name": "http", "containerPort": 8080}},
						"resources": map[string]any{"requests": map[string]any{"cpu": "10m", "memory": "16Mi"}, "limits": map[string]any{"memory": "64Mi"}},
					}},
				}},
			}},
		{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": ResponderName, "namespace": ns, "labels": labels},
			"spec": map[string]any{"selector": map[string]any{"app.kubernetes.io/name": ResponderName},
				"ports": []any{map[string]any{"name": "http", "port": 80, "targetPort": "http"}}}},
	}
	for _, o := range objs {
		if _, err := c.ApplyObject(ctx, o); err != nil {
			return err
		}
	}
	return jc.Wait(ctx, "Deployment "+ns+"/"+ResponderName+" to be available", engine.WaitOpts{}, c.DeploymentAvailable(ns, ResponderName))
}

var ingressRouteGVR = schema.GroupVersionResource{Group: "traefik.io", Version: "v1alpha1", Resource: "ingressroutes"}

// RemoveBlock removes a region's status block, and the responder once no region of the
// cluster is blocked.
func (s *Service) RemoveBlock(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, r *store.Region) error {
	ns := r.ServingNamespace
	name := BlockName(r.Name)
	if err := c.Delete(ctx, kube.GVKIngressRoute, ns, name); err != nil {
		return err
	}
	if err := c.Delete(ctx, kube.GVKIngressRoute, ns, name+"-http"); err != nil {
		return err
	}
	if err := c.Delete(ctx, kube.GVKMiddleware, ns, name); err != nil {
		return err
	}
	blocked, err := c.Dynamic.Resource(ingressRouteGVR).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: "runr.dev/block=true"})
	if err == nil && len(blocked.Items) == 0 {
		if err := c.Clientset.AppsV1().Deployments(ns).Delete(ctx, ResponderName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete Deployment %s/%s: %w", ns, ResponderName, err)
		}
		if err := c.Clientset.CoreV1().Services(ns).Delete(ctx, ResponderName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete Service %s/%s: %w", ns, ResponderName, err)
		}
	}
	jc.Note("Region %s is active: its status block is removed; the project pods kept running", r.Name)
	return nil
}

// KindRegionStatus applies a region's status to its cluster (the block, or its removal).
const KindRegionStatus = "region-status"

func (s *Service) registerKinds() {
	s.Engine.Register(&engine.Kind{Name: KindRegionStatus, Plan: func(jc *engine.JobContext) ([]engine.Step, error) {
		return []engine.Step{s.RegionStep("block", "Status block", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
			if r.ServingStatus != store.ComponentReady {
				jc.Note("Knative Serving is not ready: the block is applied when it is")
				return engine.ErrSkip
			}
			if r.Status == store.RegionActive {
				return s.RemoveBlock(ctx, jc, c, r)
			}
			return s.ApplyBlock(ctx, jc, c, r)
		})}, nil
	}})
}
