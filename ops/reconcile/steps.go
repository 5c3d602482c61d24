package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"runr.dev/console/config"
	"runr.dev/console/engine"
	"runr.dev/console/helm"
	"runr.dev/console/imagemirror"
	"runr.dev/console/kube"
	"runr.dev/console/ops/domains"
	"runr.dev/console/ops/isolation"
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/knative"
	"runr.dev/console/ops/observability"
	"runr.dev/console/ops/registry"
	"runr.dev/console/ops/statusblock"
	"runr.dev/console/store"
)

// sameJSON compares two values as Helm stores them (a JSON round trip each).
func sameJSON(a, b any) bool {
	return reflect.DeepEqual(jsonValue(a), jsonValue(b))
}

func jsonValue(v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	_ = json.Unmarshal(raw, &out)
	return out
}

// withKey returns a copy of a release's values with one key replaced.
func withKey(vals map[string]any, key string, v any) map[string]any {
	out := make(map[string]any, len(vals)+1)
	for k, x := range vals {
		out[k] = x
	}
	out[key] = v
	return out
}

// joinFindings joins the findings of several parts of a step.
func joinFindings(fs ...finding) finding {
	var out finding
	var what []string
	for _, f := range fs {
		out.Change = out.Change || f.Change
		if f.What != "" {
			what = append(what, f.What)
		}
	}
	out.What = strings.Join(what, "; ")
	return out
}

// releaseDrift says how a release differs from a chart version and values ("" when it
// does not): missing, not deployed, another chart version, other values.
func releaseDrift(rel *release.Release, name, version string, vals map[string]any) string {
	switch {
	case rel == nil:
		return "install " + name + " " + version
	case rel.Info == nil || rel.Info.Status != release.StatusDeployed:
		return fmt.Sprintf("%s is %s: upgrade it to %s", name, rel.Info.Status, version)
	case rel.Chart != nil && rel.Chart.Metadata.Version != version:
		return fmt.Sprintf("%s chart %s → %s", name, rel.Chart.Metadata.Version, version)
	case !sameJSON(rel.Config, vals):
		return name + ": values of this release"
	}
	return ""
}

// traefikRelease reads the region Traefik's release of a target (nil when none).
func traefikRelease(c *kube.Cluster, t *reconcileTarget) (*release.Release, error) {
	return helm.Status(c, t.Region.ServingNamespace, kit.TraefikRelease)
}

// checkSettings: Traefik's entry points carry the cluster's longest request_timeout (and
// its trusted addresses), and Knative's max-revision-timeout-seconds covers it.
func (s *Service) checkSettings(ctx context.Context, c *kube.Cluster, t *reconcileTarget) (finding, error) {
	tf, _, err := s.traefikSettingsDrift(ctx, c, t)
	if err != nil {
		return finding{}, err
	}
	kf, err := knativeTimeoutDrift(ctx, c, t)
	if err != nil {
		return finding{}, err
	}
	return joinFindings(tf, kf), nil
}

// traefikSettingsDrift compares the Traefik release's ports (timeouts, trusted addresses),
// its internal Service and the Knative provider's arguments with what this release gives
// the cluster's regions; it returns the values to apply when they differ.
func (s *Service) traefikSettingsDrift(ctx context.Context, c *kube.Cluster, t *reconcileTarget) (finding, map[string]any, error) {
	rel, err := traefikRelease(c, t)
	if err != nil || rel == nil {
		return finding{}, nil, err
	}
	if v := rel.Chart.Metadata.Version; v != knative.ChartTraefik.Version {
		return finding{What: "Traefik chart " + v + " is not this release's " + knative.ChartTraefik.Version + ": its timeouts are left alone"}, nil, nil
	}
	class, err := knative.IngressClassOf(ctx, c, t.Region.ServingNamespace)
	if err != nil {
		return finding{}, nil, err
	}
	want := s.Knative.RegionTraefikValues(t.Region.ServingNamespace, class, knative.ReleaseIngressMode(rel), t.Regions)
	vals, what := rel.Config, []string{}
	for _, k := range []struct{ key, what string }{
		{"ports", fmt.Sprintf("Traefik's entry points: timeouts %d s and the trusted addresses of the cluster's regions", knative.TraefikTimeout(t.Regions))},
		{"service", "Traefik's internal Service " + knative.TraefikInternalService + " (Knative's cluster-local addresses)"},
		{"additionalArguments", "the Knative provider's public and private entry points"},
	} {
		if !sameJSON(rel.Config[k.key], want[k.key]) {
			vals = withKey(vals, k.key, want[k.key])
			what = append(what, k.what)
		}
	}
	if len(what) == 0 {
		return finding{}, nil, nil
	}
	return finding{Change: true, What: strings.Join(what, "; ")}, vals, nil
}

