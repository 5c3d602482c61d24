package reconcile

import (
	"context"
	"fmt"
	"strings"

	"helm.sh/helm/v3/pkg/release"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"runr.dev/console/config"
	"runr.dev/console/engine"
	"runr.dev/console/helm"
	"runr.dev/console/imagemirror"
	"runr.dev/console/kube"
	"runr.dev/console/ops/admission"
	"runr.dev/console/ops/data"
	"runr.dev/console/ops/gpu"
	"runr.dev/console/ops/isolation"
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/knative"
	"runr.dev/console/ops/observability"
	"runr.dev/console/ops/redis"
	"runr.dev/console/ops/registry"
	"runr.dev/console/problem"
	"runr.dev/console/store"
)

// PlatformSettingsInput is a change of the platform settings (nil leaves one as it is).
type PlatformSettingsInput struct {
	BaseDomain  *string `json:"base_domain"`
	ImageMirror *string `json:"image_mirror"`
}

// UpdatePlatformSettings checks every field before it saves any: a refusal changes nothing.
// A new base domain moves the regions that follow it; the image mirror applies to the
// regions' next installs, and `runr reconcile --step image-mirror` moves what runs.
func (s *Service) UpdatePlatformSettings(ctx context.Context, actor kit.Actor, in PlatformSettingsInput) error {
	errs := map[string]string{}
	if in.BaseDomain != nil {
		if m := kit.ValidateDomain(strings.TrimSuffix(strings.ToLower(strings.TrimSpace(*in.BaseDomain)), ".")); m != "" {
			errs["base_domain"] = m
		}
	}
	var mirror string
	if in.ImageMirror != nil {
		mirror = imagemirror.Normalize(*in.ImageMirror)
		if m := imagemirror.Validate(mirror); m != "" {
			errs["image_mirror"] = m
		}
	}
	if len(errs) > 0 {
		return &problem.Invalid{Fields: errs}
	}
	if in.ImageMirror != nil {
		old, err := s.ConsoleImageMirror(ctx)
		if err != nil {
			return err
		}
		if old != mirror {
			if err := s.Store.SetSetting(ctx, kit.SettingImageMirror, mirror); err != nil {
				return fmt.Errorf("set the image mirror: %w", err)
			}
			s.Log.Info("image mirror changed", "from", old, "to", mirror, "user", actor.Email)
		}
	}
	if in.BaseDomain != nil {
		return s.Domains.SetBaseDomain(ctx, actor, *in.BaseDomain)
	}
	return nil
}

// StepImageMirror is the reconcile step that moves what runs on a cluster to its
// regions' image mirror (or back to the images' own registries).
const StepImageMirror = "image-mirror"

// mirroredCharts are the charts the console installs, by name, for re-rendering a release
// at its own chart version.
var mirroredCharts = []helm.ChartRef{registry.ChartZot, knative.ChartTraefik, knative.ChartKnativeOperator, observability.ChartPrometheus, observability.ChartLoki, observability.ChartOtelCollector,
	observability.ChartTempo, data.ChartCloudNativePG, data.ChartSeaweedFS, gpu.ChartGPUOperator, gpu.ChartDevicePlugin, isolation.ChartKataDeploy, isolation.ChartRuntimeClassManager,
	admission.ChartPolicyController}

// mirroredNamespaces are the namespaces of a target's cluster where the console installs
// Helm releases.
func mirroredNamespaces(t *reconcileTarget) []string {
	nss := []string{registry.Namespace, observability.ObservabilityNamespace, isolation.SandboxNamespace, data.DataNamespace, data.CNPGNamespace, admission.CosignNamespace, gpu.GPUNamespace}
	seen := map[string]bool{}
	for _, ns := range nss {
		seen[ns] = true
	}
	for _, r := range t.Regions {
		for _, ns := range []string{r.ServingNamespace, r.OperatorNamespace} {
			if ns != "" && !seen[ns] {
				seen[ns] = true
				nss = append(nss, ns)
			}
		}
	}
	return nss
}

