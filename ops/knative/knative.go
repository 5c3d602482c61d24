package knative

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"runr.dev/console/engine"
	"runr.dev/console/helm"
	"runr.dev/console/kube"
	"runr.dev/console/ops/domains"
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/observability"
	"runr.dev/console/ops/registry"
	"runr.dev/console/ops/statusblock"
	"runr.dev/console/problem"
	"runr.dev/console/store"
)

// Knative names on the cluster.
const (
	OperatorRelease = "knative-operator"
	ServingCRD      = "knativeservings.operator.knative.dev"
	// TraefikIngressClass is Knative's ingress class for Traefik's Knative provider.
	TraefikIngressClass = "traefik.ingress.networking.knative.dev"
	// MaxRevisionTimeoutDefault is Knative's own max-revision-timeout-seconds.
	MaxRevisionTimeoutDefault = 600
)

// Job kinds of Knative's lifecycle.
const (
	KindInstallOperator   = "install-operator"
	KindInstallServing    = "install-serving"
	KindInstallKnative    = "install-knative"
	KindUpgradeServing    = "upgrade-serving"
	KindUninstallServing  = "uninstall-serving"
	KindUninstallOperator = "uninstall-operator"
	KindUninstallKnative  = "uninstall-knative"
)

// OperatorParams are the fields of an operator install.
type OperatorParams struct {
	Namespace string `json:"namespace"`
	Version   string `json:"version,omitempty"`
}

// ServingParams are the fields of a Serving install or upgrade.
type ServingParams struct {
	Namespace     string `json:"namespace"`
	Version       string `json:"version"`
	RemoveTraefik bool   `json:"remove_traefik,omitempty"`
	// IngressMode is how Traefik is reached: IngressLoadBalancer or IngressHostNetwork
	// ("" keeps what the cluster's Traefik release has, else a LoadBalancer).
	IngressMode string `json:"ingress_mode,omitempty"`
}

var servingCRDNames = []string{"services.serving.knative.dev", "configurations.serving.knative.dev", "revisions.serving.knative.dev",
	"routes.serving.knative.dev", "domainmappings.serving.knative.dev", "ingresses.networking.internal.knative.dev",
	"certificates.networking.internal.knative.dev", "serverlessservices.networking.internal.knative.dev",
	"podautoscalers.autoscaling.internal.knative.dev", "metrics.autoscaling.internal.knative.dev", "images.caching.internal.knative.dev",
	"clusterdomainclaims.networking.internal.knative.dev"}

var operatorCRDNames = []string{ServingCRD, "knativeeventings.operator.knative.dev"}

// runningOperator finds a Knative Operator whose Deployments are available and whose
// KnativeServing CRD is registered; it returns its namespace and version. The chart labels
// both of its Deployments app.kubernetes.io/name=knative-operator; the webhook's also
// carries app.kubernetes.io/component=operator-webhook, the operator's none (knative/operator,
// config/charts/knative-operator/templates/operator.yaml).
func runningOperator(ctx context.Context, c *kube.Cluster) (ns, version string, ok bool, err error) {
	ds, err := c.Clientset.AppsV1().Deployments("").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=knative-operator"})
	if err != nil {
		return "", "", false, fmt.Errorf("list Deployments: %w", err)
	}
	type found struct {
		operator *appsv1.Deployment
		ready    bool
	}
	byNS := map[string]*found{}
	for i := range ds.Items {
		d := &ds.Items[i]
		f := byNS[d.Namespace]
		if f == nil {
			f = &found{ready: true}
			byNS[d.Namespace] = f
		}
		if r, _ := kube.DeploymentReady(d); !r {
			f.ready = false
		}
		if d.Labels["app.kubernetes.io/component"] == "" {
			f.operator = d
		}
	}
	for ns, f := range byNS {
		if f.operator == nil || !f.ready {
			continue
		}
		if done, _, _ := c.CRDEstablished(ServingCRD)(ctx); !done {
			return "", "", false, nil
		}
		return ns, strings.TrimPrefix(f.operator.Labels["app.kubernetes.io/version"], "v"), true, nil
	}
	return "", "", false, nil
}

// knativeServings lists the KnativeServing resources of the cluster (none without the CRD).
func knativeServings(ctx context.Context, c *kube.Cluster) ([]unstructured.Unstructured, error) {
	if done, _, _ := c.CRDEstablished(ServingCRD)(ctx); !done {
		return nil, nil
	}
	gvr := schema.GroupVersionResource{Group: "operator.knative.dev", Version: "v1beta1", Resource: "knativeservings"}
	l, err := c.Dynamic.Resource(gvr).Namespace("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list KnativeServings: %w", err)
	}
	return l.Items, nil
}

// readyServing returns a Ready KnativeServing of the cluster, if any.
func readyServing(ctx context.Context, c *kube.Cluster) (*unstructured.Unstructured, error) {
	l, err := knativeServings(ctx, c)
	if err != nil {
		return nil, err
	}
	for i := range l {
		if ok, _ := kube.ReadyCondition(&l[i]); ok {
			return &l[i], nil
		}
	}
	return nil, nil
}

// servingReported reads the Serving version the operator reports on the KnativeServing.
func servingReported(ctx context.Context, c *kube.Cluster, ns string) (string, error) {
	o, found, err := c.Get(ctx, kube.GVKKnativeServing, ns, kit.KnativeServingName)
	if err != nil {
		return "", err
	}
	if !found {
		return "", fmt.Errorf("KnativeServing %s/%s is gone", ns, kit.KnativeServingName)
	}
	return ServingVersion(o), nil
}

// ServingVersion is the version a KnativeServing reports.
func ServingVersion(o *unstructured.Unstructured) string {
	v, _, _ := unstructured.NestedString(o.Object, "status", "version")
	return v
}

// ServingReadyAt waits for the KnativeServing to report Ready at a version.
func ServingReadyAt(c *kube.Cluster, ns, version string) kube.Cond {
	return c.ResourceJudged(kube.GVKKnativeServing, ns, kit.KnativeServingName, func(o *unstructured.Unstructured) (bool, string, error) {
		ready, msg := kube.ReadyCondition(o)
		got := ServingVersion(o)
		if ready && MinorOf(got) == MinorOf(version) {
			return true, "Ready at " + got, nil
		}
		if got != "" && MinorOf(got) != MinorOf(version) {
			return false, fmt.Sprintf("the operator reports %s, not yet %s", got, version), nil
		}
		return false, msg, nil
	})
}

