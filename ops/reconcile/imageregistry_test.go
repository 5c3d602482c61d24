package reconcile

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"runr.dev/console/config"
	"runr.dev/console/kube"
	"runr.dev/console/ops/isolation"
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/redis"
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

// TestMovingWorkloads: the images of a workload's containers and init containers under an
// earlier namespace move (JSON pointers into its pod spec, a CronJob's included); the
// queue Redis and the node installers keep their pods, the KVM probe does not; a workload
// of other images has nothing to move.
func TestMovingWorkloads(t *testing.T) {
	s := &Service{Kit: &kit.Kit{Cfg: &config.Config{ImageMoves: config.DefaultImageMoves}}}
	pod := func(spec []string, images ...string) *unstructured.Unstructured {
		o := map[string]any{"metadata": map[string]any{"namespace": "eu", "name": "w"}}
		var cts []any
		for i, img := range images {
			cts = append(cts, map[string]any{"name": fmt.Sprintf("c%d", i), "image": img})
		}
		_ = unstructured.SetNestedSlice(o, cts, append(slices.Clone(spec), "containers")...)
		_ = unstructured.SetNestedSlice(o, []any{map[string]any{"name": "init", "image": "ghcr.io/runrsh/reqs/busybox:1"}}, append(slices.Clone(spec), "initContainers")...)
		return &unstructured.Unstructured{Object: o}
	}
	cron := []string{"spec", "jobTemplate", "spec", "template", "spec"}
	w, ok := s.movingWorkloadOf(kube.GVKCronJob, cron, pod(cron, "docker.io/library/nginx:1", "ghcr.io/brf-tech/runr-wrapper:0.5.1"))
	if !ok || len(w.changes) != 2 || w.keepPods {
		t.Fatalf("CronJob: %+v", w)
	}
	if ch := w.changes[0]; ch.path != "/spec/jobTemplate/spec/template/spec/initContainers/0/image" || ch.to != "ghcr.io/brf-tech/runr/reqs/busybox:1" {
		t.Errorf("init container: %+v", ch)
	}
	if ch := w.changes[1]; ch.path != "/spec/jobTemplate/spec/template/spec/containers/1/image" || ch.container != "c1" || ch.to != "ghcr.io/brf-tech/runr/wrapper:0.5.1" {
		t.Errorf("container: %+v", ch)
	}
	tmpl := []string{"spec", "template", "spec"}
	for _, tc := range []struct {
		gvk       schema.GroupVersionKind
		ns, name  string
		keepsPods bool
	}{
		{kube.GVKDeployment, "eu", redis.RedisName, true},
		{kube.GVKDaemonSet, isolation.SandboxNamespace, isolation.GVisorInstaller, true},
		{kube.GVKDaemonSet, isolation.SandboxNamespace, isolation.KVMProbe, false},
		{kube.GVKDeployment, "eu", "orders", false},
	} {
		o := pod(tmpl, "ghcr.io/runrsh/runr-agent:0.4.2")
		o.SetNamespace(tc.ns)
		o.SetName(tc.name)
		if w, ok := s.movingWorkloadOf(tc.gvk, tmpl, o); !ok || w.keepPods != tc.keepsPods {
			t.Errorf("%s %s/%s: keeps pods %v, want %v", tc.gvk.Kind, tc.ns, tc.name, w.keepPods, tc.keepsPods)
		}
	}
	o := pod(tmpl, "docker.io/library/redis:7")
	_ = unstructured.SetNestedSlice(o.Object, nil, "spec", "template", "spec", "initContainers")
	if w, ok := s.movingWorkloadOf(kube.GVKDeployment, tmpl, o); ok {
		t.Errorf("a workload of other images moves: %+v", w)
	}
}
