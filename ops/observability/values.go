package observability

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/google/go-containerregistry/pkg/name"
)

// RunR's mirrors of the tracing images (ghcr.io/brf-tech/runr, regions.md "Images and
// Helm charts"), at the tag each chart defaults to (its appVersion).
const (
	tracingRegistry   = "ghcr.io"
	tempoRepository   = "brf-tech/runr/reqs/tempo"
	collectorImageRef = "ghcr.io/brf-tech/runr/reqs/opentelemetry-collector-contrib"
)

// PrometheusValues are kube-prometheus-stack's values (release knative), keeping the data
// on st's volume for st's retention.
func PrometheusValues(st Storage) map[string]any {
	spec := map[string]any{
		"priorityClassName": PriorityClassName, "retention": fmt.Sprintf("%dd", st.PrometheusRetentionDays),
		"resources": map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "512Mi"}},
	}
	if st.Persist {
		claim := map[string]any{"accessModes": []any{"ReadWriteOnce"},
			"resources": map[string]any{"requests": map[string]any{"storage": gi(st.PrometheusSizeGi)}}}
		if st.Class != "" {
			claim["storageClassName"] = st.Class
		}
		spec["storageSpec"] = map[string]any{"volumeClaimTemplate": map[string]any{"spec": claim}}
		// Prometheus removes its oldest blocks before the volume fills up (retention is
		// by time and size, whichever comes first): 85 % of the volume, in MiB.
		spec["retentionSize"] = fmt.Sprintf("%dMB", st.PrometheusSizeGi*1024*85/100)
	}
	return map[string]any{
		"grafana":           map[string]any{"enabled": false},
		"windowsMonitoring": map[string]any{"enabled": false},
		"prometheus": map[string]any{
			"prometheusSpec": spec,
			// The chart's own budget selects exactly the Prometheus pods (by
			// operator.prometheus.io/name). One may go at a time: a drain can move the single
			// replica, never two at once. minAvailable (the chart's default, 1) would refuse
			// every eviction of a single replica: null removes it.
			"podDisruptionBudget": map[string]any{"enabled": true, "maxUnavailable": 1, "minAvailable": nil},
		},
	}
}

// LokiValues are loki-stack's values, keeping the logs on st's volume for st's retention
// (Loki's compactor deletes older ones; the chart's table manager keeps everything).
func LokiValues(st Storage) map[string]any {
	loki := map[string]any{
		// No loki.podDisruptionBudget: loki 2.16.0 (loki-stack's subchart) renders it as
		// policy/v1beta1 on every cluster (its helper looks for the plural
		// "policy/v1/PodDisruptionBudgets"), which Kubernetes 1.25 removed, and the install
		// fails. Loki runs one replica (the chart's default), which a budget of
		// maxUnavailable 1 would let go anyway: it needs none, and a drain moves it.
		"priorityClassName": PriorityClassName,
		"config": map[string]any{
			"compactor":     map[string]any{"retention_enabled": true},
			"limits_config": map[string]any{"retention_period": fmt.Sprintf("%dh", st.LokiRetentionDays*24)},
		},
		"persistence": persistence(st.Persist, st.Class, st.LokiSizeGi),
	}
	return map[string]any{
		"loki":     loki,
		"promtail": map[string]any{"enabled": true},
		"grafana":  map[string]any{"enabled": false},
	}
}

// persistence is the persistence value of the Loki and Tempo charts.
func persistence(enabled bool, class string, sizeGi int) map[string]any {
	if !enabled {
		return map[string]any{"enabled": false}
	}
	p := map[string]any{"enabled": true, "size": gi(sizeGi)}
	if class != "" {
		p["storageClassName"] = class
	}
	return p
}

func gi(n int) string { return fmt.Sprintf("%dGi", n) }

// chartClaims are the volume claims the Loki and Tempo charts render for persistence (one,
// named storage), to compare with a StatefulSet's.
func chartClaims(enabled bool, class string, sizeGi int) []corev1.PersistentVolumeClaim {
	if !enabled {
		return nil
	}
	c := corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "storage"},
		Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(gi(sizeGi))}}}}
	if class != "" {
		c.Spec.StorageClassName = &class
	}
	return []corev1.PersistentVolumeClaim{c}
}

// TempoValues are Tempo's values, with traces kept retentionHours and image, when set,
// instead of RunR's mirror (a tagged reference with its registry, config checks it). The
// chart composes its image as tempo.registry/tempo.repository:tag, registry defaulting to
// docker.io.
func TempoValues(retentionHours int, image string, st Storage) map[string]any {
	tempo := map[string]any{"registry": tracingRegistry, "repository": tempoRepository, "retention": fmt.Sprintf("%dh", retentionHours)}
	if ref, err := name.NewTag(image, name.StrictValidation); err == nil {
		tempo["registry"], tempo["repository"], tempo["tag"] = ref.RegistryStr(), ref.RepositoryStr(), ref.TagStr()
	}
	return map[string]any{"tempo": tempo, "persistence": persistence(st.Persist, st.Class, st.TempoSizeGi)}
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