// adoptOperator records an operator that already runs on the cluster as the region's
// (adopted: the console did not install it); without one, the region's operator is the
// one the console installs next.
func (s *Service) adoptOperator(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, r *store.Region) (bool, error) {
	ns, ver, ok, err := runningOperator(ctx, c)
	if err != nil {
		return false, err
	}
	if !ok {
		return false, s.Store.UpdateOperator(ctx, r.ID, store.OperatorUpdate{Adopted: store.Ptr(false)})
	}
	if err := s.Store.UpdateOperator(ctx, r.ID, store.OperatorUpdate{Status: store.Ptr(store.ComponentReady), Namespace: store.Ptr(ns), Version: store.Ptr(ver), Adopted: store.Ptr(true)}); err != nil {
		return false, err
	}
	jc.Logf("Adopted the Knative Operator %s running in %s", ver, ns)
	return true, nil
}

// adoptServing records a Ready KnativeServing that already runs on the cluster as the
// region's.
func (s *Service) adoptServing(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, r *store.Region) (bool, error) {
	ks, err := readyServing(ctx, c)
	if err != nil || ks == nil {
		return false, err
	}
	if err := s.Store.UpdateServing(ctx, r.ID, store.ServingUpdate{Status: store.Ptr(store.ComponentReady), Namespace: store.Ptr(ks.GetNamespace()), Version: store.Ptr(ServingVersion(ks)), Adopted: store.Ptr(true), Message: store.Ptr("")}); err != nil {
		return false, err
	}
	jc.Logf("Adopted the Ready KnativeServing %s/%s (Knative %s)", ks.GetNamespace(), ks.GetName(), ServingVersion(ks))
	return true, nil
}

// DefaultVersion picks the newest compatible Knative version of the region's cluster.
func (s *Service) DefaultVersion(ctx context.Context, c *kube.Cluster) (*Version, error) {
	v, err := c.ServerVersion(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the cluster's version: %w", err)
	}
	vs, err := s.CompatibleVersions(ctx, kube.Minor(v))
	if err != nil {
		return nil, err
	}
	if len(vs) == 0 {
		return nil, fmt.Errorf("no Knative version supports Kubernetes %s with the charts available", v.GitVersion)
	}
	return &vs[0], nil
}

// ChartFor returns the offered Knative minor of a version: its operator chart and the
// Serving release that chart installs.
func (s *Service) ChartFor(ctx context.Context, c *kube.Cluster, version string) (*Version, error) {
	v, err := c.ServerVersion(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the cluster's version: %w", err)
	}
	vs, err := s.CompatibleVersions(ctx, kube.Minor(v))
	if err != nil {
		return nil, err
	}
	for i := range vs {
		if vs[i].Minor == MinorOf(version) {
			return &vs[i], nil
		}
	}
	return nil, fmt.Errorf("Knative %s is not offered for Kubernetes %s (see compatible-versions)", MinorOf(version), v.GitVersion)
}

// OperatorSteps are the steps of a Knative Operator install.
func (s *Service) OperatorSteps(p OperatorParams) []engine.Step {
	return []engine.Step{
		s.RegionStep("adopt", "Adopt a running operator", s.operatorAdopt),
		s.operatorStep("crds", "Knative Serving CRDs", p, func(ctx context.Context, jc *engine.JobContext, _ *store.Region, c *kube.Cluster, kv *Version) error {
			return s.applyServingCRDs(ctx, jc, c, kv.ServingVersion)
		}),
		s.operatorStep("operator", "Install the Knative Operator", p, func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster, kv *Version) error {
			return s.installOperator(ctx, jc, r, c, p, kv)
		}),
	}
}

// operatorAdopt is the step "adopt" (Adopt a running operator) of operatorSteps.
func (s *Service) operatorAdopt(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	s.Record(s.Store.UpdateOperator(ctx, jc.Job.Region(), store.OperatorUpdate{Status: store.Ptr(store.ComponentInstalling)}))
	op, err := s.adoptOperator(ctx, jc, c, r)
	if err != nil {
		return err
	}
	sv := false
	if op {
		if sv, err = s.adoptServing(ctx, jc, c, r); err != nil {
			return err
		}
	}
	if !op {
		jc.Note("No working Knative Operator on the cluster: installing one")
		return engine.ErrSkip
	}
	if sv {
		jc.Note("Adopted the running operator and a Ready KnativeServing")
	} else {
		jc.Note("Adopted the running operator")
	}
	return nil
}

// operatorStep is a step of an operator install on the job's region: skipped when the
// region adopted a running operator, else run with the offered Knative minor to install.
func (s *Service) operatorStep(name, title string, p OperatorParams, run func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster, kv *Version) error) engine.Step {
	return s.RegionStep(name, title, func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
		if r.OperatorAdopted {
			return skipAdopted(jc)
		}
		ver, err := s.operatorVersion(ctx, c, p)
		if err != nil {
			return err
		}
		kv, err := s.ChartFor(ctx, c, ver)
		if err != nil {
			return err
		}
		return run(ctx, jc, r, c, kv)
	})
}

// installOperator installs (or upgrades in place) the Knative Operator's release of the
// offered minor kv and waits for the KnativeServing CRD.
func (s *Service) installOperator(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster, p OperatorParams, kv *Version) error {
	chart := ChartKnativeOperator
	chart.Version = kv.ChartVersion
	prev, err := helm.Status(c, p.Namespace, OperatorRelease)
	if err != nil {
		return err
	}
	if prev != nil {
		// Its CRDs (KnativeServing, KnativeEventing) are part of the release: an
		// uninstall would delete every KnativeServing with them.
		jc.Logf("The previous operator release (%s) is upgraded in place, not uninstalled: its CRDs belong to the release, and removing them would delete every KnativeServing", prev.Info.Status)
	}
	// TakeOwnership adopts operator CRDs left on the cluster without Helm's labels.
	rel, err := s.HelmApply(ctx, jc, c, kit.Release{Namespace: p.Namespace, Name: OperatorRelease, Chart: chart, Values: OperatorValues(),
		TakeOwnership: true, Repair: prev != nil})
	if err != nil {
		return err
	}
	if err := kit.WaitRelease(ctx, jc, c, rel, engine.WaitOpts{}); err != nil {
		return err
	}
	if err := jc.Wait(ctx, "CRD "+ServingCRD+" to be established", engine.WaitOpts{}, c.CRDEstablished(ServingCRD)); err != nil {
		return err
	}
	jc.Note("Knative Operator %s runs in %s (it installs Knative Serving %s)", chart.Version, p.Namespace, kv.ServingVersion)
	return s.Store.UpdateOperator(ctx, r.ID, store.OperatorUpdate{Status: store.Ptr(store.ComponentReady), Namespace: store.Ptr(p.Namespace), Version: store.Ptr(chart.Version)})
}