// mirrorDrift is what of a target's cluster is not rendered for its mirror: Helm releases
// of the console's charts, the KnativeServing's registry, the console's own helpers.
type mirrorDrift struct {
	mirror   string
	releases []*release.Release
	serving  map[string]any // the registry the KnativeServing should have (nil: up to date)
	helpers  []ownHelper
	agent    bool
}

// findings says what the drift changes.
func (d *mirrorDrift) findings() finding {
	var fs []finding
	to := d.mirror
	if to == "" {
		to = "the images' own registries"
	}
	for _, rel := range d.releases {
		fs = append(fs, finding{Change: true, What: fmt.Sprintf("Helm release %s/%s → %s", rel.Namespace, rel.Name, to)})
	}
	if d.serving != nil {
		fs = append(fs, finding{Change: true, What: "KnativeServing images → " + to})
	}
	if d.agent {
		fs = append(fs, finding{Change: true, What: "runr-agent → " + to})
	}
	return joinFindings(append(fs, helperFindings(d.helpers)...)...)
}

// readMirrorDrift reads what of a target's cluster is not rendered for its mirror.
func (s *Service) readMirrorDrift(ctx context.Context, c *kube.Cluster, t *reconcileTarget) (*mirrorDrift, error) {
	m, err := s.ImageMirror(ctx, &t.Region)
	if err != nil {
		return nil, err
	}
	d := &mirrorDrift{mirror: m}
	if d.releases, err = releasesNotFor(ctx, c, t, m); err != nil {
		return nil, err
	}
	if d.serving, err = servingRegistryDrift(ctx, c, t, m); err != nil {
		return nil, err
	}
	if d.helpers, err = s.helperDrift(ctx, c, t); err != nil {
		return nil, err
	}
	redis, err := s.redisDrift(ctx, c, t, m)
	if err != nil {
		return nil, err
	}
	d.helpers = append(d.helpers, redis...)
	cadvisor, _, err := cadvisorDrift(ctx, c, m)
	if err != nil {
		return nil, err
	}
	d.helpers = append(d.helpers, cadvisor...)
	agent, err := c.Clientset.AppsV1().Deployments(observability.ObservabilityNamespace).Get(ctx, observability.AgentName, metav1.GetOptions{})
	if err == nil && len(agent.Spec.Template.Spec.Containers) > 0 {
		d.agent = agent.Spec.Template.Spec.Containers[0].Image != imagemirror.Map(m, s.Cfg.AgentImage)
	} else if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("read Deployment %s/%s: %w", observability.ObservabilityNamespace, observability.AgentName, err)
	}
	return d, nil
}

// releasesNotFor lists the releases of the console's charts on a target's cluster that
// were not rendered for mirror m.
func releasesNotFor(ctx context.Context, c *kube.Cluster, t *reconcileTarget, m string) ([]*release.Release, error) {
	known := map[string]bool{}
	for _, ch := range mirroredCharts {
		known[ch.Name] = true
	}
	var out []*release.Release
	for _, ns := range mirroredNamespaces(t) {
		names, err := helm.Deployed(ctx, c, ns)
		if err != nil {
			return nil, err
		}
		for _, name := range kit.SortedKeys(names) {
			rel, err := helm.Status(c, ns, name)
			if err != nil {
				return nil, err
			}
			if rel != nil && rel.Chart != nil && known[rel.Chart.Metadata.Name] && !helm.RenderedFor(rel, m) {
				out = append(out, rel)
			}
		}
	}
	return out, nil
}