// knativeTimeoutDrift: the KnativeServing's max-revision-timeout-seconds is raised to the
// longest request_timeout above Knative's default (never lowered).
func knativeTimeoutDrift(ctx context.Context, c *kube.Cluster, t *reconcileTarget) (finding, error) {
	want := knative.LongestTimeout(t.Regions)
	if want <= knative.MaxRevisionTimeoutDefault {
		return finding{}, nil
	}
	o, found, err := c.Get(ctx, kube.GVKKnativeServing, t.Region.ServingNamespace, kit.KnativeServingName)
	if err != nil || !found {
		return finding{}, err
	}
	cur, _, _ := unstructured.NestedString(o.Object, "spec", "config", "defaults", "max-revision-timeout-seconds")
	if n, err := strconv.Atoi(cur); err == nil && n >= want {
		return finding{}, nil
	}
	return finding{Change: true, What: fmt.Sprintf("Knative's max-revision-timeout-seconds %s → %d", timeoutOrDefault(cur), want)}, nil
}

func timeoutOrDefault(v string) string {
	if v == "" {
		return strconv.Itoa(knative.MaxRevisionTimeoutDefault) + " (default)"
	}
	return v
}

// applySettings upgrades Traefik with the ports of the cluster's regions (its image and
// the rest of its values kept) and raises Knative's maximum.
func (s *Service) applySettings(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, t *reconcileTarget) error {
	tf, vals, err := s.traefikSettingsDrift(ctx, c, t)
	if err != nil {
		return err
	}
	if tf.Change {
		rel, err := s.HelmApply(ctx, jc, c, kit.Release{Namespace: t.Region.ServingNamespace, Name: kit.TraefikRelease, Chart: knative.ChartTraefik, Values: vals})
		if err != nil {
			return err
		}
		if err := kit.WaitRelease(ctx, jc, c, rel, engine.WaitOpts{}); err != nil {
			return err
		}
	}
	want := knative.LongestTimeout(t.Regions)
	if raised, err := knative.RaiseMaxRevisionTimeout(ctx, c, t.Region.ServingNamespace, want); err != nil || !raised {
		return err
	}
	return knative.WaitServingApplied(ctx, jc, c, t.Region.ServingNamespace, fmt.Sprintf("max-revision-timeout-seconds %d", want))
}

// checkBlock: a region that is not active has its status block (with its status and its
// hosts); an active one has none.
func (s *Service) checkBlock(ctx context.Context, c *kube.Cluster, t *reconcileTarget) (finding, error) {
	r := &t.Region
	ns, name := r.ServingNamespace, statusblock.BlockName(r.Name)
	route, found, err := c.Get(ctx, kube.GVKIngressRoute, ns, name)
	if err != nil {
		return finding{}, err
	}
	if r.Status == store.RegionActive {
		if found {
			return finding{Change: true, What: "the region is active: remove the status block left on it"}, nil
		}
		return finding{}, nil
	}
	hosts, err := statusblock.RegionHosts(ctx, c, r)
	if err != nil {
		return finding{}, err
	}
	if hosts.Empty() {
		return finding{What: "no function domain yet: nothing to block"}, nil
	}
	if !found {
		return finding{Change: true, What: fmt.Sprintf("the region is %s: apply its status block", r.Status)}, nil
	}
	routes, _, _ := unstructured.NestedSlice(route.Object, "spec", "routes")
	if len(routes) == 0 || routes[0].(map[string]any)["match"] != statusblock.BlockRule(hosts) {
		return finding{Change: true, What: "the status block's hosts: " + statusblock.BlockRule(hosts)}, nil
	}
	mw, found, err := c.Get(ctx, kube.GVKMiddleware, ns, name)
	if err != nil {
		return finding{}, err
	}
	if h, _, _ := unstructured.NestedString(mw.Object, "spec", "headers", "customRequestHeaders", statusblock.StatusHeader); !found || h != string(r.Status) {
		return finding{Change: true, What: fmt.Sprintf("the status block answers %q, the region is %s", h, r.Status)}, nil
	}
	if _, found, err := c.Get(ctx, kube.GVKIngressRoute, ns, name+"-http"); err != nil || !found {
		return finding{Change: !found, What: "the status block's HTTP route is missing"}, err
	}
	if _, err := c.Clientset.AppsV1().Deployments(ns).Get(ctx, statusblock.ResponderName, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return finding{Change: true, What: "the status responder is missing"}, nil
	} else if err != nil {
		return finding{}, fmt.Errorf("read Deployment %s/%s: %w", ns, statusblock.ResponderName, err)
	}
	return finding{}, nil
}