func skipAdopted(jc *engine.JobContext) error {
	jc.Note("Adopted what runs: nothing to install")
	return engine.ErrSkip
}

func (s *Service) operatorVersion(ctx context.Context, c *kube.Cluster, p OperatorParams) (string, error) {
	if p.Version != "" {
		return MinorOf(p.Version), nil
	}
	v, err := s.DefaultVersion(ctx, c)
	if err != nil {
		return "", err
	}
	return v.Version, nil
}

// applyServingCRDs applies the Knative Serving CRDs of a version from the configured source.
func (s *Service) applyServingCRDs(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, version string) error {
	raw, err := s.Charts.ServingCRDs(ctx, version)
	if err != nil {
		return err
	}
	n, err := c.ApplyYAML(ctx, raw)
	if err != nil {
		return fmt.Errorf("apply the Knative Serving CRDs of %s: %w", version, err)
	}
	if err := jc.Wait(ctx, "CRD services.serving.knative.dev to be established", engine.WaitOpts{}, c.CRDEstablished("services.serving.knative.dev")); err != nil {
		return err
	}
	jc.Note("Applied %d Knative Serving CRDs of %s", n, version)
	return nil
}

// knativeFeatures are Knative's feature flags (config-features) for what projects' pod
// specs use, each refused by Knative's webhook unless enabled: the dedicated workers'
// and GPU models' nodeSelector, the tolerations of their taints, a sandbox runtime's
// runtimeClassName, and the model storage's volume claim.
var knativeFeatures = map[string]any{
	"kubernetes.podspec-nodeselector":            "enabled",
	"kubernetes.podspec-tolerations":             "enabled",
	"kubernetes.podspec-runtimeclassname":        "enabled",
	"kubernetes.podspec-persistent-volume-claim": "enabled",
}

// knativeTagResolutionSkipped are the registries whose tags Knative's controller does not
// resolve to digests: Knative's defaults, and the internal registry, which speaks plain
// HTTP inside the cluster (the controller asks registries over HTTPS only, so every
// revision of a function image in Zot would fail "server gave HTTP response to HTTPS
// client"). The node's containerd pulls it through the node mirror's hosts.toml.
var knativeTagResolutionSkipped = []string{"kind.local", "ko.local", "dev.local", registry.InternalAddress}

// knativeSkipKey is the KnativeServing's config-deployment key of those registries.
const knativeSkipKey = "registries-skipping-tag-resolving"

// EnableFeatures turns the features projects use on in a KnativeServing that lacks
// them (one adopted, or installed by an older console), and adds the internal registry to
// the registries whose tags are not resolved (keeping those already listed).
func EnableFeatures(ctx context.Context, c *kube.Cluster, ns string) error {
	cfg := map[string]any{"features": knativeFeatures}
	o, found, err := c.Get(ctx, kube.GVKKnativeServing, ns, kit.KnativeServingName)
	if err != nil {
		return err
	}
	if found {
		cur, _, _ := unstructured.NestedString(o.Object, "spec", "config", "deployment", knativeSkipKey)
		if merged := mergeList(cur, knativeTagResolutionSkipped); merged != cur {
			cfg["deployment"] = map[string]any{knativeSkipKey: merged}
		}
	}
	return c.MergePatch(ctx, kube.GVKKnativeServing, ns, kit.KnativeServingName, map[string]any{"spec": map[string]any{"config": cfg}})
}

// mergeList adds to a comma-separated list the items it lacks (Knative's defaults when the
// list is empty, as Knative reads an unset key).
func mergeList(list string, items []string) string {
	have := map[string]bool{}
	var out []string
	for _, it := range strings.Split(list, ",") {
		if it = strings.TrimSpace(it); it != "" && !have[it] {
			have[it] = true
			out = append(out, it)
		}
	}
	for _, it := range items {
		if !have[it] {
			out = append(out, it)
		}
	}
	return strings.Join(out, ",")
}

// knativeServingObject is the KnativeServing resource with Traefik as its ingress, and
// Knative's images from registry (knativeRegistry; nil for Knative's own).
func knativeServingObject(ns, version string, maxTimeout int, registry map[string]any) map[string]any {
	cfg := map[string]any{
		"network":    map[string]any{"ingress-class": TraefikIngressClass, "domain-template": "{{.Name}}.{{.Domain}}"},
		"features":   knativeFeatures,
		"deployment": map[string]any{knativeSkipKey: strings.Join(knativeTagResolutionSkipped, ",")},
	}
	if maxTimeout > MaxRevisionTimeoutDefault {
		cfg["defaults"] = map[string]any{"max-revision-timeout-seconds": strconv.Itoa(maxTimeout)}
	}
	spec := map[string]any{
		"version": version,
		"ingress": map[string]any{"kourier": map[string]any{"enabled": false}, "istio": map[string]any{"enabled": false}, "contour": map[string]any{"enabled": false}},
		"config":  cfg,
	}
	if registry != nil {
		spec["registry"] = registry
		cfg["deployment"].(map[string]any)[QueueKey] = QueueSidecarImage(registry)
	}
	return map[string]any{
		"apiVersion": "operator.knative.dev/v1beta1", "kind": "KnativeServing",
		"metadata": map[string]any{"name": kit.KnativeServingName, "namespace": ns, "labels": kit.ToAnyMap(kit.ManagedLabels(nil))},
		"spec":     spec,
	}
}

// RaiseMaxRevisionTimeout raises Knative's max-revision-timeout-seconds to the longest
// request_timeout above 600 s; it is never lowered.
func RaiseMaxRevisionTimeout(ctx context.Context, c *kube.Cluster, ns string, want int) (bool, error) {
	if want <= MaxRevisionTimeoutDefault {
		return false, nil
	}
	o, found, err := c.Get(ctx, kube.GVKKnativeServing, ns, kit.KnativeServingName)
	if err != nil || !found {
		return false, err
	}
	cur, _, _ := unstructured.NestedString(o.Object, "spec", "config", "defaults", "max-revision-timeout-seconds")
	if n, err := strconv.Atoi(cur); err == nil && n >= want {
		return false, nil
	}
	return true, c.MergePatch(ctx, kube.GVKKnativeServing, ns, kit.KnativeServingName, map[string]any{"spec": map[string]any{"config": map[string]any{
		"defaults": map[string]any{"max-revision-timeout-seconds": strconv.Itoa(want)}}}})
}

