package apitest

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"runr.dev/console/ops/isolation"
	"runr.dev/console/ops/reconcile"
	"runr.dev/console/ops/redis"
	"runr.dev/console/store"
	"runr.dev/console/store/storetest"
	"runr.dev/console/testcluster"
	"runr.dev/console/web/webtest"
)

// TestReconcileMovesTheImageNamespace: what an earlier release left under its image
// namespaces (ghcr.io/runrsh up to 0.5.0, directly under ghcr.io/brf-tech in 0.5.1) moves
// to ghcr.io/brf-tech/runr: the projects' stored images and their workloads roll to it;
// the queue Redis and the gVisor node installer move their templates but keep their
// running pods; a Redis paused by someone else is listed as kept and moves at the first
// run after it is resumed; another package of the organisation stays; the dry run lists
// all of it and changes nothing.
func TestReconcileMovesTheImageNamespace(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	e := console(t, nil)
	_, tok := e.User("owner")
	ctx := context.Background()
	if err := e.Store.SetSetting(ctx, "base_domain", "example.test"); err != nil {
		t.Fatal(err)
	}
	r := newRegion(t, e, tok, c, "ns-1", map[string]any{"redis_mode": "managed"})
	mustSucceed(t, action(t, e, tok, r.ID, "install-knative", nil))
	r, _ = e.Store.RegionByID(ctx, r.ID)
	ns := r.Name
	const (
		oldWrapper, newWrapper = "ghcr.io/brf-tech/runr-wrapper:0.5.1", "ghcr.io/brf-tech/runr/wrapper:0.5.1"
		oldCron, newCron       = "ghcr.io/runrsh/runr-wrapper:0.4.2", "ghcr.io/brf-tech/runr/wrapper:0.4.2"
		oldRedis, newRedis     = "ghcr.io/brf-tech/reqs/redis:7.4", "ghcr.io/brf-tech/runr/reqs/redis:7.4"
		oldAgent, newAgent     = "ghcr.io/runrsh/runr-agent:0.4.2", "ghcr.io/brf-tech/runr/agent:0.4.2"
		otherPackage           = "ghcr.io/brf-tech/other:1"
	)
	// As the earlier releases left them: projects and their workloads.
	web, webSlug := kindProject(t, e, tok, map[string]any{"name": "web", "region_id": r.ID, "image": oldWrapper})
	worker, workerSlug := kindProject(t, e, tok, map[string]any{"name": "orders", "region_id": r.ID, "image": oldWrapper, "kind": "queue_worker", "queue_stream": "orders"})
	cron, cronSlug := kindProject(t, e, tok, map[string]any{"name": "nightly", "region_id": r.ID, "image": oldCron, "kind": "scheduled_job", "schedule": "0 3 * * *"})
	other, _ := kindProject(t, e, tok, map[string]any{"name": "theirs", "region_id": r.ID, "image": otherPackage})
	// A project whose region was removed (it keeps its record without a region).
	unplaced := &store.Project{Name: "draft", Image: oldCron}
	if err := e.Store.CreateProject(ctx, unplaced); err != nil {
		t.Fatal(err)
	}
	draft := unplaced.ID
	for _, id := range []string{web, worker, cron} {
		projectAction(t, e, tok, id, "deploy")
	}
	// The queue Redis as 0.5.1 ran it, rolled out.
	deps := c.Client.AppsV1().Deployments(ns)
	setImage(t, c, ns, redis.RedisName, "redis", oldRedis)
	waitRolledOut(t, c, ns, redis.RedisName)
	redisPods := podUIDs(t, c, ns, "app.kubernetes.io/name="+redis.RedisName)
	redisSets := replicaSets(t, c, ns, "app.kubernetes.io/name="+redis.RedisName)
	// The gVisor node installer of 0.4.2.
	installer := gvisorInstaller(t, c, oldAgent)
	installerPods := podUIDs(t, c, isolation.SandboxNamespace, "app.kubernetes.io/name="+isolation.GVisorInstaller)
	// Another region's Redis, paused by someone else.
	pausedRedis(t, c, "paused-1", oldRedis)

	// The dry run lists every move and what is kept, through the CLI, and changes nothing.
	u := &cliUser{t: t, env: append(os.Environ(), "DATABASE_URL="+e.Store.URL, "RUNR_APP_KEY="+storetest.AppKey,
		"RUNR_CHART_MIRROR="+repo.URL, "RUNR_LOCAL_CLUSTER_HOST=127.0.0.2", "RUNR_ALLOW_LOOPBACK_CLUSTERS=true", "RUNR_AGENT_WS_URL="+e.Cfg.AgentWSURL)}
	dry := u.must("reconcile", "--step", reconcile.StepImageRegistry, "--dry-run")
	t.Logf("dry run:\n%s", dry)
	for _, want := range []string{
		"projects draft, nightly: stored images ghcr.io/runrsh/runr- → ghcr.io/brf-tech/runr/",
		"projects orders, web: stored images ghcr.io/brf-tech/runr- → ghcr.io/brf-tech/runr/",
		"Deployment " + ns + "/" + workerSlug + " " + oldWrapper + " → " + newWrapper,
		"CronJob " + ns + "/" + cronSlug + " " + oldCron + " → " + newCron,
		"Service " + ns + "/" + webSlug + " " + oldWrapper + " → " + newWrapper,
		"Deployment " + ns + "/" + redis.RedisName + " " + oldRedis + " → " + newRedis + " (its running pods keep running",
		"DaemonSet " + isolation.SandboxNamespace + "/" + isolation.GVisorInstaller + " " + oldAgent + " → " + newAgent + " (its running pods keep running",
		"kept: Deployment paused-1/" + redis.RedisName + " is paused by someone else",
	} {
		if !strings.Contains(dry, want) {
			t.Errorf("the dry run does not say %q", want)
		}
	}
	if strings.Contains(dry, otherPackage) || strings.Contains(dry, "theirs") {
		t.Errorf("the dry run moves another package of the organisation:\n%s", dry)
	}
	if p, _ := e.Store.ProjectByID(ctx, web); p.Image != oldWrapper {
		t.Fatalf("the dry run moved a stored image: %s", p.Image)
	}
	if img := templateImage(t, c, ns, redis.RedisName); img != oldRedis {
		t.Fatalf("the dry run moved the Redis: %s", img)
	}

	runImageRegistry(t, e, tok)
	for id, want := range map[string]string{web: newWrapper, worker: newWrapper, cron: newCron, other: otherPackage, draft: newCron} {
		if p, _ := e.Store.ProjectByID(ctx, id); p.Image != want || p.DeployedImage != "" && p.DeployedImage != want {
			t.Errorf("project %s: image %s, deployed %s; want %s", p.Name, p.Image, p.DeployedImage, want)
		}
	}
	if img := templateImage(t, c, ns, workerSlug); img != newWrapper {
		t.Errorf("the worker's Deployment runs %s", img)
	}
	cj, err := c.Client.BatchV1().CronJobs(ns).Get(ctx, cronSlug, metav1.GetOptions{})
	if err != nil || cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Image != newCron {
		t.Errorf("the CronJob: %v", err)
	}
	ks, err := c.DynamicGet(ctx, schema.GroupVersionResource{Group: "serving.knative.dev", Version: "v1", Resource: "services"}, ns, webSlug)
	if err != nil {
		t.Fatal(err)
	}
	if cts, _, _ := unstructured.NestedSlice(ks.Object, "spec", "template", "spec", "containers"); len(cts) == 0 || cts[0].(map[string]any)["image"] != newWrapper {
		t.Errorf("the Knative Service: %v", cts)
	}
	// The Redis: its template moved, its pods and ReplicaSets are the ones it had.
	d, err := deps.Get(ctx, redis.RedisName, metav1.GetOptions{})
	if err != nil || d.Spec.Template.Spec.Containers[0].Image != newRedis || d.Spec.Paused || d.Annotations["runr.dev/moving-images"] != "" {
		t.Fatalf("the Redis after the move: %v %+v", err, d.Spec)
	}
	waitRolledOut(t, c, ns, redis.RedisName)
	if now := podUIDs(t, c, ns, "app.kubernetes.io/name="+redis.RedisName); !slices.Equal(now, redisPods) {
		t.Errorf("the Redis pods were replaced: %v → %v", redisPods, now)
	}
	// No ReplicaSet was created (the first one, of the image the move gives, is deleted:
	// the controller would have rolled back to it).
	if now := replicaSets(t, c, ns, "app.kubernetes.io/name="+redis.RedisName); len(now) == 0 || slices.ContainsFunc(now, func(rs string) bool { return !slices.Contains(redisSets, rs) }) {
		t.Errorf("the Redis rolled out a ReplicaSet: %v → %v", redisSets, now)
	}
	// The installer: its template moved, its pods are the ones it had.
	ds, err := c.Client.AppsV1().DaemonSets(isolation.SandboxNamespace).Get(ctx, installer, metav1.GetOptions{})
	if err != nil || ds.Spec.Template.Spec.Containers[0].Image != newAgent || ds.Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType {
		t.Fatalf("the installer after the move: %v %+v", err, ds.Spec.UpdateStrategy)
	}
	time.Sleep(2 * time.Second) // a DaemonSet that rolled would have replaced a pod by now
	if now := podUIDs(t, c, isolation.SandboxNamespace, "app.kubernetes.io/name="+isolation.GVisorInstaller); !slices.Equal(now, installerPods) {
		t.Errorf("the installer's pods were replaced: %v → %v", installerPods, now)
	}
	if img := templateImage(t, c, "paused-1", redis.RedisName); img != oldRedis {
		t.Errorf("the paused Redis moved: %s", img)
	}

	// Only the paused Redis is left, kept; once resumed it moves without a rollout too.
	var ans struct{ Data []reconcile.Change }
	if st := e.JSON("GET", "/api/reconcile?step="+reconcile.StepImageRegistry, tok, nil, &ans); st != 200 || len(ans.Data) != 1 ||
		ans.Data[0].Result != reconcile.ResultUpToDate || !strings.HasPrefix(ans.Data[0].What, "kept: Deployment paused-1/") {
		t.Fatalf("after the move: %d %+v", st, ans.Data)
	}
	if _, err := c.Client.AppsV1().Deployments("paused-1").Patch(ctx, redis.RedisName, types.MergePatchType, []byte(`{"spec":{"paused":false}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, c, "paused-1", redis.RedisName)
	pods := podUIDs(t, c, "paused-1", "app.kubernetes.io/name="+redis.RedisName)
	runImageRegistry(t, e, tok)
	if img := templateImage(t, c, "paused-1", redis.RedisName); img != newRedis {
		t.Errorf("the resumed Redis did not move: %s", img)
	}
	if now := podUIDs(t, c, "paused-1", "app.kubernetes.io/name="+redis.RedisName); !slices.Equal(now, pods) {
		t.Errorf("the resumed Redis's pods were replaced: %v → %v", pods, now)
	}
}

// runImageRegistry runs reconcile's image-registry step and waits for it to succeed.
func runImageRegistry(t *testing.T, e *webtest.Env, tok string) {
	t.Helper()
	var ans struct {
		JobID string `json:"job_id"`
	}
	if st := e.JSON("POST", "/api/reconcile", tok, map[string]any{"step": reconcile.StepImageRegistry}, &ans); st != 202 {
		t.Fatalf("reconcile: %d", st)
	}
	mustSucceed(t, e.WaitJob(ans.JobID, 4*time.Minute))
}

// setImage sets a Deployment's container image (an earlier console's).
func setImage(t *testing.T, c *testcluster.Cluster, ns, name, container, image string) {
	t.Helper()
	patch := `{"spec":{"template":{"spec":{"containers":[{"name":"` + container + `","image":"` + image + `"}]}}}}`
	if _, err := c.Client.AppsV1().Deployments(ns).Patch(context.Background(), name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// templateImage is the image of a Deployment's first container.
func templateImage(t *testing.T, c *testcluster.Cluster, ns, name string) string {
	t.Helper()
	d, err := c.Client.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d.Spec.Template.Spec.Containers[0].Image
}

// waitRolledOut waits for a Deployment's rollout to be over: observed, every replica
// updated and available, no old one left.
func waitRolledOut(t *testing.T, c *testcluster.Cluster, ns, name string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		d, err := c.Client.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := *d.Spec.Replicas
		st := d.Status
		if st.ObservedGeneration >= d.Generation && st.UpdatedReplicas == want && st.AvailableReplicas == want && st.Replicas == want &&
			len(podUIDs(t, c, ns, metav1.FormatLabelSelector(d.Spec.Selector))) == int(want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Deployment %s/%s did not roll out: %+v", ns, name, st)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// podUIDs are the UIDs of the pods a selector matches that are not being deleted, sorted.
func podUIDs(t *testing.T, c *testcluster.Cluster, ns, selector string) []string {
	t.Helper()
	pods, err := c.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, string(p.UID))
		}
	}
	slices.Sort(out)
	return out
}

// replicaSets are the names of the ReplicaSets a selector matches, sorted.
func replicaSets(t *testing.T, c *testcluster.Cluster, ns, selector string) []string {
	t.Helper()
	rss, err := c.Client.AppsV1().ReplicaSets(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, rs := range rss.Items {
		out = append(out, rs.Name)
	}
	slices.Sort(out)
	return out
}

// gvisorInstaller creates the gVisor node installer as 0.4.2 left it, and waits for its
// pods on every node.
func gvisorInstaller(t *testing.T, c *testcluster.Cluster, image string) string {
	t.Helper()
	ctx := context.Background()
	_, _ = c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: isolation.SandboxNamespace}}, metav1.CreateOptions{})
	labels := map[string]string{"app.kubernetes.io/name": isolation.GVisorInstaller, "app.kubernetes.io/managed-by": "runr"}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: isolation.GVisorInstaller, Namespace: isolation.SandboxNamespace, Labels: labels},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": isolation.GVisorInstaller}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
				Containers:  []corev1.Container{{Name: "installer", Image: image, Args: []string{"sandbox", "install-gvisor"}}}}}}}
	if _, err := c.Client.AppsV1().DaemonSets(isolation.SandboxNamespace).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		got, err := c.Client.AppsV1().DaemonSets(isolation.SandboxNamespace).Get(ctx, ds.Name, metav1.GetOptions{})
		if err == nil && got.Status.DesiredNumberScheduled > 0 && got.Status.NumberReady == got.Status.DesiredNumberScheduled &&
			len(podUIDs(t, c, isolation.SandboxNamespace, "app.kubernetes.io/name="+isolation.GVisorInstaller)) == int(got.Status.DesiredNumberScheduled) {
			return ds.Name
		}
		if time.Now().After(deadline) {
			t.Fatalf("the installer's pods: %v %+v", err, got)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// pausedRedis creates a queue Redis in a namespace of its own, paused (by someone else).
func pausedRedis(t *testing.T, c *testcluster.Cluster, ns, image string) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app.kubernetes.io/name": redis.RedisName, "app.kubernetes.io/managed-by": "runr"}
	one := int32(1)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: redis.RedisName, Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Paused: true, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": redis.RedisName}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "redis", Image: image}}}}}}
	if _, err := c.Client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
