package apitest

import (
	"context"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"runr.dev/console/ops/nodes"
	"runr.dev/console/testcluster"
)

// A k3s cluster upgraded node by node through Rancher's system-upgrade-controller (the
// harness plays it from its source): the control plane first, then one worker at a time,
// each cordoned, drained (held by a PodDisruptionBudget, which the job and the Workers tab
// name, until it allows the eviction), upgraded and uncordoned, with the API probed
// throughout. A refused version changes nothing.
func TestKubernetesUpgradeNodeByNode(t *testing.T) {
	ctx := context.Background()
	const from, to = "v1.34.1+k3s1", "v1.34.3+k3s1"
	c := testcluster.New(t, testcluster.Options{Nodes: []testcluster.NodeSpec{
		{Name: "cp-1", CPU: "4", Memory: "8Gi", ControlPlane: true, KubeletVersion: from, Taints: []corev1.Taint{wkCPTaint}},
		{Name: "w-1", CPU: "8", Memory: "16Gi", Worker: true, KubeletVersion: from},
		{Name: "w-2", CPU: "8", Memory: "16Gi", Worker: true, KubeletVersion: from}}})
	e := console(t, nil)
	_, tok := e.User("owner")
	r := newRegion(t, e, tok, c, "k3s", nil)
	path := "/api/knative-regions/" + r.ID + "/kubernetes-upgrade"

	if u := wkGetNodes(t, e, tok, r.ID).Upgrades; !u.Upgradable || u.Distribution != "k3s" || len(u.Progress) != 0 {
		t.Fatalf("before any upgrade: %+v", u)
	}
	// Refused versions: 422 beside the field, and nothing queued or installed.
	var jobs, after int
	e.Store.DB.Get(&jobs, `SELECT count(*) FROM jobs`)
	for version, want := range map[string]string{
		"":             "Give the release to upgrade to, such as v1.34.2+k3s1.",
		"v1.34.3":      `"v1.34.3" is not a k3s release`,
		"v1.34.0+k3s1": "the console does not downgrade",
		"v1.36.0+k3s1": "Upgrade one minor version at a time",
	} {
		var ans struct {
			Fields map[string]string
			Error  string
		}
		if st := e.JSON("POST", path, tok, map[string]any{"version": version}, &ans); st != 422 || !strings.Contains(ans.Fields["version"], want) {
			t.Fatalf("version %q: %d %+v", version, st, ans)
		}
	}
	// The same refusals from the Workers tab's form (beside the field) and the CLI.
	b := e.SignedIn("owner")
	b.Get("/regions/" + r.ID + "?tab=workers")
	resp, page := b.PostForm("/regions/"+r.ID+"/kubernetes-upgrade", url.Values{"version": {"v1.36.0+k3s1"}}, true)
	if resp.StatusCode != 422 || !strings.Contains(page, `id="err-version"`) || !strings.Contains(page, "Upgrade one minor version at a time") ||
		!strings.Contains(page, `value="v1.36.0+k3s1"`) {
		t.Fatalf("the form's refusal: %d", resp.StatusCode)
	}
	if out, errOut, code := newCLIUser(t, e.Listen(), tok).run("regions", "workers", "upgrade", "k3s", "v1.34.0+k3s1"); code == 0 || !strings.Contains(out+errOut, "the console does not downgrade") {
		t.Fatalf("runr regions workers upgrade refused: exit %d\n%s%s", code, out, errOut)
	}
	e.Store.DB.Get(&after, `SELECT count(*) FROM jobs`)
	if _, err := c.Client.CoreV1().Namespaces().Get(ctx, nodes.SUCNamespace, metav1.GetOptions{}); after != jobs || !apierrors.IsNotFound(err) {
		t.Fatalf("a refused upgrade changed something: jobs %d -> %d, namespace %s: %v", jobs, after, nodes.SUCNamespace, err)
	}

	// One replica that its budget forbids to disrupt.
	if err := c.ApplyYAML(ctx, `apiVersion: v1
kind: Namespace
metadata:
  name: shop
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: example.com/web:1
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
  namespace: shop
spec:
  minAvailable: 1
  selector:
    matchLabels: {app: web}
`); err != nil {
		t.Fatal(err)
	}
	var webNode, webPod string
	wkEventually(t, time.Minute, "the budget to count the web pod", func() bool {
		pdb, err := c.Client.PolicyV1().PodDisruptionBudgets("shop").Get(ctx, "web", metav1.GetOptions{})
		pods, _ := c.Client.CoreV1().Pods("shop").List(ctx, metav1.ListOptions{})
		if err != nil || pdb.Status.CurrentHealthy != 1 || pdb.Status.ObservedGeneration != pdb.Generation || len(pods.Items) != 1 {
			return false
		}
		webNode, webPod = pods.Items[0].Spec.NodeName, pods.Items[0].Name
		return true
	})

	id, _ := wkStart(t, e, tok, "POST", path, map[string]any{"version": to})
	held := webNode + ": draining, 1 pod(s) left: blocked by PodDisruptionBudget shop/web"
	for deadline := time.Now().Add(3 * time.Minute); !strings.Contains(wkLog(t, e, id), held); time.Sleep(250 * time.Millisecond) {
		if j, _ := e.Store.JobByID(ctx, id); time.Now().After(deadline) || j.Done() {
			t.Fatalf("the drain of %s is not held by the budget (%s %s):\n%s", webNode, j.Status, j.Error, wkLog(t, e, id))
		}
	}
	// Meanwhile: the control plane is done, and the Workers tab shows each node's stage.
	other := map[string]string{"w-1": "w-2", "w-2": "w-1"}[webNode]
	prog := map[string]nodes.NodeProgress{}
	for _, p := range wkGetNodes(t, e, tok, r.ID).Upgrades.Progress {
		for _, n := range p.Nodes {
			prog[n.Node] = n
		}
	}
	if prog["cp-1"].Stage != nodes.StageUncordoned || prog["cp-1"].Kubelet != to || prog[webNode].Stage != nodes.StageDraining ||
		!strings.Contains(prog[webNode].Detail, "blocked by PodDisruptionBudget shop/web") {
		t.Fatalf("progress while held: %+v", prog)
	}
	// The other worker went first or waits (the controller's order is a hash's), but is not
	// under way at the same time.
	if n, _ := c.Client.CoreV1().Nodes().Get(ctx, other, metav1.GetOptions{}); n.Spec.Unschedulable ||
		prog[other].Stage != nodes.StageWaiting && prog[other].Stage != nodes.StageUncordoned {
		t.Fatalf("%s is under way while %s is held: cordoned %v, %+v", other, webNode, n.Spec.Unschedulable, prog[other])
	}
	if _, page := e.Raw("GET", "/regions/"+r.ID+"?tab=workers", tok, ""); !strings.Contains(page, `data-upgrade-node="`+webNode+`" data-stage="draining"`) ||
		!strings.Contains(page, "blocked by PodDisruptionBudget shop/web") {
		t.Fatal("the Workers tab does not show the held drain")
	}

	if out := newCLIUser(t, e.Listen(), tok).must("regions", "workers", "list", "k3s"); !strings.Contains(out, "upgrade to "+to+":") ||
		!regexp.MustCompile(webNode+` +draining, 1 pod\(s\) left: blocked by PodDisruptionBudget shop/web`).MatchString(out) {
		t.Fatalf("runr regions workers list during the upgrade:\n%s", out)
	}
	// Node actions wait for the upgrade, which cordons and uncordons the nodes itself, and
	// a second upgrade is refused.
	for _, try := range []struct{ method, path string }{
		{"POST", "/api/knative-regions/" + r.ID + "/nodes/" + other + "/drain"},
		{"DELETE", "/api/knative-regions/" + r.ID + "/nodes/" + other},
		{"POST", path},
	} {
		var ans struct{ Error string }
		if st := e.JSON(try.method, try.path, tok, map[string]any{"version": to}, &ans); st != 409 || !strings.Contains(ans.Error, "An upgrade of this cluster is under way") {
			t.Fatalf("%s %s during the upgrade: %d %+v", try.method, try.path, st, ans)
		}
	}
	// The budget allows the eviction: the upgrade goes on to the end.
	pdb, _ := c.Client.PolicyV1().PodDisruptionBudgets("shop").Get(ctx, "web", metav1.GetOptions{})
	pdb.Spec.MinAvailable.IntVal = 0
	if _, err := c.Client.PolicyV1().PodDisruptionBudgets("shop").Update(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	mustSucceed(t, e.WaitJob(id, 4*time.Minute))
	log := wkLog(t, e, id)
	for _, want := range []string{
		"Installing Helm release cattle-system/system-upgrade-controller",
		"cp-1: uncordoned (kubelet " + to + ")",
		webNode + ": uncordoned (kubelet " + to + ")",
		other + ": uncordoned (kubelet " + to + ")",
		"The Kubernetes API answered all",
		"Every node (3) runs " + to,
	} {
		if !strings.Contains(log, want) {
			t.Fatalf("the upgrade's log lacks %q:\n%s", want, log)
		}
	}
	if strings.Index(log, "cp-1: uncordoned") > strings.Index(log, held) {
		t.Fatalf("a worker moved before the control plane was done:\n%s", log)
	}
	list, _ := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	for _, n := range list.Items {
		if n.Spec.Unschedulable || n.Status.NodeInfo.KubeletVersion != to {
			t.Fatalf("%s after the upgrade: cordoned %v, kubelet %s", n.Name, n.Spec.Unschedulable, n.Status.NodeInfo.KubeletVersion)
		}
	}
	// The web pod was evicted (by each drain of a node it ran on) and runs again.
	pods, _ := c.Client.CoreV1().Pods("shop").List(ctx, metav1.ListOptions{})
	if len(pods.Items) != 1 || pods.Items[0].Name == webPod || pods.Items[0].Status.Phase != corev1.PodRunning {
		t.Fatalf("the web pod after the upgrade: %+v", pods.Items)
	}
	dyn, err := dynamic.NewForConfig(c.REST)
	if err != nil {
		t.Fatal(err)
	}
	plans, err := dyn.Resource(schema.GroupVersionResource{Group: "upgrade.cattle.io", Version: "v1", Resource: "plans"}).Namespace(nodes.SUCNamespace).List(ctx, metav1.ListOptions{})
	if err != nil || len(plans.Items) != 0 {
		t.Fatalf("the Plans stay after the upgrade: %v %v", plans, err)
	}
	var again struct{ Fields map[string]string }
	if st := e.JSON("POST", path, tok, map[string]any{"version": to}, &again); st != 422 || again.Fields["version"] != "Every node runs "+to+" already." {
		t.Fatalf("the same release again: %d %+v", st, again)
	}
}