// WaitServingApplied waits until the Knative Operator has applied the KnativeServing's
// spec as it is now (status.observedGeneration reaches its generation, and it is Ready):
// a change of spec.config is in Knative's ConfigMaps only then, and Serving's webhook
// judges a function's deploy by them.
func WaitServingApplied(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, ns, what string) error {
	o, found, err := c.Get(ctx, kube.GVKKnativeServing, ns, kit.KnativeServingName)
	if err != nil || !found {
		return err
	}
	gen := o.GetGeneration()
	return jc.Wait(ctx, fmt.Sprintf("the Knative Operator to apply %s (KnativeServing %s/%s generation %d)", what, ns, kit.KnativeServingName, gen),
		engine.WaitOpts{Hint: "read the operator's log in the knative-operator namespace"}, func(ctx context.Context) (bool, string, error) {
			o, found, err := c.Get(ctx, kube.GVKKnativeServing, ns, kit.KnativeServingName)
			if err != nil || !found {
				return false, "KnativeServing not found", err
			}
			seen, _, _ := unstructured.NestedInt64(o.Object, "status", "observedGeneration")
			if seen < gen {
				return false, fmt.Sprintf("generation %d observed", seen), nil
			}
			ready, msg := kube.ReadyCondition(o)
			return ready, msg, nil
		})
}

// LongestTimeout is the longest request_timeout of the regions, in seconds.
func LongestTimeout(regions []store.Region) int {
	n := 0
	for _, r := range regions {
		n = max(n, r.Settings.V.RequestTimeout)
	}
	return n
}

// ServingSteps are the steps of a Knative Serving install.
func (s *Service) ServingSteps(p ServingParams) []engine.Step {
	// The steps see the namespace Serving is installed in before the region records it.
	inNamespace := func(f kit.RegionRun) kit.RegionRun {
		return func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
			r.ServingNamespace = p.Namespace
			return f(ctx, jc, r, c)
		}
	}
	return []engine.Step{
		s.RegionStep("quota", "Project namespace quota", inNamespace(s.servingQuota(p))),
		s.RegionStep("traefik", "Traefik", inNamespace(s.servingTraefik(p))),
		s.RegionStep("serving", "KnativeServing with Traefik as ingress", inNamespace(s.servingServing(p))),
		s.RegionStep("domain", "Function domain", inNamespace(s.servingDomain)),
		s.RegionStep("address", "External address", inNamespace(s.servingAddress)),
		// The observability releases and the agent depend on none of each other: they
		// install at once, each step with its own progress.
		s.RegionStep("prometheus", "Prometheus", inNamespace(s.servingPrometheus)).InParallel(),
		s.RegionStep("loki", "Loki", inNamespace(s.servingLoki)).InParallel(),
		s.RegionStep("agent", "runr-agent", inNamespace(s.servingAgent)).InParallel(),
		s.RegionStep("tracing", "Tracing backend", inNamespace(s.servingTracing)).InParallel(),
		s.RegionStep("record", "Record the region", inNamespace(s.servingRecord(p))),
	}
}

// servingQuota is the step "quota" (Project namespace quota) of servingSteps.
func (s *Service) servingQuota(p ServingParams) func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	return func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
		s.Record(s.Store.UpdateServing(ctx, jc.Job.Region(), store.ServingUpdate{Status: store.Ptr(store.ComponentInstalling), Namespace: store.Ptr(p.Namespace), Message: store.Ptr("")}))
		if sv, err := s.adoptServing(ctx, jc, c, r); err != nil {
			return err
		} else if sv {
			jc.Logf("A Ready KnativeServing runs already: it is adopted, not applied again")
		}
		return s.applyQuota(ctx, jc, c, r)
	}
}

// servingTraefik is the step "traefik" (Traefik) of servingSteps.
func (s *Service) servingTraefik(p ServingParams) func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	return func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
		addr, err := s.installTraefik(ctx, jc, c, r, p.IngressMode)
		if err != nil {
			return err
		}
		return s.Store.UpdateServing(ctx, r.ID, store.ServingUpdate{ExternalIP: store.Ptr(addr)})
	}
}

// ServingAdopted reports a region whose Ready KnativeServing was adopted, not applied.
func ServingAdopted(r *store.Region) bool {
	return r.ServingAdopted && r.ServingStatus == store.ComponentReady
}

// servingServing is the step "serving" (KnativeServing with Traefik as ingress) of servingSteps.
func (s *Service) servingServing(p ServingParams) func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	return func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
		r, err := s.Store.RegionByID(ctx, r.ID)
		if err != nil {
			return err
		}
		if ServingAdopted(r) {
			jc.Note("The Ready KnativeServing %s/%s (Knative %s) is adopted", r.ServingNamespace, kit.KnativeServingName, r.KnativeVersion)
			return nil
		}
		regions, err := s.Store.RegionsOnCluster(ctx, r.ClusterKey)
		if err != nil {
			return err
		}
		minor := MinorOf(p.Version)
		mirror, err := s.ImageMirror(ctx, r)
		if err != nil {
			return err
		}
		registry := MirrorRegistry(mirror, ServingRelease(r.OperatorVersion))
		if _, err := c.ApplyObject(ctx, knativeServingObject(p.Namespace, minor, LongestTimeout(regions), registry)); err != nil {
			return err
		}
		if err := jc.Wait(ctx, fmt.Sprintf("KnativeServing %s/%s to be Ready at %s", p.Namespace, kit.KnativeServingName, minor), engine.WaitOpts{Hint: "check the Knative Operator's logs (namespace " + r.OperatorNamespace + ")"}, ServingReadyAt(c, p.Namespace, minor)); err != nil {
			return err
		}
		reported, err := servingReported(ctx, c, p.Namespace)
		if err != nil {
			return err
		}
		jc.Note("Knative Serving %s is Ready", reported)
		return s.Store.UpdateServing(ctx, r.ID, store.ServingUpdate{Version: store.Ptr(reported)})
	}
}

// servingDomain is the step "domain" (Function domain) of servingSteps.
func (s *Service) servingDomain(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	base, err := s.Store.BaseDomain(ctx)
	if err != nil {
		return err
	}
	domain := domains.FunctionDomain(r, base)
	if domain == "" {
		jc.Note("No base domain yet: the region gets its function domain when one is set (Administration → Platform)")
		return engine.ErrSkip
	}
	if err := domains.SetDomain(ctx, c, r.ServingNamespace, r.Name, domain, ""); err != nil {
		return err
	}
	settings := r.Settings.V
	settings.KnativeDomain = domain
	jc.Note("Function domain %s", domain)
	return s.Store.SetRegionSettings(ctx, r.ID, settings)
}

