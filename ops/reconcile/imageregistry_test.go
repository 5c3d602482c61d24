package reconcile

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestRolloutBlocker: a Redis paused by someone else or in the middle of a rollout is
// kept; one this step paused itself (an interrupted run) and a settled one move.
func TestRolloutBlocker(t *testing.T) {
	deployment := func(paused bool, annotations map[string]any, generation, observed, replicas, updated, total int64) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"name": "runr-redis", "generation": generation, "annotations": annotations},
			"spec":     map[string]any{"replicas": replicas, "paused": paused},
			"status":   map[string]any{"observedGeneration": observed, "replicas": total, "updatedReplicas": updated},
		}}
	}
	for _, tc := range []struct {
		name string
		d    *unstructured.Unstructured
		kept string
	}{
		{"settled", deployment(false, nil, 3, 3, 1, 1, 1), ""},
		{"paused by someone else", deployment(true, nil, 3, 3, 1, 1, 1), "paused by someone else"},
		{"paused by an interrupted run", deployment(true, map[string]any{movingAnnotation: "paused"}, 3, 3, 1, 1, 1), ""},
		{"spec not seen yet", deployment(false, nil, 4, 3, 1, 1, 1), "in the middle of a rollout"},
		{"new replica not up yet", deployment(false, nil, 4, 4, 1, 0, 1), "in the middle of a rollout"},
		{"old replica still running", deployment(false, nil, 4, 4, 1, 1, 2), "in the middle of a rollout"},
	} {
		got := rolloutBlocker(tc.d)
		if tc.kept == "" && got != "" || tc.kept != "" && !strings.Contains(got, tc.kept) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.kept)
		}
	}
}