// applyStatusBlock applies the block of a region that is not active, or removes it.
func (s *Service) applyStatusBlock(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, t *reconcileTarget) error {
	if t.Region.Status == store.RegionActive {
		return s.StatusBlock.RemoveBlock(ctx, jc, c, &t.Region)
	}
	return s.StatusBlock.ApplyBlock(ctx, jc, c, &t.Region)
}

// checkTracing: where a region of the cluster with Serving ready has tracing on (its
// mode, or the console's default), Tempo and the OpenTelemetry Collector run this
// release's charts and values (their images are in the values); elsewhere nothing.
func (s *Service) checkTracing(ctx context.Context, c *kube.Cluster, t *reconcileTarget) (finding, error) {
	users := s.tracingUsers(t)
	if len(users) == 0 {
		return finding{What: "tracing is off for every region of the cluster: nothing to install"}, nil
	}
	b := s.Observability.Backend(users)
	st, _, err := observability.ClusterStorage(ctx, c, b.Monitoring)
	if err != nil {
		return finding{}, err
	}
	var fs []finding
	for _, want := range s.Observability.TracingReleases(b, st) {
		rel, err := helm.Status(c, want.Namespace, want.Name)
		if err != nil {
			return finding{}, err
		}
		if d := releaseDrift(rel, want.Name, want.Chart.Version, want.Values); d != "" {
			fs = append(fs, finding{Change: true, What: d})
		}
	}
	return joinFindings(fs...), nil
}

// applyTracing installs or updates the tracing backend and records it on the cluster's regions.
func (s *Service) applyTracing(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, t *reconcileTarget) error {
	if err := s.Observability.InstallTracing(ctx, jc, c, s.Observability.Backend(s.tracingUsers(t))); err != nil {
		return err
	}
	return s.recordComponent(ctx, t, "tracing", store.ComponentState{Status: store.ComponentReady, Version: observability.ChartTempo.Version})
}

// tracingUsers are the target cluster's regions with Serving ready and tracing on.
func (s *Service) tracingUsers(t *reconcileTarget) []store.Region {
	var users []store.Region
	for _, r := range t.Regions {
		if r.ServingStatus == store.ComponentReady && s.Observability.TracingEnabled(&r) {
			users = append(users, r)
		}
	}
	return users
}

// recordComponent records a component's state on every region of the target's cluster
// that has Serving ready (they share the component).
func (s *Service) recordComponent(ctx context.Context, t *reconcileTarget, name string, cs store.ComponentState) error {
	for _, r := range t.Regions {
		if r.ServingStatus != store.ComponentReady {
			continue
		}
		if err := s.Store.SetComponent(ctx, r.ID, name, cs); err != nil {
			return err
		}
	}
	return nil
}

// traefikImageValues is the image of the configured Traefik, as the chart's values name it.
func (s *Service) traefikImageValues() any {
	return knative.TraefikValues(knative.TraefikOptions{Image: s.Cfg.TraefikImage})["image"]
}

// imageName prints an image of the traefik chart's values.
func imageName(v any) string {
	m, _ := v.(map[string]any)
	if m == nil {
		return "the chart's default image"
	}
	return fmt.Sprintf("%v/%v:%v", m["registry"], m["repository"], m["tag"])
}