// servingAddress is the step "address" (External address) of servingSteps.
func (s *Service) servingAddress(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	rel, err := helm.Status(c, r.ServingNamespace, kit.TraefikRelease)
	if err != nil {
		return err
	}
	addr, err := s.traefikAddress(ctx, jc, c, r.ServingNamespace, ReleaseIngressMode(rel))
	if err != nil {
		return err
	}
	jc.Note("External address %s", addr)
	return s.Store.UpdateServing(ctx, r.ID, store.ServingUpdate{ExternalIP: store.Ptr(addr)})
}

// servingPrometheus is the step "prometheus" (Prometheus) of servingSteps.
func (s *Service) servingPrometheus(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	return s.Component(ctx, jc, r, "prometheus", func() error { return s.Observability.InstallPrometheus(ctx, jc, c, r) })
}

// servingLoki is the step "loki" (Loki) of servingSteps.
func (s *Service) servingLoki(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	return s.Component(ctx, jc, r, "loki", func() error { return s.Observability.InstallLoki(ctx, jc, c, r) })
}

// servingAgent is the step "agent" (runr-agent) of servingSteps.
func (s *Service) servingAgent(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	return s.Component(ctx, jc, r, "agent", func() error { return s.Observability.InstallAgent(ctx, jc, c, r) })
}

// servingTracing is the step "tracing" (Tracing backend) of servingSteps.
func (s *Service) servingTracing(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	if !s.Observability.TracingEnabled(r) {
		why := "its tracing mode is off"
		if r.TracingMode == store.TracingDefault {
			why = "RUNR_TRACING_DEFAULT_MODE=off"
		}
		jc.Logf("Tracing is off for %s (%s): the tracing backend is not installed", r.Name, why)
		return nil
	}
	users, err := s.Observability.TracingUsers(ctx, r)
	if err != nil {
		return err
	}
	return s.Component(ctx, jc, r, "tracing", func() error { return s.Observability.InstallTracing(ctx, jc, c, s.Observability.Backend(users)) })
}

// servingRecord is the step "record" (Record the region) of servingSteps.
func (s *Service) servingRecord(p ServingParams) func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	return func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
		r, err := s.Store.RegionByID(ctx, r.ID)
		if err != nil {
			return err
		}
		if err := s.Store.UpdateServing(ctx, r.ID, store.ServingUpdate{Status: store.Ptr(store.ComponentReady), Namespace: store.Ptr(p.Namespace), Message: store.Ptr("")}); err != nil {
			return err
		}
		if err := s.Store.SetComponent(ctx, r.ID, "traefik", store.ComponentState{Status: store.ComponentReady, Version: ChartTraefik.Version}); err != nil {
			return err
		}
		if r.Status != store.RegionActive {
			if err := s.StatusBlock.ApplyBlock(ctx, jc, c, r); err != nil {
				return err
			}
		}
		jc.Note("Knative Serving %s is ready; create the DNS record *.%s → %s", r.KnativeVersion, r.Settings.V.KnativeDomain, r.ExternalIP)
		return nil
	}
}

// Component runs a component's install and records its state: installing while it runs, then
// ready, external (skipped for an instance of the region's own) or the error.
func (s *Service) Component(ctx context.Context, jc *engine.JobContext, r *store.Region, name string, install func() error) error {
	if err := s.Store.SetComponent(ctx, r.ID, name, store.ComponentState{Status: store.ComponentInstalling}); err != nil {
		return err
	}
	err := install()
	state := store.ComponentState{Status: store.ComponentReady}
	switch {
	case errors.Is(err, engine.ErrSkip):
		state = store.ComponentState{Status: store.ComponentExternal, Message: jc.LastNote()}
	case err != nil:
		state = store.ComponentState{Status: store.ComponentError, Message: err.Error()}
	}
	if serr := s.Store.SetComponent(ctx, r.ID, name, state); serr != nil {
		return serr
	}
	return err
}

// applyQuota applies the project namespace's ResourceQuota and LimitRange when an
// organisation ceiling is configured.
func (s *Service) applyQuota(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, r *store.Region) error {
	if s.Cfg.QuotaCPU <= 0 && s.Cfg.QuotaMemoryGiB <= 0 {
		jc.Note("No organisation ceiling is configured: no quota")
		return engine.ErrSkip
	}
	if _, err := kit.EnsureNamespace(ctx, jc, c, r.Name, map[string]string{"runr.dev/region": r.Name}); err != nil {
		return err
	}
	hard := map[string]any{}
	if s.Cfg.QuotaCPU > 0 {
		hard["requests.cpu"] = strconv.FormatFloat(s.Cfg.QuotaCPU, 'f', -1, 64)
	}
	if s.Cfg.QuotaMemoryGiB > 0 {
		hard["requests.memory"] = strconv.FormatFloat(s.Cfg.QuotaMemoryGiB, 'f', -1, 64) + "Gi"
	}
	objs := []map[string]any{
		{"apiVersion": "v1", "kind": "ResourceQuota", "metadata": map[string]any{"name": "runr-ceiling", "namespace": r.Name}, "spec": map[string]any{"hard": hard}},
		{"apiVersion": "v1", "kind": "LimitRange", "metadata": map[string]any{"name": "runr-defaults", "namespace": r.Name}, "spec": map[string]any{
			"limits": []any{map[string]any{"type": "Container",
				"defaultRequest": map[string]any{"cpu": "50m", "memory": "64Mi"},
				"default":        map[string]any{"memory": "256Mi"}}}}},
	}
	for _, o := range objs {
		if _, err := c.ApplyObject(ctx, o); err != nil {
			return err
		}
	}
	jc.Note("ResourceQuota runr-ceiling %v and LimitRange runr-defaults in %s", hard, r.Name)
	return nil
}

// deleteKnativeServing deletes the KnativeServing resource and waits until it is gone.
func (s *Service) deleteKnativeServing(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, ns string) error {
	if done, _, _ := c.CRDEstablished(ServingCRD)(ctx); !done {
		jc.Note("No KnativeServing CRD: nothing to delete")
		return nil
	}
	if err := c.Delete(ctx, kube.GVKKnativeServing, ns, kit.KnativeServingName); err != nil {
		return err
	}
	return jc.Wait(ctx, "KnativeServing "+ns+"/"+kit.KnativeServingName+" to be deleted", engine.WaitOpts{}, func(ctx context.Context) (bool, string, error) {
		_, found, err := c.Get(ctx, kube.GVKKnativeServing, ns, kit.KnativeServingName)
		return !found, "", err
	})
}

