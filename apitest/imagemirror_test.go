package apitest

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/observability"
	"runr.dev/console/ops/reconcile"
	"runr.dev/console/ops/redis"
	"runr.dev/console/ops/registry"
	"runr.dev/console/store"
	"runr.dev/console/testcluster"
)

// TestImageMirror: a console mirror set on a running region changes nothing until
// reconcile's image-mirror step moves every Helm release, the KnativeServing's images and
// the console's own workloads to it; a region's own mirror goes with the region when it
// moves to another cluster, where every workload the console installs pulls through it.
func TestImageMirror(t *testing.T) {
	a := testcluster.New(t, testcluster.Options{})
	e := console(t, nil)
	_, tok := e.User("owner")
	ctx := context.Background()
	if err := e.Store.SetSetting(ctx, "base_domain", "example.test"); err != nil {
		t.Fatal(err)
	}
	r := newRegion(t, e, tok, a, "air-1", map[string]any{"redis_mode": "managed", "registry_mode": "internal", "registry_storage_type": "pvc",
		"registry_storage_config": map[string]any{"storageClass": "standard", "size": "5Gi"}})
	mustSucceed(t, action(t, e, tok, r.ID, "install-knative", nil))
	r, _ = e.Store.RegionByID(ctx, r.ID)
	// The workloads this test moves exist: the managed Redis and the registry's.
	if _, err := a.Client.AppsV1().Deployments(r.Name).Get(ctx, redis.RedisName, metav1.GetOptions{}); err != nil {
		t.Fatalf("managed Redis: %v", err)
	}
	if dss, _ := a.Client.AppsV1().DaemonSets(registry.Namespace).List(ctx, metav1.ListOptions{}); dss == nil || len(dss.Items) == 0 {
		t.Fatal("no node mirror in " + registry.Namespace)
	}
	plan := func() reconcile.Change {
		t.Helper()
		var ans struct{ Data []reconcile.Change }
		if st := e.JSON("GET", "/api/reconcile?region=air-1&step="+reconcile.StepImageMirror, tok, nil, &ans); st != 200 || len(ans.Data) != 1 {
			t.Fatalf("plan: %d %+v", st, ans)
		}
		return ans.Data[0]
	}
	if ch := plan(); ch.Result != reconcile.ResultUpToDate {
		t.Fatalf("without a mirror: %+v", ch)
	}

	const mirror = "mirror.internal.test:5000/copies"
	if st := e.JSON("PATCH", "/api/settings", tok, map[string]string{"image_mirror": mirror}, nil); st != 200 {
		t.Fatalf("PATCH image_mirror: %d", st)
	}
	if bad := foreignImages(t, a, r, mirror); len(bad) == 0 {
		t.Fatal("saving the mirror must not change what runs")
	}
	ch := plan()
	if ch.Result != reconcile.ResultChange || !strings.Contains(ch.What, "Helm release knative-serving/traefik → "+mirror) ||
		!strings.Contains(ch.What, "KnativeServing images") || !strings.Contains(ch.What, "runr-agent") {
		t.Fatalf("plan with a mirror: %+v", ch)
	}
	var ans struct {
		JobID string `json:"job_id"`
	}
	if st := e.JSON("POST", "/api/reconcile", tok, map[string]any{"step": reconcile.StepImageMirror}, &ans); st != 202 {
		t.Fatalf("reconcile: %d", st)
	}
	mustSucceed(t, e.WaitJob(ans.JobID, 4*time.Minute))
	eventually(t, time.Minute, func() []string { return foreignImages(t, a, r, mirror) })
	ks, _ := a.DynamicGet(ctx, ksGVR, r.ServingNamespace, kit.KnativeServingName)
	if def, _, _ := unstructured.NestedString(ks.Object, "spec", "registry", "default"); !strings.HasPrefix(def, mirror+"/gcr.io/knative-releases/knative.dev/serving/cmd/${NAME}:v") {
		t.Fatalf("KnativeServing registry default %q", def)
	}
	// Serving's controller reads the queue-proxy sidecar's image from config-deployment,
	// which spec.registry does not reach (seen on the real node: realnode/datapath_test.go).
	if q, _, _ := unstructured.NestedString(ks.Object, "spec", "config", "deployment", "queue-sidecar-image"); !strings.HasPrefix(q, mirror+"/gcr.io/knative-releases/knative.dev/serving/cmd/queue:v") {
		t.Fatalf("KnativeServing queue-sidecar-image %q", q)
	}
	if ch := plan(); ch.Result != reconcile.ResultUpToDate {
		t.Fatalf("after the reconcile: %+v", ch)
	}

	// The region's own mirror moves with it: the new cluster gets everything through it.
	const own = "registry.air.test/runr"
	if st := e.JSON("PUT", "/api/knative-regions/"+r.ID+"/settings", tok, map[string]any{"image_mirror": own}, nil); st != 200 {
		t.Fatalf("region mirror: %d", st)
	}
	b := testcluster.New(t, testcluster.Options{})
	mustSucceed(t, migrate(t, e, tok, r.ID, b.Kubeconfig(), nil))
	eventually(t, time.Minute, func() []string { return foreignImages(t, b, r, own) })
}

// foreignImages lists the containers of the console's workloads on a cluster (its
// namespaces and the region's) whose image is not under the mirror.
func foreignImages(t *testing.T, c *testcluster.Cluster, r *store.Region, mirror string) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	check := func(kind, ns, name string, ps corev1.PodSpec) {
		for _, ct := range append(ps.InitContainers, ps.Containers...) {
			if !strings.HasPrefix(ct.Image, mirror+"/") {
				out = append(out, kind+" "+ns+"/"+name+" "+ct.Name+": "+ct.Image)
			}
		}
	}
	for _, ns := range []string{registry.Namespace, observability.ObservabilityNamespace, "knative-operator", "knative-serving", r.Name} {
		ds, err := c.Client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds.Items {
			check("Deployment", ns, d.Name, d.Spec.Template.Spec)
		}
		dss, _ := c.Client.AppsV1().DaemonSets(ns).List(ctx, metav1.ListOptions{})
		for _, d := range dss.Items {
			check("DaemonSet", ns, d.Name, d.Spec.Template.Spec)
		}
		sts, _ := c.Client.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
		for _, d := range sts.Items {
			check("StatefulSet", ns, d.Name, d.Spec.Template.Spec)
		}
	}
	return out
}

// eventually waits up to timeout for list to be empty, failing with what it holds.
func eventually(t *testing.T, timeout time.Duration, list func() []string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		left := list()
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not under the mirror after %s:\n%s", timeout, strings.Join(left, "\n"))
		}
		time.Sleep(500 * time.Millisecond)
	}
}