// checkTraefikImage: the region Traefik of this release's chart runs the configured image
// (RunR's mirror by default); a Traefik of another chart version is left alone.
func (s *Service) checkTraefikImage(_ context.Context, c *kube.Cluster, t *reconcileTarget) (finding, error) {
	rel, err := traefikRelease(c, t)
	if err != nil || rel == nil {
		return finding{}, err
	}
	if v := rel.Chart.Metadata.Version; v != knative.ChartTraefik.Version {
		return finding{What: "kept: Traefik chart " + v + " is another Traefik version than this release's (" + knative.ChartTraefik.Version + ")"}, nil
	}
	want := s.traefikImageValues()
	if sameJSON(rel.Config["image"], want) {
		return finding{}, nil
	}
	return finding{Change: true, What: "Traefik image " + imageName(rel.Config["image"]) + " → " + s.Cfg.TraefikImage}, nil
}

// applyTraefikImage upgrades the traefik release with its values reused and only the
// image set: its pods roll once.
func (s *Service) applyTraefikImage(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, t *reconcileTarget) error {
	rel, err := traefikRelease(c, t)
	if err != nil || rel == nil {
		return err
	}
	nr, err := s.HelmApply(ctx, jc, c, kit.Release{Namespace: t.Region.ServingNamespace, Name: kit.TraefikRelease, Chart: knative.ChartTraefik,
		Values: withKey(rel.Config, "image", s.traefikImageValues())})
	if err != nil {
		return err
	}
	return kit.WaitRelease(ctx, jc, c, nr, engine.WaitOpts{})
}

// checkAgent: the cluster's runr-agent runs this console's agent image and connects to
// the address the region's settings give, and every other helper of the console's own on
// the cluster runs this console's image (ownHelpers).
func (s *Service) checkAgent(ctx context.Context, c *kube.Cluster, t *reconcileTarget) (finding, error) {
	helpers, err := s.helperDrift(ctx, c, t)
	if err != nil {
		return finding{}, err
	}
	d, err := c.Clientset.AppsV1().Deployments(observability.ObservabilityNamespace).Get(ctx, observability.AgentName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return joinFindings(append([]finding{{Change: true, What: "install the runr-agent"}}, helperFindings(helpers)...)...), nil
	}
	if err != nil {
		return finding{}, fmt.Errorf("read Deployment %s/%s: %w", observability.ObservabilityNamespace, observability.AgentName, err)
	}
	if len(d.Spec.Template.Spec.Containers) == 0 {
		return finding{Change: true, What: "the runr-agent has no container"}, nil
	}
	ct := d.Spec.Template.Spec.Containers[0]
	var fs []finding
	if want, err := s.RegionImage(ctx, &t.Region, s.Cfg.AgentImage); err != nil {
		return finding{}, err
	} else if ct.Image != want {
		fs = append(fs, finding{Change: true, What: "agent image " + ct.Image + " → " + want})
	}
	url := ""
	for _, e := range ct.Env {
		if e.Name == "RUNR_AGENT_URL" {
			url = e.Value
		}
	}
	want := s.Observability.AgentAddress(ctx, c, &t.Region)
	if want == "" {
		return finding{}, observability.ErrNoAgentAddress
	}
	if url != want {
		fs = append(fs, finding{Change: true, What: fmt.Sprintf("agent address %q → %q", url, want)})
	}
	return joinFindings(append(fs, helperFindings(helpers)...)...), nil
}

// applyAgent deploys the runr-agent anew, moves every other helper to this console's
// image, and records the agent.
func (s *Service) applyAgent(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, t *reconcileTarget) error {
	if err := s.Observability.InstallAgent(ctx, jc, c, &t.Region); err != nil {
		return err
	}
	helpers, err := s.helperDrift(ctx, c, t)
	if err != nil {
		return err
	}
	for _, h := range helpers {
		if err := h.moveImage(ctx, jc, c); err != nil {
			return err
		}
	}
	return s.recordComponent(ctx, t, "agent", store.ComponentState{Status: store.ComponentReady})
}

// ownHelper is a workload of the console's own program on a cluster, other than the
// runr-agent: reconcile moves its container to this console's image (through the region's
// image mirror) after an upgrade or a change of the mirror; the image-mirror step also
// moves the managed Redis with it.
// The pre-pull and containerd's restart are short-lived: they always run the current image.
type ownHelper struct {
	kind             string // Deployment or DaemonSet
	namespace, name  string
	container, image string // the container and the image it should run
	current          string // the image it runs (helperDrift)
}