// traefikServesOthers reports whether Ingresses other than Knative's use the region Traefik.
func traefikServesOthers(ctx context.Context, c *kube.Cluster, ns string) (int, error) {
	class, err := IngressClassOf(ctx, c, ns)
	if err != nil {
		return 0, err
	}
	ings, err := c.Clientset.NetworkingV1().Ingresses("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("list Ingresses: %w", err)
	}
	n := 0
	for _, i := range ings.Items {
		if i.Spec.IngressClassName != nil && *i.Spec.IngressClassName == class {
			n++
		}
	}
	return n, nil
}

func (s *Service) uninstallServingSteps(p ServingParams) []engine.Step {
	return []engine.Step{
		s.RegionStep("serving", "Delete the KnativeServing", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
			s.setServingStatus(ctx, r, store.ComponentRemoving)
			return s.deleteKnativeServing(ctx, jc, c, r.ServingNamespace)
		}),
		s.RegionStep("traefik", "Remove Traefik", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
			n, err := traefikServesOthers(ctx, c, r.ServingNamespace)
			if err != nil {
				return err
			}
			if n > 0 && !p.RemoveTraefik {
				jc.Note("Traefik stays: it serves %d other Ingress(es); remove_traefik removes it anyway", n)
				return engine.ErrSkip
			}
			return s.HelmUninstall(ctx, jc, c, r.ServingNamespace, kit.TraefikRelease)
		}),
		s.RegionStep("namespace", "Remove the Serving namespace", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
			if rel, err := helm.Status(c, r.ServingNamespace, kit.TraefikRelease); err != nil {
				return err
			} else if rel != nil && rel.Info.Status != release.StatusUninstalled {
				jc.Note("Traefik stays, and so does namespace %s", r.ServingNamespace)
				return engine.ErrSkip
			}
			ns, err := c.Clientset.CoreV1().Namespaces().Get(ctx, r.ServingNamespace, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return engine.ErrSkip
			}
			if err != nil {
				return err
			}
			if ns.Labels["app.kubernetes.io/managed-by"] != "runr" {
				jc.Note("Namespace %s was not created by RunR: it stays", r.ServingNamespace)
				return engine.ErrSkip
			}
			if err := kit.DeleteNamespace(ctx, jc, c, r.ServingNamespace); err != nil {
				return err
			}
			jc.Note("Deleted namespace %s", r.ServingNamespace)
			return nil
		}),
		{Name: "record", Title: "Record", Run: func(ctx context.Context, jc *engine.JobContext) error {
			r, err := s.JobRegion(ctx, jc)
			if err != nil {
				return err
			}
			s.setServingStatus(ctx, r, store.ComponentNotInstalled)
			jc.Note("Knative Serving is gone; Prometheus, Loki, the runr-agent and the tracing backend stay")
			return nil
		}},
	}
}

// setServingStatus sets the Serving status of every region on the region's cluster:
// they share Knative Serving.
func (s *Service) setServingStatus(ctx context.Context, r *store.Region, status store.ComponentStatus) {
	u := store.ServingUpdate{Status: &status}
	if status == store.ComponentNotInstalled {
		u.Adopted, u.ExternalIP, u.DNSResolved = store.Ptr(false), store.Ptr(""), store.Ptr(false)
	}
	err := s.EachRegionOnCluster(ctx, r, func(x *store.Region) error {
		if err := s.Store.UpdateServing(ctx, x.ID, u); err != nil {
			s.Log.Warn("serving status", "region", x.Name, "err", err)
		}
		return nil
	})
	if err != nil {
		s.Log.Warn("serving status", "err", err)
	}
}

func (s *Service) uninstallOperatorSteps() []engine.Step {
	return []engine.Step{
		s.RegionStep("operator", "Remove the Knative Operator", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
			if ks, err := knativeServings(ctx, c); err != nil {
				return err
			} else if len(ks) > 0 {
				return fmt.Errorf("a KnativeServing still exists (%s/%s): uninstall Serving first", ks[0].GetNamespace(), ks[0].GetName())
			}
			s.Record(s.Store.UpdateOperator(ctx, jc.Job.Region(), store.OperatorUpdate{Status: store.Ptr(store.ComponentRemoving)}))
			return s.HelmUninstall(ctx, jc, c, r.OperatorNamespace, OperatorRelease)
		}),
		s.RegionStep("crds", "Remove the Knative CRDs", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
			n := 0
			names := append(append([]string{}, servingCRDNames...), operatorCRDNames...)
			for _, name := range names {
				err := c.APIExt.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, name, metav1.DeleteOptions{})
				if err == nil {
					n++
				} else if !apierrors.IsNotFound(err) {
					return fmt.Errorf("delete CRD %s: %w", name, err)
				}
			}
			// The API server removes a CRD after its objects: wait until they are gone.
			if err := jc.Wait(ctx, "the Knative CRDs to be removed", engine.WaitOpts{}, func(ctx context.Context) (bool, string, error) {
				left := 0
				for _, name := range names {
					if _, err := c.APIExt.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{}); err == nil {
						left++
					}
				}
				return left == 0, fmt.Sprintf("%d left", left), nil
			}); err != nil {
				return err
			}
			jc.Note("Deleted %d Knative CRDs, and with them every Knative Service left on the cluster", n)
			return nil
		}),
		{Name: "record", Title: "Record", Run: func(ctx context.Context, jc *engine.JobContext) error {
			r, err := s.JobRegion(ctx, jc)
			if err != nil {
				return err
			}
			err = s.EachRegionOnCluster(ctx, r, func(x *store.Region) error {
				return s.Store.UpdateOperator(ctx, x.ID, store.OperatorUpdate{Status: store.Ptr(store.ComponentNotInstalled), Adopted: store.Ptr(false), Version: store.Ptr("")})
			})
			if err != nil {
				return err
			}
			jc.Note("The Knative Operator is gone")
			return nil
		}},
	}
}

func (s *Service) upgradeSteps(p ServingParams) []engine.Step {
	return []engine.Step{
		s.RegionStep("operator", "Move the operator to the version's chart", s.upgradeOperator(p)),
		s.RegionStep("crds", "Knative Serving CRDs of the version", s.upgradeCrds(p)),
		s.RegionStep("version", "Set the KnativeServing's version", s.upgradeVersion(p)),
		s.RegionStep("ready", "Wait for the new version", s.upgradeReady(p)),
	}
}

