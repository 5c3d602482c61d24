package apitest

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"strings"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"

	"runr.dev/console/helm"
	"runr.dev/console/kube"
	"runr.dev/console/ops/knative"
	"runr.dev/console/ops/reconcile"
	"runr.dev/console/ops/statusblock"
	"runr.dev/console/store/storetest"
	"runr.dev/console/testcluster"
)

// helmRevisions counts the stored revisions of a Helm release.
func helmRevisions(t *testing.T, c *testcluster.Cluster, ns, name string) int {
	l, err := c.Client.CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "owner=helm,name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	return len(l.Items)
}

// reconcilePlan decodes `runr reconcile --dry-run -o json` into region → step → change.
func reconcilePlan(t *testing.T, out string) map[string]map[string]reconcile.Change {
	var plan []reconcile.Change
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatalf("plan: %v\n%s", err, out)
	}
	m := map[string]map[string]reconcile.Change{}
	for _, c := range plan {
		name := strings.Fields(c.Region)[0]
		if m[name] == nil {
			m[name] = map[string]reconcile.Change{}
		}
		m[name][c.Step] = c
	}
	return m
}

// TestReconcile: after an "upgrade" (new images, tracing retention, a request timeout
// saved without its job, a status block and a budget of an earlier console), the dry run
// lists what each step would change and changes nothing; `runr reconcile` changes it,
// each step once; a second run finds everything up to date; an inactive region is left
// out of the cluster steps but gets its status block; the API runs the same job.
func TestReconcile(t *testing.T) {
	c, e, tok, r := readyRegion(t, "eu-2")
	ctx := context.Background()
	lab := newRegion(t, e, tok, c, "lab", map[string]any{"is_active": false})
	mustSucceed(t, action(t, e, tok, lab.ID, "install-knative", nil))
	ir := schema.GroupVersionResource{Group: "traefik.io", Version: "v1alpha1", Resource: "ingressroutes"}
	if _, err := c.DynamicGet(ctx, ir, "knative-serving", "runr-region-block-lab"); err != nil {
		t.Fatalf("lab's block after its install: %v", err)
	}

	// What a new release changes, for the console and the CLI alike.
	const traefikImage, agentImage = "registry.internal.test/mirror/traefik:v3.7.4", "ghcr.io/brf-tech/runr/agent:v0.2.0"
	// RUNR_RESPONDER_IMAGE follows RUNR_AGENT_IMAGE unless set.
	e.Cfg.TraefikImage, e.Cfg.AgentImage, e.Cfg.ResponderImage, e.Cfg.TracingRetentionHours = traefikImage, agentImage, agentImage, 100
	u := &cliUser{t: t, env: append(os.Environ(), "DATABASE_URL="+e.Store.URL, "RUNR_APP_KEY="+storetest.AppKey,
		"RUNR_CHART_MIRROR="+repo.URL, "RUNR_LOCAL_CLUSTER_HOST=127.0.0.2", "RUNR_ALLOW_LOOPBACK_CLUSTERS=true", "RUNR_INSTALL_TIMEOUT=90s",
		"RUNR_TRAEFIK_IMAGE="+traefikImage, "RUNR_AGENT_IMAGE="+agentImage, "RUNR_TRACING_RETENTION_HOURS=100",
		"RUNR_AGENT_WS_URL="+e.Cfg.AgentWSURL)}
	// Drift the clusters and the database as an earlier console left them.
	set := r.Settings.V
	set.RequestTimeout = 900
	if err := e.Store.SetRegionSettings(ctx, r.ID, set); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(c.REST)
	if err != nil {
		t.Fatal(err)
	}
	if err := dyn.Resource(ir).Namespace("knative-serving").Delete(ctx, "runr-region-block-lab", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	one := intstr.FromInt(1)
	legacy := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "prometheus-knative", Namespace: "observability",
		Labels: map[string]string{"app.kubernetes.io/managed-by": "runr"}},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/instance": "knative"}}}}
	if _, err := c.Client.PolicyV1().PodDisruptionBudgets("observability").Create(ctx, legacy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// An earlier console's Traefik: no internal Service for Knative's cluster-local addresses.
	earlierTraefik(t, c)
	revisions := func() [3]int {
		return [3]int{helmRevisions(t, c, "knative-serving", "traefik"), helmRevisions(t, c, "observability", "tempo"), helmRevisions(t, c, "observability", "otel-collector")}
	}
	before := revisions()

	plan := reconcilePlan(t, u.must("reconcile", "--dry-run", "-o", "json"))
	t.Logf("dry run: %+v", plan)
	for _, step := range reconcile.Steps {
		if step == reconcile.StepStatusBlock || step == reconcile.StepImageMirror || step == reconcile.StepImageRegistry {
			continue // per region; no mirror is set (TestImageMirror); nothing of an earlier namespace (TestReconcileMovesTheImageNamespace)
		}
		if ch := plan["eu-2"][step]; ch.Result != reconcile.ResultChange {
			t.Errorf("eu-2 %s: %+v, want a change", step, ch)
		}
		if ch := plan["lab"][step]; ch.Result != reconcile.ResultLeftOut || !strings.Contains(ch.What, "inactive") {
			t.Errorf("lab %s: %+v, want left out", step, ch)
		}
	}
	if ch := plan["lab"][reconcile.StepStatusBlock]; ch.Result != reconcile.ResultChange {
		t.Errorf("lab status-block: %+v", ch)
	}
	if ch := plan["eu-2"][reconcile.StepStatusBlock]; ch.Result != reconcile.ResultUpToDate {
		t.Errorf("eu-2 status-block: %+v", ch)
	}
	// The new version's helpers: the status responder (lab's block) moves to its image too.
	if w := plan["eu-2"][reconcile.StepAgent].What; !strings.Contains(w, "agent image") || !strings.Contains(w, "Deployment knative-serving/"+statusblock.ResponderName+" image ") || !strings.Contains(w, "→ "+agentImage) {
		t.Errorf("the agent step's dry run does not list the helpers it moves: %q", w)
	}
	if !strings.Contains(plan["eu-2"][reconcile.StepSettings].What, "900") || !strings.Contains(plan["eu-2"][reconcile.StepTraefikImage].What, "registry.internal.test/mirror/traefik:v3.7.4") {
		t.Errorf("what: %+v", plan["eu-2"])
	}
	// The dry run changed nothing.
	if revisions() != before {
		t.Fatalf("the dry run upgraded a release: %v → %v", before, revisions())
	}
	if _, err := c.DynamicGet(ctx, ir, "knative-serving", "runr-region-block-lab"); err == nil {
		t.Fatal("the dry run applied a block")
	}

	out := u.must("reconcile")
	t.Logf("runr reconcile:\n%s", out)
	checkReconciled(t, c, traefikImage, agentImage)
	// Traefik once for its timeouts and once for its image (two steps), Tempo once for its
	// retention; the collector's values did not change.
	after := revisions()
	if after != [3]int{before[0] + 2, before[1] + 1, before[2]} {
		t.Fatalf("Helm revisions of traefik, tempo, otel-collector: %v → %v", before, after)
	}

	// Idempotent: the second run finds nothing to do and upgrades nothing.
	for step, ch := range reconcilePlan(t, u.must("reconcile", "--dry-run", "-o", "json"))["eu-2"] {
		if ch.Result != reconcile.ResultUpToDate {
			t.Errorf("after the reconcile, eu-2 %s: %+v", step, ch)
		}
	}
	u.must("reconcile", "--region", "eu-2")
	if revisions() != after {
		t.Fatalf("a second reconcile upgraded a release: %v → %v", after, revisions())
	}

	// The same job through the API.
	var ans struct {
		JobID  string `json:"job_id"`
		Fields map[string]string
	}
	if st := e.JSON("POST", "/api/reconcile", tok, map[string]any{"step": "nope"}, &ans); st != 422 || ans.Fields["step"] == "" {
		t.Fatalf("unknown step: %d %+v", st, ans)
	}
	if st := e.JSON("POST", "/api/reconcile", tok, map[string]any{"step": "agent"}, &ans); st != 202 {
		t.Fatalf("reconcile: %d", st)
	}
	mustSucceed(t, e.WaitJob(ans.JobID, 2*time.Minute))
	var apiPlan struct{ Data []reconcile.Change }
	if st := e.JSON("GET", "/api/reconcile?region=eu-2", tok, nil, &apiPlan); st != 200 || len(apiPlan.Data) != len(reconcile.Steps) {
		t.Fatalf("plan: %d %+v", st, apiPlan)
	}
}

// earlierTraefik upgrades the region's Traefik release to the values an earlier console
// gave it: without the internal Service, its entry point and the Knative provider's
// private Service.
func earlierTraefik(t *testing.T, tc *testcluster.Cluster) {
	t.Helper()
	kc, err := kube.ParseKubeconfig(tc.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	kc.AllowLoopback = true
	c, err := kube.NewCluster(kc)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := helm.Status(c, "knative-serving", "traefik")
	if err != nil {
		t.Fatal(err)
	}
	vals := maps.Clone(rel.Config)
	delete(vals, "additionalArguments")
	vals["ports"] = maps.Clone(vals["ports"].(map[string]any))
	delete(vals["ports"].(map[string]any), "local")
	vals["service"] = map[string]any{"spec": vals["service"].(map[string]any)["spec"]}
	if _, err := helm.Apply(context.Background(), c, helm.Release{Namespace: "knative-serving", Name: "traefik", Chart: rel.Chart, Values: vals}, helm.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := tc.Client.CoreV1().Services("knative-serving").Get(context.Background(), knative.TraefikInternalService, metav1.GetOptions{}); err == nil {
		t.Fatal("the earlier Traefik still has its internal Service")
	}
}

// checkReconciled checks what the reconcile changed on the cluster.
func checkReconciled(t *testing.T, c *testcluster.Cluster, traefikImage, agentImage string) {
	t.Helper()
	ctx := context.Background()
	tr, err := c.Client.AppsV1().Deployments("knative-serving").Get(ctx, "traefik", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if args := strings.Join(tr.Spec.Template.Spec.Containers[0].Args, " "); !strings.Contains(args, "readTimeout=910s") ||
		!strings.Contains(args, "--providers.knative.privateService.name="+knative.TraefikInternalService) {
		t.Errorf("traefik timeouts and Knative's private Service: %s", args)
	}
	if svc, err := c.Client.CoreV1().Services("knative-serving").Get(ctx, knative.TraefikInternalService, metav1.GetOptions{}); err != nil ||
		len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 80 || svc.Spec.Ports[0].TargetPort.String() != "local" {
		t.Errorf("Traefik's internal Service: %v %+v", err, svc)
	}
	if img := tr.Spec.Template.Spec.Containers[0].Image; img != traefikImage {
		t.Errorf("traefik image %s", img)
	}
	ks, _ := c.DynamicGet(ctx, ksGVR, "knative-serving", "knative-serving")
	if v, _, _ := unstructured.NestedString(ks.Object, "spec", "config", "defaults", "max-revision-timeout-seconds"); v != "900" {
		t.Errorf("max-revision-timeout-seconds %q", v)
	}
	ir := schema.GroupVersionResource{Group: "traefik.io", Version: "v1alpha1", Resource: "ingressroutes"}
	if _, err := c.DynamicGet(ctx, ir, "knative-serving", "runr-region-block-lab"); err != nil {
		t.Errorf("lab's block: %v", err)
	}
	if _, err := c.DynamicGet(ctx, ir, "knative-serving", "runr-region-block-eu-2"); err == nil {
		t.Error("eu-2 is active: no block")
	}
	ag, err := c.Client.AppsV1().Deployments("observability").Get(ctx, "runr-agent", metav1.GetOptions{})
	if err != nil || ag.Spec.Template.Spec.Containers[0].Image != agentImage {
		t.Errorf("agent: %v", err)
	}
	// The console's other helpers moved with the agent: lab's status responder.
	if d, err := c.Client.AppsV1().Deployments("knative-serving").Get(ctx, statusblock.ResponderName, metav1.GetOptions{}); err != nil || d.Spec.Template.Spec.Containers[0].Image != agentImage {
		t.Errorf("status responder: %v", err)
	}
	if _, err := c.Client.PolicyV1().PodDisruptionBudgets("observability").Get(ctx, "prometheus-knative", metav1.GetOptions{}); err == nil {
		t.Error("the earlier console's budget must be gone")
	}
}