// ownHelpers are the helpers that may run on a target's cluster: the node mirror, the KVM
// probe, the gVisor installer, and per region its status responder and domain alias proxy.
func (s *Service) ownHelpers(t *reconcileTarget, mirror string) []ownHelper {
	agent, responder := imagemirror.Map(mirror, s.Cfg.AgentImage), imagemirror.Map(mirror, s.Cfg.ResponderImage)
	hs := []ownHelper{
		{kind: "DaemonSet", namespace: registry.Namespace, name: registry.MirrorDaemonSet, container: "mirror", image: agent},
		{kind: "DaemonSet", namespace: isolation.SandboxNamespace, name: isolation.KVMProbe, container: "installer", image: agent},
		{kind: "DaemonSet", namespace: isolation.SandboxNamespace, name: isolation.GVisorInstaller, container: "installer", image: agent},
	}
	responders := map[string]bool{}
	for _, r := range t.Regions {
		if r.ServingNamespace != "" && !responders[r.ServingNamespace] {
			responders[r.ServingNamespace] = true
			hs = append(hs, ownHelper{kind: "Deployment", namespace: r.ServingNamespace, name: statusblock.ResponderName, container: "responder", image: responder})
		}
		hs = append(hs, ownHelper{kind: "Deployment", namespace: r.Name, name: domains.AliasName, container: "alias", image: agent})
	}
	return hs
}

// helperDrift reads the helpers that run on the cluster and returns those whose container
// runs another image than this console's.
func (s *Service) helperDrift(ctx context.Context, c *kube.Cluster, t *reconcileTarget) ([]ownHelper, error) {
	mirror, err := s.ImageMirror(ctx, &t.Region)
	if err != nil {
		return nil, err
	}
	var out []ownHelper
	for _, h := range s.ownHelpers(t, mirror) {
		var containers []corev1.Container
		switch h.kind {
		case "DaemonSet":
			ds, err := c.Clientset.AppsV1().DaemonSets(h.namespace).Get(ctx, h.name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue
			} else if err != nil {
				return nil, fmt.Errorf("read DaemonSet %s/%s: %w", h.namespace, h.name, err)
			}
			containers = ds.Spec.Template.Spec.Containers
		default:
			d, err := c.Clientset.AppsV1().Deployments(h.namespace).Get(ctx, h.name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue
			} else if err != nil {
				return nil, fmt.Errorf("read Deployment %s/%s: %w", h.namespace, h.name, err)
			}
			containers = d.Spec.Template.Spec.Containers
		}
		for _, ct := range containers {
			// An image that differs by its namespace only is image-registry's to move.
			if moved, _ := config.MoveImage(s.Cfg.ImageMoves, ct.Image); ct.Name == h.container && moved != h.image {
				h.current = ct.Image
				out = append(out, h)
			}
		}
	}
	return out, nil
}

func helperFindings(hs []ownHelper) []finding {
	fs := make([]finding, len(hs))
	for i, h := range hs {
		fs[i] = finding{Change: true, What: fmt.Sprintf("%s %s/%s image %s → %s", h.kind, h.namespace, h.name, h.current, h.image)}
	}
	return fs
}