// upgradeOperator is the step "operator" (Move the operator to the version's chart) of upgradeSteps.
func (s *Service) upgradeOperator(p ServingParams) kit.RegionRun {
	return func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
		s.setServingStatus(ctx, r, store.ComponentInstalling)
		rel, err := helm.Status(c, r.OperatorNamespace, OperatorRelease)
		if err != nil {
			return err
		}
		if rel == nil {
			jc.Note("The operator was adopted without a Helm release: it is not moved")
			return engine.ErrSkip
		}
		kv, err := s.ChartFor(ctx, c, p.Version)
		if err != nil {
			return err
		}
		chart := ChartKnativeOperator
		chart.Version = kv.ChartVersion
		if rel.Chart != nil && minorNumber(rel.Chart.Metadata.Version) >= minorNumber(chart.Version) {
			jc.Note("The operator's chart %s is not older", rel.Chart.Metadata.Version)
			return engine.ErrSkip
		}
		nr, err := s.HelmApply(ctx, jc, c, kit.Release{Namespace: r.OperatorNamespace, Name: OperatorRelease, Chart: chart, Values: OperatorValues()})
		if err != nil {
			return err
		}
		if err := kit.WaitRelease(ctx, jc, c, nr, engine.WaitOpts{}); err != nil {
			return err
		}
		jc.Note("The Knative Operator runs %s", chart.Version)
		return s.Store.UpdateOperator(ctx, r.ID, store.OperatorUpdate{Version: store.Ptr(chart.Version)})
	}
}

// upgradeCrds is the step "crds" (Knative Serving CRDs of the version) of upgradeSteps.
func (s *Service) upgradeCrds(p ServingParams) kit.RegionRun {
	return func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
		kv, err := s.ChartFor(ctx, c, p.Version)
		if err != nil {
			return err
		}
		return s.applyServingCRDs(ctx, jc, c, kv.ServingVersion)
	}
}

// upgradeVersion is the step "version" (Set the KnativeServing's version) of upgradeSteps.
func (s *Service) upgradeVersion(p ServingParams) kit.RegionRun {
	return func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
		if err := c.MergePatch(ctx, kube.GVKKnativeServing, r.ServingNamespace, kit.KnativeServingName, map[string]any{"spec": map[string]any{"version": MinorOf(p.Version)}}); err != nil {
			return err
		}
		jc.Note("spec.version is %s: the operator rolls Knative Serving to its newest %s release while the Knative Services keep running", MinorOf(p.Version), MinorOf(p.Version))
		return nil
	}
}

// upgradeReady is the step "ready" (Wait for the new version) of upgradeSteps.
func (s *Service) upgradeReady(p ServingParams) kit.RegionRun {
	return func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
		if err := jc.Wait(ctx, fmt.Sprintf("KnativeServing %s/%s to be Ready at %s", r.ServingNamespace, kit.KnativeServingName, p.Version), engine.WaitOpts{}, ServingReadyAt(c, r.ServingNamespace, p.Version)); err != nil {
			return err
		}
		reported, err := servingReported(ctx, c, r.ServingNamespace)
		if err != nil {
			return err
		}
		err = s.EachRegionOnCluster(ctx, r, func(x *store.Region) error {
			return s.Store.UpdateServing(ctx, x.ID, store.ServingUpdate{Status: store.Ptr(store.ComponentReady), Version: store.Ptr(reported), Message: store.Ptr("")})
		})
		if err != nil {
			return err
		}
		jc.Note("Knative Serving %s is Ready on every region of the cluster", reported)
		return nil
	}
}

func (s *Service) registerKinds() {
	servingFailed := func(ctx context.Context, jc *engine.JobContext, err error) {
		if err != nil {
			s.Record(s.Store.UpdateServing(ctx, jc.Job.Region(), store.ServingUpdate{Status: store.Ptr(store.ComponentError), Message: store.Ptr(err.Error())}))
		}
	}
	operatorFailed := func(ctx context.Context, jc *engine.JobContext, err error) {
		if err != nil {
			s.Record(s.Store.UpdateOperator(ctx, jc.Job.Region(), store.OperatorUpdate{Status: store.Ptr(store.ComponentError), Message: store.Ptr(err.Error())}))
		}
	}
	type knativeParams struct {
		Operator OperatorParams `json:"operator"`
		Serving  ServingParams  `json:"serving"`
	}
	s.Engine.Register(&engine.Kind{Name: KindInstallOperator, Finished: operatorFailed, Plan: engine.PlanWith(s.OperatorSteps)})
	s.Engine.Register(&engine.Kind{Name: KindInstallServing, Finished: servingFailed, Plan: engine.PlanWith(s.ServingSteps)})
	s.Engine.Register(&engine.Kind{Name: KindInstallKnative, Finished: servingFailed, Plan: engine.PlanWith(func(p knativeParams) []engine.Step {
		return append(s.OperatorSteps(p.Operator), s.ServingSteps(p.Serving)...)
	})})
	s.Engine.Register(&engine.Kind{Name: KindUpgradeServing, Finished: servingFailed, Plan: engine.PlanWith(s.upgradeSteps)})
	s.Engine.Register(&engine.Kind{Name: KindUninstallServing, Finished: servingFailed, Plan: engine.PlanWith(s.uninstallServingSteps)})
	s.Engine.Register(&engine.Kind{Name: KindUninstallOperator, Finished: operatorFailed, Plan: func(*engine.JobContext) ([]engine.Step, error) {
		return s.uninstallOperatorSteps(), nil
	}})
	s.Engine.Register(&engine.Kind{Name: KindUninstallKnative, Finished: servingFailed, Plan: engine.PlanWith(func(p ServingParams) []engine.Step {
		return append(s.uninstallServingSteps(p), s.uninstallOperatorSteps()...)
	})})
}

// Input is what a Knative install, upgrade or uninstall is given: the body of the
// Knative routes, and the Operator and Serving tabs' forms.
type Input struct {
	Version           string `json:"version"`
	Namespace         string `json:"namespace"`
	OperatorNamespace string `json:"operator_namespace"`
	RemoveTraefik     bool   `json:"remove_traefik"`
	// IngressMode is load_balancer (default) or host_network (Serving installs only).
	IngressMode string `json:"ingress_mode"`
}

// kinds are the Knative jobs, of which one runs on a region at a time.
var kinds = []string{KindInstallOperator, KindInstallServing, KindInstallKnative, KindUpgradeServing,
	KindUninstallServing, KindUninstallOperator, KindUninstallKnative}

