package observability

import (
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
)

// RunR's mirrors of the tracing images (ghcr.io/brf-tech/runr, regions.md "Images and
// Helm charts"), at the tag each chart defaults to (its appVersion).
const (
	tracingRegistry   = "ghcr.io"
	tempoRepository   = "brf-tech/runr/reqs/tempo"
	collectorImageRef = "ghcr.io/brf-tech/runr/reqs/opentelemetry-collector-contrib"
)

// PrometheusValues are kube-prometheus-stack's values (release knative).
func PrometheusValues() map[string]any {
	return map[string]any{
		"grafana":           map[string]any{"enabled": false},
		"windowsMonitoring": map[string]any{"enabled": false},
		"prometheus": map[string]any{
			"prometheusSpec": map[string]any{
				"priorityClassName": PriorityClassName, "retention": "10d",
				"resources": map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "512Mi"}},
			},
			// The chart's own budget selects exactly the Prometheus pods (by
			// operator.prometheus.io/name). One may go at a time: a drain can move the single
			// replica, never two at once. minAvailable (the chart's default, 1) would refuse
			// every eviction of a single replica: null removes it.
			"podDisruptionBudget": map[string]any{"enabled": true, "maxUnavailable": 1, "minAvailable": nil},
		},
	}
}

// LokiValues are loki-stack's values.
func LokiValues() map[string]any {
	return map[string]any{
		// No loki.podDisruptionBudget: loki 2.16.0 (loki-stack's subchart) renders it as
		// policy/v1beta1 on every cluster (its helper looks for the plural
		// "policy/v1/PodDisruptionBudgets"), which Kubernetes 1.25 removed, and the install
		// fails. Loki runs one replica (the chart's default), which a budget of
		// maxUnavailable 1 would let go anyway: it needs none, and a drain moves it.
		"loki":     map[string]any{"priorityClassName": PriorityClassName},
		"promtail": map[string]any{"enabled": true},
		"grafana":  map[string]any{"enabled": false},
	}
}

// TempoValues are Tempo's values, with traces kept retentionHours and image, when set,
// instead of RunR's mirror (a tagged reference with its registry, config checks it). The
// chart composes its image as tempo.registry/tempo.repository:tag, registry defaulting to
// docker.io.
func TempoValues(retentionHours int, image string) map[string]any {
	tempo := map[string]any{"registry": tracingRegistry, "repository": tempoRepository, "retention": fmt.Sprintf("%dh", retentionHours)}
	if ref, err := name.NewTag(image, name.StrictValidation); err == nil {
		tempo["registry"], tempo["repository"], tempo["tag"] = ref.RegistryStr(), ref.RepositoryStr(), ref.TagStr()
	}
	return map[string]any{"tempo": tempo, "persistence": map[string]any{"enabled": false}}
}

// OtelValues are the OpenTelemetry Collector's values: OTLP in, Tempo out, with image,
// when set, instead of RunR's mirror.
func OtelValues(image string) map[string]any {
	img := map[string]any{"repository": collectorImageRef}
	if ref, err := name.NewTag(image, name.StrictValidation); err == nil {
		img["repository"], img["tag"] = ref.Context().Name(), ref.TagStr()
	}
	return map[string]any{
		"mode": "deployment",
		// The chart composes the image from the repository alone (registry included).
		"image": img,
		"config": map[string]any{
			"receivers": map[string]any{"otlp": map[string]any{"protocols": map[string]any{"grpc": map[string]any{}, "http": map[string]any{}}}},
			"exporters": map[string]any{"otlp/tempo": map[string]any{"endpoint": TempoRelease + "." + ObservabilityNamespace + ".svc:4317", "tls": map[string]any{"insecure": true}}},
			"service":   map[string]any{"pipelines": map[string]any{"traces": map[string]any{"receivers": []any{"otlp"}, "exporters": []any{"otlp/tempo"}}}},
		},
	}
}