// moveImage sets the helper's container to its image and waits for the rollout.
func (h ownHelper) moveImage(ctx context.Context, jc *engine.JobContext, c *kube.Cluster) error {
	spec := map[string]any{"template": map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": h.container, "image": h.image}}}}}
	var err error
	cond := c.DeploymentAvailable(h.namespace, h.name)
	if h.kind == "DaemonSet" {
		// A new version rolls on every node, also where image-registry kept the pods.
		spec["updateStrategy"] = map[string]any{"type": "RollingUpdate"}
		err = strategicPatch(ctx, c.Clientset.AppsV1().DaemonSets(h.namespace).Patch, h.name, map[string]any{"spec": spec})
		cond = c.DaemonSetReady(h.namespace, h.name)
	} else {
		err = strategicPatch(ctx, c.Clientset.AppsV1().Deployments(h.namespace).Patch, h.name, map[string]any{"spec": spec})
	}
	if err != nil {
		return fmt.Errorf("set the image of %s %s/%s: %w", h.kind, h.namespace, h.name, err)
	}
	if err := jc.Wait(ctx, fmt.Sprintf("%s %s/%s to roll out %s", h.kind, h.namespace, h.name, h.image), engine.WaitOpts{}, cond); err != nil {
		return err
	}
	jc.Note("%s %s/%s runs %s", h.kind, h.namespace, h.name, h.image)
	return nil
}

// checkObservability: Prometheus and Loki (unless the region uses its own) run this
// release's charts and values, and no budget of an earlier console is left.
func (s *Service) checkObservability(ctx context.Context, c *kube.Cluster, t *reconcileTarget) (finding, error) {
	st, _, err := observability.ClusterStorage(ctx, c, t.Region.Monitoring.V)
	if err != nil {
		return finding{}, err
	}
	var fs []finding
	for _, o := range observability.OwnReleases(t.Region.Monitoring.V, st) {
		rel, err := helm.Status(c, observability.ObservabilityNamespace, o.Name)
		if err != nil {
			return finding{}, err
		}
		if d := releaseDrift(rel, o.Name, o.Chart.Version, o.Values); d != "" {
			fs = append(fs, finding{Change: true, What: d})
		}
		legacy, err := hasLegacyPDB(ctx, c, o.Name)
		if err != nil {
			return finding{}, err
		}
		if legacy {
			fs = append(fs, finding{Change: true, What: "remove the PodDisruptionBudget " + observability.LegacyPDBs[o.Name] + " of an earlier console"})
		}
		if o.Name == observability.PrometheusRelease {
			f, err := s.checkCAdvisor(ctx, c, t)
			if err != nil {
				return finding{}, err
			}
			fs = append(fs, f)
		}
	}
	return joinFindings(fs...), nil
}

// checkCAdvisor: cAdvisor runs this release's image (through the region's mirror) beside
// RunR's Prometheus.
func (s *Service) checkCAdvisor(ctx context.Context, c *kube.Cluster, t *reconcileTarget) (finding, error) {
	m, err := s.ImageMirror(ctx, &t.Region)
	if err != nil {
		return finding{}, err
	}
	drift, found, err := cadvisorDrift(ctx, c, m)
	if err != nil {
		return finding{}, err
	}
	if !found {
		return finding{Change: true, What: "install cAdvisor (" + imagemirror.Map(m, observability.CAdvisorImage) + ")"}, nil
	}
	return joinFindings(helperFindings(drift)...), nil
}

// cadvisorDrift is cAdvisor's DaemonSet when it does not run its image through mirror m
// (found: it exists).
func cadvisorDrift(ctx context.Context, c *kube.Cluster, m string) (drift []ownHelper, found bool, err error) {
	ds, err := c.Clientset.AppsV1().DaemonSets(observability.ObservabilityNamespace).Get(ctx, observability.CAdvisorName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read DaemonSet %s/%s: %w", observability.ObservabilityNamespace, observability.CAdvisorName, err)
	}
	want := imagemirror.Map(m, observability.CAdvisorImage)
	for _, ct := range ds.Spec.Template.Spec.Containers {
		if ct.Name == observability.CAdvisorName && ct.Image != want {
			drift = append(drift, ownHelper{kind: "DaemonSet", namespace: observability.ObservabilityNamespace, name: observability.CAdvisorName,
				container: observability.CAdvisorName, image: want, current: ct.Image})
		}
	}
	return drift, true, nil
}

// hasLegacyPDB reports a budget an earlier console made for a release.
func hasLegacyPDB(ctx context.Context, c *kube.Cluster, rel string) (bool, error) {
	name := observability.LegacyPDBs[rel]
	pdb, err := c.Clientset.PolicyV1().PodDisruptionBudgets(observability.ObservabilityNamespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read PodDisruptionBudget %s/%s: %w", observability.ObservabilityNamespace, name, err)
	}
	return pdb.Labels["app.kubernetes.io/managed-by"] == "runr", nil
}

// applyObservability brings Prometheus and Loki to this release (what
// cluster:patch-observability does) and records them.
func (s *Service) applyObservability(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, t *reconcileTarget) error {
	for _, o := range observability.OwnReleases(t.Region.Monitoring.V, observability.Storage{}) {
		install, component := s.Observability.InstallPrometheus, "prometheus"
		if o.Name == observability.LokiRelease {
			install, component = s.Observability.InstallLoki, "loki"
		}
		if err := install(ctx, jc, c, &t.Region); err != nil {
			return err
		}
		if err := s.recordComponent(ctx, t, component, store.ComponentState{Status: store.ComponentReady}); err != nil {
			return err
		}
	}
	return nil
}