// Start checks and queues one of the Knative jobs of a region (kind is one of
// kinds): one runs at a time, and each needs its components in the right state.
func (s *Service) Start(ctx context.Context, actor kit.Actor, r *store.Region, kind string, in Input) (*store.Job, error) {
	if b, err := s.Busy(ctx, r.ID, kinds...); err != nil {
		return nil, err
	} else if b {
		return nil, &problem.Refused{Reason: "A Knative job of this region runs already; wait for it to finish."}
	}
	opNS, m := validNamespace(in.OperatorNamespace, r.OperatorNamespace)
	if m != "" {
		return nil, &problem.Invalid{Fields: map[string]string{"operator_namespace": m}}
	}
	svNS, m := validNamespace(in.Namespace, r.ServingNamespace)
	if m != "" {
		return nil, &problem.Invalid{Fields: map[string]string{"namespace": m}}
	}
	switch in.IngressMode {
	case "", IngressLoadBalancer, IngressHostNetwork:
	default:
		return nil, &problem.Invalid{Fields: map[string]string{"ingress_mode": "Choose load_balancer (a LoadBalancer Service) or host_network (a DaemonSet on ports 80 and 443 of every node)."}}
	}
	ver, err := s.knativeVersion(ctx, r, kind, in.Version)
	if err != nil {
		return nil, err
	}
	req, err := knativeRequest(r, kind, in, OperatorParams{Namespace: opNS}, ServingParams{Namespace: svNS, IngressMode: in.IngressMode}, ver)
	if err != nil {
		return nil, err
	}
	req.Kind, req.Subject, req.CreatedBy = kind, r.ID, actor.Email
	return s.Enqueue(ctx, req)
}

// knativeVersion is the version a Knative job installs or upgrades to (nil for the
// uninstalls): an offered one for an install, the next minor for an upgrade.
func (s *Service) knativeVersion(ctx context.Context, r *store.Region, kind, want string) (*Version, error) {
	switch kind {
	case KindInstallOperator, KindInstallServing, KindInstallKnative, KindUpgradeServing:
	default:
		return nil, nil
	}
	vs, err := s.RegionVersions(ctx, r)
	if err != nil {
		return nil, &problem.Refused{Reason: "The Knative Operator chart repository could not be read", Err: err}
	}
	if kind != KindUpgradeServing {
		v, msg := resolveVersion(vs, want)
		if msg != "" {
			return nil, &problem.Refused{Field: "version", Reason: msg}
		}
		return v, nil
	}
	if r.ServingStatus != store.ComponentReady {
		return nil, &problem.Refused{Reason: "Knative Serving is not ready on this region (" + string(r.ServingStatus) + "): install it first."}
	}
	next, err := s.RegionNextVersion(ctx, r)
	if err != nil {
		return nil, &problem.Refused{Reason: "No upgrade: " + err.Error()}
	}
	if w := MinorOf(want); w != "" && w != next.Minor {
		return nil, &problem.Refused{Field: "version", Reason: "Knative upgrades one minor version at a time: from " + r.KnativeVersion + " the next is " + next.Version + "."}
	}
	return next, nil
}

// knativeRequest is the job of a Knative kind with its title and parameters, or the
// refusal of a component that is not in the state the kind needs. op and sv carry the
// namespaces (and Serving's ingress mode) chosen.
func knativeRequest(r *store.Region, kind string, in Input, op OperatorParams, sv ServingParams, ver *Version) (engine.Request, error) {
	if ver != nil {
		op.Version, sv.Version = ver.Version, ver.Version
	}
	var req engine.Request
	switch kind {
	case KindInstallOperator:
		req.Title, req.Params = "Install the Knative Operator on "+r.Name, op
	case KindInstallServing:
		if r.OperatorStatus != store.ComponentReady {
			return req, &problem.Refused{Reason: "Install the Knative Operator first (its status is " + string(r.OperatorStatus) + ")."}
		}
		req.Title, req.Params = "Install Knative Serving "+ver.Version+" on "+r.Name, sv
	case KindInstallKnative:
		req.Title, req.Params = "Install Knative "+ver.Version+" on "+r.Name, map[string]any{"operator": op, "serving": sv}
	case KindUpgradeServing:
		req.Title, req.Params = "Upgrade Knative Serving of "+r.Name+" to "+ver.Version, ServingParams{Namespace: r.ServingNamespace, Version: ver.Version}
	case KindUninstallServing:
		if r.ServingStatus == store.ComponentNotInstalled {
			return req, &problem.Refused{Reason: "Knative Serving is not installed on this region."}
		}
		req.Title, req.Params = "Uninstall Knative Serving of "+r.Name, ServingParams{Namespace: r.ServingNamespace, RemoveTraefik: in.RemoveTraefik}
	case KindUninstallOperator:
		if r.ServingStatus != store.ComponentNotInstalled {
			return req, &problem.Refused{Reason: "Uninstall Knative Serving first: removing the operator removes the Knative CRDs, and with them every Knative Service."}
		}
		req.Title = "Uninstall the Knative Operator of " + r.Name
	case KindUninstallKnative:
		req.Title, req.Params = "Uninstall Knative of "+r.Name, ServingParams{Namespace: r.ServingNamespace, RemoveTraefik: in.RemoveTraefik}
	}
	return req, nil
}

// TeardownParts is the removal of Knative Serving (with the region's Traefik unless it
// serves other Ingresses) and then of the operator, of what of them is installed, for
// the removal of a region with what the console installed.
func (s *Service) TeardownParts(r *store.Region) ([]engine.Part, error) {
	kind := KindUninstallKnative
	switch {
	case r.ServingStatus != store.ComponentNotInstalled:
	case r.OperatorStatus != store.ComponentNotInstalled:
		kind = KindUninstallOperator
	default:
		return nil, nil
	}
	req, err := knativeRequest(r, kind, Input{}, OperatorParams{}, ServingParams{}, nil)
	if err != nil {
		return nil, err
	}
	req.Kind, req.Subject = kind, r.ID
	p, err := engine.PartOf("Knative", req)
	return []engine.Part{p}, err
}

// Service is Knative on a region's cluster: the operator, Serving and the region Traefik,
// their installs, upgrades and removals.
type Service struct {
	*kit.Kit
	// Observability is consulted for the parts a Serving install wires in.
	Observability *observability.Service
	// StatusBlock is applied once Serving answers.
	StatusBlock *statusblock.Service
}

// New builds the Knative feature and registers its kinds of job.
func New(k *kit.Kit, obs *observability.Service, block *statusblock.Service) *Service {
	s := &Service{Kit: k, Observability: obs, StatusBlock: block}
	s.registerKinds()
	return s
}
