package observability

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/store"
)

// Observability names on the cluster.
const (
	ObservabilityNamespace = "observability"
	PrometheusRelease      = "knative"
	LokiRelease            = "loki-stack"
	PriorityClassName      = "observability-critical"
	OtelRelease            = "otel-collector"
	TempoRelease           = "tempo"
)

func ensurePriorityClass(ctx context.Context, c *kube.Cluster) error {
	_, err := c.ApplyObject(ctx, map[string]any{
		"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
		"metadata":    map[string]any{"name": PriorityClassName, "labels": kit.ToAnyMap(kit.ManagedLabels(nil))},
		"value":       1000000,
		"description": "RunR's Prometheus and Loki: evicted last, so that a region keeps its metrics and logs.",
	})
	return err
}

// LegacyPDBs are the PodDisruptionBudgets earlier consoles made in the observability
// namespace. Their selector (app.kubernetes.io/instance=<release>) matched DaemonSet pods
// and never Prometheus or Loki, so they refused evictions forever; Prometheus's chart
// brings its own budget, and Loki (one replica) has none.
var LegacyPDBs = map[string]string{PrometheusRelease: "prometheus-" + PrometheusRelease, LokiRelease: LokiRelease}

// removeLegacyPDB deletes a release's budget of an earlier console (only one RunR made).
func removeLegacyPDB(ctx context.Context, c *kube.Cluster, jc *engine.JobContext, release string) error {
	name := LegacyPDBs[release]
	pdb, err := c.Clientset.PolicyV1().PodDisruptionBudgets(ObservabilityNamespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read PodDisruptionBudget %s/%s: %w", ObservabilityNamespace, name, err)
	}
	if pdb.Labels["app.kubernetes.io/managed-by"] != "runr" {
		return nil
	}
	if err := c.Clientset.PolicyV1().PodDisruptionBudgets(ObservabilityNamespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete PodDisruptionBudget %s/%s: %w", ObservabilityNamespace, name, err)
	}
	jc.Logf("Deleted the PodDisruptionBudget %s/%s of an earlier console: it selected the wrong pods (Prometheus's chart brings its own budget; Loki runs one replica and has none)", ObservabilityNamespace, name)
	return nil
}

// OwnReleases are the releases of Prometheus and Loki RunR installs for a region (not
// those it takes from elsewhere), with their data on st.
func OwnReleases(m store.Monitoring, st Storage) []kit.Release {
	var out []kit.Release
	if m.PrometheusURL == "" {
		out = append(out, kit.Release{Namespace: ObservabilityNamespace, Name: PrometheusRelease, Chart: ChartPrometheus, Values: PrometheusValues(st)})
	}
	if m.LokiURL == "" {
		out = append(out, kit.Release{Namespace: ObservabilityNamespace, Name: LokiRelease, Chart: ChartLoki, Values: LokiValues(st)})
	}
	return out
}

// InstallPrometheus installs kube-prometheus-stack (release knative) unless the region
// uses an existing Prometheus.
func (s *Service) InstallPrometheus(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, r *store.Region) error {
	if u := r.Monitoring.V.PrometheusURL; u != "" {
		jc.Note("The region uses the existing Prometheus at %s: RunR installs none", u)
		return engine.ErrSkip
	}
	return s.installOwn(ctx, jc, c, r, PrometheusRelease)
}

// InstallLoki installs loki-stack unless the region uses an existing Loki.
func (s *Service) InstallLoki(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, r *store.Region) error {
	if u := r.Monitoring.V.LokiURL; u != "" {
		jc.Note("The region uses the existing Loki at %s: RunR installs none", u)
		return engine.ErrSkip
	}
	return s.installOwn(ctx, jc, c, r, LokiRelease)
}