// servingRegistryDrift is the spec.registry the target's KnativeServing should have for
// mirror m (an empty map: none), or nil when it has it (or is adopted, or absent).
func servingRegistryDrift(ctx context.Context, c *kube.Cluster, t *reconcileTarget, m string) (map[string]any, error) {
	if t.Region.ServingNamespace == "" || knative.ServingAdopted(&t.Region) {
		return nil, nil
	}
	ks, found, err := c.Get(ctx, kube.GVKKnativeServing, t.Region.ServingNamespace, kit.KnativeServingName)
	if err != nil || !found {
		return nil, err
	}
	want := knative.MirrorRegistry(m, knative.ServingRelease(t.Region.OperatorVersion))
	have, _, _ := unstructured.NestedMap(ks.Object, "spec", "registry")
	haveQueue, _, _ := unstructured.NestedString(ks.Object, "spec", "config", "deployment", knative.QueueKey)
	if (sameJSON(have, want) || (want == nil && len(have) == 0)) && haveQueue == knative.QueueSidecarImage(want) {
		return nil, nil
	}
	if want == nil {
		return map[string]any{}, nil
	}
	return want, nil
}

// redisDrift lists the managed Redis Deployments of the target's regions that do not run
// RunR's Redis image through mirror m.
func (s *Service) redisDrift(ctx context.Context, c *kube.Cluster, t *reconcileTarget, m string) ([]ownHelper, error) {
	want := imagemirror.Map(m, s.Cfg.RedisImage)
	var out []ownHelper
	for _, r := range t.Regions {
		if r.RedisMode != store.RedisManaged {
			continue
		}
		dep, err := c.Clientset.AppsV1().Deployments(r.Name).Get(ctx, redis.RedisName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		} else if err != nil {
			return nil, fmt.Errorf("read Deployment %s/%s: %w", r.Name, redis.RedisName, err)
		}
		for _, ct := range dep.Spec.Template.Spec.Containers {
			// One that differs by its image namespace only is image-registry's: it keeps its pod.
			if moved, _ := config.MoveImage(s.Cfg.ImageMoves, ct.Image); ct.Name == "redis" && moved != want {
				out = append(out, ownHelper{kind: "Deployment", namespace: r.Name, name: redis.RedisName, container: "redis", image: want, current: ct.Image})
			}
		}
	}
	return out, nil
}

// checkImageMirror: every release, the KnativeServing and the console's helpers of the
// cluster pull through its regions' mirror.
func (s *Service) checkImageMirror(ctx context.Context, c *kube.Cluster, t *reconcileTarget) (finding, error) {
	d, err := s.readMirrorDrift(ctx, c, t)
	if err != nil {
		return finding{}, err
	}
	return d.findings(), nil
}

// applyImageMirror upgrades each release with its values and chart version kept, rendered
// for the mirror (its pods roll once), sets the KnativeServing's registry and moves the
// console's helpers and agent.
func (s *Service) applyImageMirror(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, t *reconcileTarget) error {
	d, err := s.readMirrorDrift(ctx, c, t)
	if err != nil {
		return err
	}
	for _, rel := range d.releases {
		ref := helm.ChartRef{Name: rel.Chart.Metadata.Name, Version: rel.Chart.Metadata.Version}
		for _, ch := range mirroredCharts {
			if ch.Name == ref.Name {
				ref.Repo = ch.Repo
			}
		}
		nr, err := s.HelmApply(ctx, jc, c, kit.Release{Namespace: rel.Namespace, Name: rel.Name, Chart: ref, Values: rel.Config, Repair: true})
		if err != nil {
			return err
		}
		if err := kit.WaitRelease(ctx, jc, c, nr, engine.WaitOpts{}); err != nil {
			return err
		}
	}
	if d.serving != nil {
		reg := d.serving
		if len(d.serving) == 0 {
			reg = nil
		}
		if err := c.MergePatch(ctx, kube.GVKKnativeServing, t.Region.ServingNamespace, kit.KnativeServingName, knative.MirrorPatch(reg)); err != nil {
			return err
		}
		jc.Note("KnativeServing %s/%s pulls Knative's images through %s", t.Region.ServingNamespace, kit.KnativeServingName, kit.OrV(d.mirror, "their own registries"))
	}
	if d.agent {
		if err := s.Observability.InstallAgent(ctx, jc, c, &t.Region); err != nil {
			return err
		}
	}
	for _, h := range d.helpers {
		if err := h.moveImage(ctx, jc, c); err != nil {
			return err
		}
	}
	return nil
}
