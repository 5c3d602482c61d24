package apitest

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"runr.dev/console/ops/knative"
	"runr.dev/console/ops/observability"
	"runr.dev/console/ops/redis"
	"runr.dev/console/store"
	"runr.dev/console/testcluster"
	"runr.dev/console/web/webtest"
)

var (
	ksGVR   = schema.GroupVersionResource{Group: "operator.knative.dev", Version: "v1beta1", Resource: "knativeservings"}
	ksvcGVR = schema.GroupVersionResource{Group: "serving.knative.dev", Version: "v1", Resource: "services"}
)

// newRegion creates a region at once (POST /api/knative-regions) and waits for its
// preparation job.
func newRegion(t *testing.T, e *webtest.Env, tok string, c *testcluster.Cluster, name string, extra map[string]any) *store.Region {
	t.Helper()
	body := map[string]any{"name": name, "kubeconfig": string(c.Kubeconfig()), "redis_mode": "none"}
	for k, v := range extra {
		body[k] = v
	}
	var ans struct {
		Data   map[string]any
		Jobs   map[string]string
		Fields map[string]string
		Error  string
	}
	if st := e.JSON("POST", "/api/knative-regions", tok, body, &ans); st != 201 {
		t.Fatalf("create region %s: %d %+v", name, st, ans)
	}
	for _, id := range ans.Jobs {
		if j := e.WaitJob(id, 2*time.Minute); j.Status != store.JobSucceeded {
			t.Fatalf("job %s: %s", j.Kind, j.Error)
		}
	}
	r, err := e.Store.RegionByName(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// action posts to a region route and waits for the job; it returns the job.
func action(t *testing.T, e *webtest.Env, tok, regionID, route string, body any) *store.Job {
	t.Helper()
	var ans struct {
		JobID  string `json:"job_id"`
		Error  string
		Fields map[string]string
	}
	if st := e.JSON("POST", "/api/knative-regions/"+regionID+"/"+route, tok, body, &ans); st != 202 {
		t.Fatalf("%s: %d %+v", route, st, ans)
	}
	return e.WaitJob(ans.JobID, 3*time.Minute)
}

func mustSucceed(t *testing.T, j *store.Job) {
	t.Helper()
	if j.Status != store.JobSucceeded {
		t.Fatalf("%s: %s: %s", j.Kind, j.Status, j.Error)
	}
}

func TestWizardToReadyServingAndRedis(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	e := console(t, nil)
	_, tok := e.User("owner")
	ctx := context.Background()
	if err := e.Store.SetSetting(ctx, "base_domain", "fn.example.test"); err != nil {
		t.Fatal(err)
	}
	var ans setupAnswer
	if st := e.JSON("POST", "/api/registry-setup/start", tok, setupBody("eu-2", c.Kubeconfig(), nil), &ans); st != 202 {
		t.Fatalf("start: %d", st)
	}
	mustSucceed(t, e.WaitJob(ans.JobID, 3*time.Minute))
	r, _ := e.Store.RegionByName(ctx, "eu-2")

	// A Kubernetes 1.36 cluster is offered the five newest minors, each with the newest
	// operator chart of the minor and the Serving release that operator really ships.
	var vs struct{ Data []knative.Version }
	e.JSON("GET", "/api/knative-regions/"+r.ID+"/compatible-versions", tok, nil, &vs)
	if len(vs.Data) != 5 || vs.Data[0].Version != "1.23" || !vs.Data[0].Preselected || vs.Data[4].Minor != "1.19" {
		t.Fatalf("compatible versions %+v", vs.Data)
	}
	if v := vs.Data[3]; v.Version != "1.20" || v.ChartVersion != "1.20.2" || v.ServingVersion != "1.20.3" {
		t.Fatalf("Knative 1.20: %+v (operator 1.20.2 ships Serving 1.20.3)", v)
	}
	mustSucceed(t, action(t, e, tok, r.ID, "install-operator", map[string]any{"version": "1.20"}))
	mustSucceed(t, action(t, e, tok, r.ID, "install-serving", map[string]any{"version": "1.20"}))

	r, _ = e.Store.RegionByName(ctx, "eu-2")
	if r.OperatorStatus != store.ComponentReady || r.OperatorVersion != "1.20.2" || r.ServingStatus != store.ComponentReady || r.KnativeVersion != "1.20.3" || r.ExternalIP != c.LBAddress {
		t.Fatalf("region after Serving: operator %s %s serving %s %s ip %s", r.OperatorStatus, r.OperatorVersion, r.ServingStatus, r.KnativeVersion, r.ExternalIP)
	}
	// Traefik may read Knative's ingresses and update their status: its chart's switch
	// granted it (the install asked the same with SubjectAccessReviews).
	cl, err := e.Kube.ClusterFor(c.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	if missing, err := knative.TraefikKnativeAccess(ctx, cl, "knative-serving"); err != nil || missing != "" {
		t.Fatalf("Traefik's Knative RBAC: %v %s", err, missing)
	}
	if r.Settings.V.KnativeDomain != "eu-2.fn.example.test" {
		t.Fatalf("function domain %q", r.Settings.V.KnativeDomain)
	}
	var got struct{ Data map[string]any }
	e.JSON("GET", "/api/knative-regions/"+r.ID, tok, nil, &got)
	if got.Data["dns_instruction"] != "*.eu-2.fn.example.test A "+c.LBAddress {
		t.Fatalf("dns_instruction %v", got.Data["dns_instruction"])
	}
	// What Serving brought, on the cluster.
	for ns, names := range map[string][]string{"knative-operator": {"knative-operator", "operator-webhook"},
		"knative-serving": {"traefik", "activator", "autoscaler", "controller", "webhook"},
		"observability":   {"knative-kube-prometheus-st-operator", "knative-kube-state-metrics", "runr-agent", "otel-collector-opentelemetry-collector"}} {
		for _, n := range names {
			if _, err := c.Client.AppsV1().Deployments(ns).Get(ctx, n, metav1.GetOptions{}); err != nil {
				t.Errorf("Deployment %s/%s: %v", ns, n, err)
			}
		}
	}
	for _, n := range []string{"prometheus-knative-kube-prometheus-st-prometheus", "loki-stack", "tempo"} {
		if _, err := c.Client.AppsV1().StatefulSets("observability").Get(ctx, n, metav1.GetOptions{}); err != nil {
			t.Errorf("StatefulSet %s: %v", n, err)
		}
	}
	if _, err := c.Client.SchedulingV1().PriorityClasses().Get(ctx, observability.PriorityClassName, metav1.GetOptions{}); err != nil {
		t.Error("PriorityClass observability-critical must exist")
	}
	// The chart's own budget protects exactly Prometheus, and no DaemonSet pod. Loki (one
	// replica) has none: loki 2.16.0 renders its budget as policy/v1beta1, which fails.
	checkObservabilityPDBs(t, c, map[string]string{"knative-kube-prometheus-st-prometheus": "prometheus-knative-kube-prometheus-st-prometheus"})
	// The status check judges every component from its release's workloads: all ready.
	if err := e.Kube.Status.CheckNow(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	r, _ = e.Store.RegionByName(ctx, "eu-2")
	if h := r.Health.V.Components; h.State != store.HealthOK {
		t.Fatalf("components after a full install: %s: %s", h.State, h.Reason)
	}
	// A node that runs Prometheus drains within its deadline, or is refused naming a
	// budget that is not the console's: the charts' budgets let the single Prometheus
	// replica move (the old console's budgets refused it forever); Knative's own
	// activator-pdb (minAvailable 80%) may still hold a single activator replica.
	prom, err := c.Client.CoreV1().Pods("observability").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=prometheus"})
	if err != nil || len(prom.Items) != 1 {
		t.Fatalf("Prometheus pods: %v %d", err, len(prom.Items))
	}
	node := prom.Items[0].Spec.NodeName
	var drained struct {
		JobID string `json:"job_id"`
	}
	started := time.Now()
	if st := e.JSON("POST", "/api/knative-regions/"+r.ID+"/nodes/"+node+"/drain", tok, map[string]any{"timeout_seconds": 20}, &drained); st != 202 {
		t.Fatalf("drain %s: %d", node, st)
	}
	dj := e.WaitJob(drained.JobID, 2*time.Minute)
	if took := time.Since(started); took > 45*time.Second {
		t.Fatalf("a 20 s drain took %s", took)
	}
	// Knative's own pods may also stay for a reason of the cluster's (an eviction that
	// outlasts its 10 s under load while the operator rewrites their budgets): the drain
	// then names them, and what the console installed is not among them.
	if dj.Status != store.JobSucceeded && (!strings.Contains(dj.Error, "knative-serving/") || strings.Contains(dj.Error, "observability/")) {
		t.Fatalf("drain of %s: %s: %s", node, dj.Status, dj.Error)
	}
	left, _ := c.Client.CoreV1().Pods("observability").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	for _, p := range left.Items {
		if len(p.OwnerReferences) == 0 || p.OwnerReferences[0].Kind != "DaemonSet" {
			t.Errorf("observability pod %s stayed on the drained node %s", p.Name, node)
		}
	}
	if _, err := c.Client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(`{"spec":{"unschedulable":false}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	sec, err := c.Client.CoreV1().Secrets("observability").Get(ctx, observability.AgentSecret, metav1.GetOptions{})
	if err != nil || string(sec.Data["token"]) != r.AgentToken {
		t.Fatalf("agent token Secret: %v", err)
	}
	ks, err := c.DynamicGet(ctx, ksGVR, "knative-serving", "knative-serving")
	if err != nil {
		t.Fatal(err)
	}
	if cls, _, _ := unstructured.NestedString(ks.Object, "spec", "config", "network", "ingress-class"); cls != knative.TraefikIngressClass {
		t.Fatalf("ingress class %q", cls)
	}
	if d, _, _ := unstructured.NestedString(ks.Object, "spec", "config", "domain", "eu-2.fn.example.test"); !strings.Contains(d, "runr.dev/region: eu-2") {
		t.Fatalf("domain config %q", d)
	}
	tr, _ := c.Client.AppsV1().Deployments("knative-serving").Get(ctx, "traefik", metav1.GetOptions{})
	args := strings.Join(tr.Spec.Template.Spec.Containers[0].Args, " ")
	if !strings.Contains(args, "readTimeout=310s") || !strings.Contains(tr.Spec.Template.Spec.Containers[0].Image, "ghcr.io/brf-tech/runr/reqs/traefik:v3.7.4") {
		t.Fatalf("traefik: %s %s", args, tr.Spec.Template.Spec.Containers[0].Image)
	}

	// Step 5: the managed Redis (queued by step 2) runs, and a PING from a pod works.
	rj, _ := e.Store.LatestJob(ctx, r.ID, redis.KindRedisInstall)
	mustSucceed(t, e.WaitJob(rj.ID, time.Minute))
	mustSucceed(t, action(t, e, tok, r.ID, "test-redis", nil))
	if _, err := c.Client.AppsV1().Deployments("eu-2").Get(ctx, redis.RedisName, metav1.GetOptions{}); err != nil {
		t.Fatal("runr-redis must run in the project namespace")
	}
	// External Redis, then removal.
	mustSucceed(t, action(t, e, tok, r.ID, "redis", map[string]any{"mode": "external", "address": "redis.example.com:6379", "password": "REDIS-EXT-PW"}))
	r, _ = e.Store.RegionByName(ctx, "eu-2")
	if r.RedisMode != store.RedisExternal || r.RedisPassword != "REDIS-EXT-PW" {
		t.Fatalf("external redis %s", r.RedisMode)
	}
	if _, err := c.Client.AppsV1().Deployments("eu-2").Get(ctx, redis.RedisName, metav1.GetOptions{}); err == nil {
		t.Fatal("the managed Redis goes when an external one is set")
	}
	if st, _ := e.Raw("DELETE", "/api/knative-regions/"+r.ID+"/redis", tok, ""); st != 202 {
		t.Fatalf("delete redis: %d", st)
	}
	if st := e.JSON("POST", "/api/knative-regions/"+r.ID+"/redis", tok, map[string]any{"mode": "external", "address": "no-port"}, nil); st != 422 {
		t.Fatalf("bad redis address: %d", st)
	}
	// The Redis tab's form: a Redis in the cluster at an outside name is refused beside the
	// address, the form keeps the choice, and nothing changes; a Service's address is taken.
	rj, _ = e.Store.LatestJob(ctx, r.ID, redis.KindRedisRemove)
	mustSucceed(t, e.WaitJob(rj.ID, time.Minute))
	b := e.SignedIn("owner")
	b.Get("/regions/" + r.ID + "?tab=redis")
	resp, page := b.PostForm("/regions/"+r.ID+"/redis", url.Values{"mode": {"in_cluster"}, "address": {"redis.example.com:6379"}}, true)
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 422 || doc.Find(`[data-testid="error-address"]`).Length() != 1 ||
		doc.Find(`input[name="mode"][value="in_cluster"]`).AttrOr("checked", "no") == "no" {
		t.Fatalf("the Redis form with an outside name as a Redis in the cluster: %d", resp.StatusCode)
	}
	if got, _ := e.Store.RegionByID(ctx, r.ID); got.RedisMode != store.RedisNone || got.RedisAddress != "" {
		t.Fatalf("the refused form changed the region's Redis: %s %q", got.RedisMode, got.RedisAddress)
	}
	if resp, _ := b.PostForm("/regions/"+r.ID+"/redis", url.Values{"mode": {"in_cluster"}, "address": {"redis.queues.svc:6379"}, "password": {"IN-CLUSTER-PW"}}, true); resp.StatusCode != 303 {
		t.Fatalf("the Redis form with a Service's address: %d", resp.StatusCode)
	}
	rj, _ = e.Store.LatestJob(ctx, r.ID, redis.KindRedisInstall)
	mustSucceed(t, e.WaitJob(rj.ID, time.Minute))
	if got, _ := e.Store.RegionByID(ctx, r.ID); got.RedisMode != store.RedisInCluster || got.RedisAddress != "redis.queues.svc:6379" || got.RedisPassword != "IN-CLUSTER-PW" {
		t.Fatalf("the region's Redis in the cluster: %s %q", got.RedisMode, got.RedisAddress)
	}
}

// checkObservabilityPDBs checks the budgets of the observability namespace: each named
// one exists and selects the pods of its StatefulSet, and none selects a DaemonSet's pods.
func checkObservabilityPDBs(t *testing.T, c *testcluster.Cluster, want map[string]string) {
	t.Helper()
	ctx := context.Background()
	pdbs, err := c.Client.PolicyV1().PodDisruptionBudgets("observability").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := c.Client.CoreV1().Pods("observability").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, pdb := range pdbs.Items {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			t.Fatalf("PDB %s: %v", pdb.Name, err)
		}
		for _, p := range pods.Items {
			if !sel.Matches(labels.Set(p.Labels)) {
				continue
			}
			for _, o := range p.OwnerReferences {
				if o.Kind == "DaemonSet" {
					t.Errorf("PDB %s selects pod %s of DaemonSet %s", pdb.Name, p.Name, o.Name)
				}
				if o.Kind == "StatefulSet" && want[pdb.Name] == o.Name {
					found[pdb.Name] = true
				}
			}
		}
	}
	for name, sts := range want {
		if !found[name] {
			t.Errorf("no PDB %s selecting the pods of StatefulSet %s (budgets: %d)", name, sts, len(pdbs.Items))
		}
	}
}

func TestAdoptOperatorAndServing(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	e := console(t, nil)
	_, tok := e.User("owner")
	first := newRegion(t, e, tok, c, "first", nil)
	mustSucceed(t, action(t, e, tok, first.ID, "install-knative", map[string]any{"version": "1.19"}))
	// A second region on the same cluster adopts both; nothing is installed twice.
	second := newRegion(t, e, tok, c, "second", nil)
	j := action(t, e, tok, second.ID, "install-knative", map[string]any{"version": "1.20"})
	mustSucceed(t, j)
	steps, _ := e.Store.JobSteps(context.Background(), j.ID)
	for _, s := range steps {
		if (s.Name == "operator" || s.Name == "crds" || s.Name == "previous") && s.Status != store.StepSkipped {
			t.Errorf("step %s must be skipped when adopting, is %s", s.Name, s.Status)
		}
	}
	r, _ := e.Store.RegionByName(context.Background(), "second")
	// Operator 1.19.6 (the newest chart of 1.19) ships Serving 1.19.8.
	if !r.OperatorAdopted || !r.ServingAdopted || r.KnativeVersion != "1.19.8" || r.ServingStatus != store.ComponentReady {
		t.Fatalf("adoption: operator %v serving %v version %s", r.OperatorAdopted, r.ServingAdopted, r.KnativeVersion)
	}
}

func TestUpgradeOneMinorOnly(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	e := console(t, nil)
	_, tok := e.User("owner")
	r := newRegion(t, e, tok, c, "up", nil)
	mustSucceed(t, action(t, e, tok, r.ID, "install-operator", map[string]any{"version": "1.19"}))
	mustSucceed(t, action(t, e, tok, r.ID, "install-serving", map[string]any{"version": "1.19"}))
	var ans struct{ Fields map[string]string }
	if st := e.JSON("POST", "/api/knative-regions/"+r.ID+"/upgrade", tok, map[string]any{"version": "1.21"}, &ans); st != 422 || !strings.Contains(ans.Fields["version"], "one minor version at a time") {
		t.Fatalf("two-minor upgrade: %d %+v", st, ans)
	}
	mustSucceed(t, action(t, e, tok, r.ID, "upgrade", map[string]any{"version": "1.20"}))
	r, _ = e.Store.RegionByName(context.Background(), "up")
	// The operator moves to 1.20's newest chart, 1.20.2, which ships Serving 1.20.3.
	if r.KnativeVersion != "1.20.3" || r.ServingStatus != store.ComponentReady || r.OperatorVersion != "1.20.2" {
		t.Fatalf("after the upgrade: %s %s operator %s", r.KnativeVersion, r.ServingStatus, r.OperatorVersion)
	}
	ks, _ := c.DynamicGet(context.Background(), ksGVR, "knative-serving", "knative-serving")
	if v, _, _ := unstructured.NestedString(ks.Object, "status", "version"); v != "1.20.3" {
		t.Fatalf("the operator reports %s", v)
	}
	if v, _, _ := unstructured.NestedString(ks.Object, "spec", "version"); v != "1.20" {
		t.Fatalf("spec.version %s: the KnativeServing names the minor", v)
	}
}

func TestTraefikClassConflict(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	ctx := context.Background()
	if err := c.ApplyYAML(ctx, `
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: traefik
  annotations:
    meta.helm.sh/release-name: traefik
    meta.helm.sh/release-namespace: kube-system
spec:
  controller: traefik.io/ingress-controller
`); err != nil {
		t.Fatal(err)
	}
	e := console(t, nil)
	_, tok := e.User("owner")
	r := newRegion(t, e, tok, c, "k3s", nil)
	mustSucceed(t, action(t, e, tok, r.ID, "install-knative", nil))
	if _, err := c.Client.NetworkingV1().IngressClasses().Get(ctx, knative.TraefikFallbackClass, metav1.GetOptions{}); err != nil {
		t.Fatalf("the region's Traefik must serve traefik-knative: %v", err)
	}
	ic, _ := c.Client.NetworkingV1().IngressClasses().Get(ctx, "traefik", metav1.GetOptions{})
	if ic.Annotations["meta.helm.sh/release-namespace"] != "kube-system" {
		t.Fatal("the existing IngressClass traefik must be left alone")
	}
}

// ownMonitoring are the StatefulSets of RunR's own Prometheus and Loki (kube-prometheus-stack
// release prometheus-knative, loki-stack).
var ownMonitoring = []string{"prometheus-knative-kube-prometheus-st-prometheus", "loki-stack"}

// TestExistingMonitoringKeepsRunRsOwn: a region switched to an existing Prometheus and Loki
// leaves RunR's own releases running (regions on the same cluster may still use them), also
// through a reconcile.
func TestExistingMonitoringKeepsRunRsOwn(t *testing.T) {
	c, e, tok, r := readyRegion(t, "mon2")
	ctx := context.Background()
	running := func(when string) {
		t.Helper()
		for _, sts := range ownMonitoring {
			if _, err := c.Client.AppsV1().StatefulSets("observability").Get(ctx, sts, metav1.GetOptions{}); err != nil {
				t.Fatalf("%s: RunR's own %s must keep running: %v", when, sts, err)
			}
		}
	}
	running("after the Serving install")
	var ans struct {
		JobID string `json:"job_id"`
	}
	if st := e.JSON("PUT", "/api/knative-regions/"+r.ID+"/monitoring", tok, map[string]any{
		"prometheus_url": "http://prometheus.monitoring.svc:9090", "loki_url": "http://loki.monitoring.svc:3100"}, &ans); st != 200 || ans.JobID != "" {
		t.Fatalf("switch to existing monitoring: %d, job %q (nothing to run)", st, ans.JobID)
	}
	running("after the switch")
	if st := e.JSON("POST", "/api/reconcile", tok, map[string]any{}, &ans); st != 202 {
		t.Fatalf("reconcile: %d", st)
	}
	mustSucceed(t, e.WaitJob(ans.JobID, 4*time.Minute))
	running("after a reconcile")
	if got, _ := e.Store.RegionByID(ctx, r.ID); got.Monitoring.V.PrometheusURL != "http://prometheus.monitoring.svc:9090" {
		t.Fatalf("the region's choice: %+v", got.Monitoring.V)
	}
}

func TestUninstallOrderAndExistingMonitoring(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	e := console(t, nil)
	_, tok := e.User("owner")
	ctx := context.Background()
	r := newRegion(t, e, tok, c, "mon", map[string]any{"prometheus_url": "http://prometheus.monitoring.svc:9090", "loki_url": "http://loki.monitoring.svc.cluster.local:3100", "loki_org_id": "acme"})
	mustSucceed(t, action(t, e, tok, r.ID, "install-knative", nil))
	for _, sts := range ownMonitoring {
		if _, err := c.Client.AppsV1().StatefulSets("observability").Get(ctx, sts, metav1.GetOptions{}); err == nil {
			t.Errorf("%s must not be installed when an existing one is given", sts)
		}
	}
	r, _ = e.Store.RegionByName(ctx, "mon")
	if r.Component("prometheus").Status != store.ComponentExternal || r.Component("loki").Status != store.ComponentExternal {
		t.Fatalf("components %+v", r.Components.V)
	}
	// The operator cannot go while Serving runs.
	if st := e.JSON("POST", "/api/knative-regions/"+r.ID+"/uninstall-operator", tok, nil, nil); st != 422 {
		t.Fatalf("uninstall-operator with Serving: %d", st)
	}
	mustSucceed(t, action(t, e, tok, r.ID, "uninstall-serving", map[string]any{"remove_traefik": true}))
	if _, err := c.Client.AppsV1().Deployments("knative-serving").Get(ctx, "traefik", metav1.GetOptions{}); err == nil {
		t.Fatal("Traefik must be gone")
	}
	mustSucceed(t, action(t, e, tok, r.ID, "uninstall-operator", nil))
	if _, err := c.APIExtGet(ctx, knative.ServingCRD); err == nil {
		t.Fatal("the operator's CRDs must be gone")
	}
	r, _ = e.Store.RegionByName(ctx, "mon")
	if r.ServingStatus != store.ComponentNotInstalled || r.OperatorStatus != store.ComponentNotInstalled {
		t.Fatalf("after uninstall: serving %s operator %s", r.ServingStatus, r.OperatorStatus)
	}
	// Prometheus stays running for others: the agent and tracing stay.
	if _, err := c.Client.AppsV1().Deployments("observability").Get(ctx, observability.AgentName, metav1.GetOptions{}); err != nil {
		t.Fatal("the runr-agent stays after uninstall-serving")
	}
}