// installOwn installs or upgrades RunR's Prometheus or Loki (name) for the region, on
// volumes where the cluster binds them.
func (s *Service) installOwn(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, r *store.Region, name string) error {
	st, warning, err := ClusterStorage(ctx, c, r.Monitoring.V)
	if err != nil {
		return err
	}
	if warning != "" {
		jc.Warnf("%s", warning)
	}
	var want kit.Release
	for _, rel := range OwnReleases(r.Monitoring.V, st) {
		if rel.Name == name {
			want = rel
		}
	}
	if _, err := kit.EnsureNamespace(ctx, jc, c, ObservabilityNamespace, nil); err != nil {
		return err
	}
	if err := ensurePriorityClass(ctx, c); err != nil {
		return err
	}
	if err := removeLegacyPDB(ctx, c, jc, name); err != nil {
		return err
	}
	// A volume of another size or class: Loki's chart keeps its data in a StatefulSet of
	// its own, Prometheus's operator makes its StatefulSet from the Prometheus resource.
	restore := func(context.Context) error { return nil }
	switch name {
	case LokiRelease:
		err = replaceStatefulSetForVolumes(ctx, jc, c, LokiRelease, chartClaims(st.Persist, st.Class, st.LokiSizeGi))
	case PrometheusRelease:
		restore, err = dropPrometheusVolume(ctx, jc, c, st)
	}
	if err != nil {
		return err
	}
	rel, err := s.HelmApply(ctx, jc, c, want)
	if err != nil {
		return err
	}
	if err := restore(ctx); err != nil {
		return err
	}
	if err := kit.WaitRelease(ctx, jc, c, rel, engine.WaitOpts{}); err != nil {
		return err
	}
	if name == PrometheusRelease {
		if err := s.installCAdvisor(ctx, jc, c); err != nil {
			return err
		}
	}
	jc.Note("%s (release %s) runs in %s; %s", want.Chart.Name, name, ObservabilityNamespace, st.describe(name))
	return nil
}

// TracingReleases are the tracing backend's releases, Tempo first: this release's charts
// and RunR's mirrors of the images unless the settings pin others.
func (s *Service) TracingReleases(b TracingBackend, st Storage) []kit.Release {
	tempo, otel := ChartTempo, ChartOtelCollector
	if v := s.Cfg.TracingTempoChartVersion; v != "" {
		tempo.Version = v
	}
	if v := s.Cfg.TracingCollectorChartVersion; v != "" {
		otel.Version = v
	}
	return []kit.Release{
		{Namespace: ObservabilityNamespace, Name: TempoRelease, Chart: tempo, Values: TempoValues(b.RetentionHours, s.Cfg.TracingTempoImage, st)},
		{Namespace: ObservabilityNamespace, Name: OtelRelease, Chart: otel, Values: OtelValues(s.Cfg.TracingCollectorImage)},
	}
}

// InstallTracing installs the tracing backend: the OpenTelemetry Collector and Tempo,
// with the retention the backend's deciding region asks for.
func (s *Service) InstallTracing(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, b TracingBackend) error {
	if _, err := kit.EnsureNamespace(ctx, jc, c, ObservabilityNamespace, nil); err != nil {
		return err
	}
	st, warning, err := ClusterStorage(ctx, c, b.Monitoring)
	if err != nil {
		return err
	}
	if warning != "" {
		jc.Warnf("%s", warning)
	}
	if err := replaceStatefulSetForVolumes(ctx, jc, c, TempoRelease, chartClaims(st.Persist, st.Class, st.TempoSizeGi)); err != nil {
		return err
	}
	rels := s.TracingReleases(b, st)
	for _, want := range rels {
		rel, err := s.HelmApply(ctx, jc, c, want)
		if err != nil {
			return err
		}
		if err := kit.WaitRelease(ctx, jc, c, rel, engine.WaitOpts{}); err != nil {
			return err
		}
	}
	jc.Note("Tracing: Tempo %s and OpenTelemetry Collector %s, traces kept %d h (decided by %s, the cluster's first region with tracing on); %s",
		rels[0].Chart.Version, rels[1].Chart.Version, b.RetentionHours, b.DecidedBy, st.describe(TempoRelease))
	return nil
}
