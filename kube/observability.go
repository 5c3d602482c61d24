package kube

import (
	"context"

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

func (c *Cluster) ensurePriorityClass(ctx context.Context) error {
	_, err := c.ApplyObject(ctx, map[string]any{
		"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
		"metadata":    map[string]any{"name": PriorityClassName, "labels": toAnyMap(managedLabels(nil))},
		"value":       1000000,
		"description": "RunR's Prometheus and Loki: evicted last, so that a region keeps its metrics and logs.",
	})
	return err
}

func (c *Cluster) ensurePDB(ctx context.Context, name string, selector map[string]any) error {
	_, err := c.ApplyObject(ctx, map[string]any{
		"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
		"metadata": map[string]any{"name": name, "namespace": ObservabilityNamespace, "labels": toAnyMap(managedLabels(nil))},
		"spec":     map[string]any{"maxUnavailable": 1, "selector": map[string]any{"matchLabels": selector}},
	})
	return err
}

// installPrometheus installs kube-prometheus-stack (release knative) unless the region
// uses an existing Prometheus.
func (s *Service) installPrometheus(ctx context.Context, jc *JobContext, c *Cluster, r *store.Region) error {
	if u := r.Monitoring.V.PrometheusURL; u != "" {
		jc.Note("The region uses the existing Prometheus at %s: RunR installs none", u)
		return ErrSkip
	}
	if _, err := c.EnsureNamespace(ctx, ObservabilityNamespace, nil); err != nil {
		return err
	}
	if err := c.ensurePriorityClass(ctx); err != nil {
		return err
	}
	vals := PrometheusValues()
	rel, err := s.HelmApply(ctx, jc, c, Release{Namespace: ObservabilityNamespace, Name: PrometheusRelease, Chart: ChartPrometheus, Values: vals})
	if err != nil {
		return err
	}
	if err := jc.WaitRelease(ctx, c, rel.Manifest, WaitOpts{}); err != nil {
		return err
	}
	if err := c.ensurePDB(ctx, "prometheus-"+PrometheusRelease, map[string]any{"app.kubernetes.io/instance": PrometheusRelease}); err != nil {
		return err
	}
	jc.Note("Prometheus (%s, release %s) runs in %s", ChartPrometheus, PrometheusRelease, ObservabilityNamespace)
	return nil
}

// installLoki installs loki-stack unless the region uses an existing Loki.
func (s *Service) installLoki(ctx context.Context, jc *JobContext, c *Cluster, r *store.Region) error {
	if u := r.Monitoring.V.LokiURL; u != "" {
		jc.Note("The region uses the existing Loki at %s: RunR installs none", u)
		return ErrSkip
	}
	if _, err := c.EnsureNamespace(ctx, ObservabilityNamespace, nil); err != nil {
		return err
	}
	if err := c.ensurePriorityClass(ctx); err != nil {
		return err
	}
	vals := LokiValues()
	rel, err := s.HelmApply(ctx, jc, c, Release{Namespace: ObservabilityNamespace, Name: LokiRelease, Chart: ChartLoki, Values: vals})
	if err != nil {
		return err
	}
	if err := jc.WaitRelease(ctx, c, rel.Manifest, WaitOpts{}); err != nil {
		return err
	}
	if err := c.ensurePDB(ctx, LokiRelease, map[string]any{"app.kubernetes.io/instance": LokiRelease}); err != nil {
		return err
	}
	jc.Note("Loki (%s, release %s) runs in %s", ChartLoki, LokiRelease, ObservabilityNamespace)
	return nil
}

// installTracing installs the tracing backend: the OpenTelemetry Collector and Tempo,
// with the retention setting.
func (s *Service) installTracing(ctx context.Context, jc *JobContext, c *Cluster) error {
	if _, err := c.EnsureNamespace(ctx, ObservabilityNamespace, nil); err != nil {
		return err
	}
	tempo := TempoValues(s.Cfg.TracingRetentionHours)
	rel, err := s.HelmApply(ctx, jc, c, Release{Namespace: ObservabilityNamespace, Name: TempoRelease, Chart: ChartTempo, Values: tempo})
	if err != nil {
		return err
	}
	if err := jc.WaitRelease(ctx, c, rel.Manifest, WaitOpts{}); err != nil {
		return err
	}
	otel := OtelValues()
	rel, err = s.HelmApply(ctx, jc, c, Release{Namespace: ObservabilityNamespace, Name: OtelRelease, Chart: ChartOtelCollector, Values: otel})
	if err != nil {
		return err
	}
	if err := jc.WaitRelease(ctx, c, rel.Manifest, WaitOpts{}); err != nil {
		return err
	}
	jc.Note("Tracing: OpenTelemetry Collector %s and Tempo %s, traces kept %d h", ChartOtelCollector.Version, ChartTempo.Version, s.Cfg.TracingRetentionHours)
	return nil
}
