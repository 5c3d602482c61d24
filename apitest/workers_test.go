package apitest

import (
	"context"
	"errors"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/nodes"
	"runr.dev/console/store"
	"runr.dev/console/testcluster"
	"runr.dev/console/web/webtest"
)

var wkCPTaint = corev1.Taint{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}

// wkNodes is GET /api/knative-regions/{id}/nodes.
type wkNodes struct {
	Data          []nodes.NodeView     `json:"data"`
	ControlPlanes int                  `json:"control_planes"`
	Warnings      []nodes.ShapeWarning `json:"warnings"`
	Upgrades      nodes.Upgrades       `json:"upgrades"`
	Error         string
}

func (n wkNodes) node(t *testing.T, name string) nodes.NodeView {
	t.Helper()
	for _, v := range n.Data {
		if v.Name == name {
			return v
		}
	}
	t.Fatalf("no node %s in %+v", name, n.Data)
	return nodes.NodeView{}
}

func (n wkNodes) warning(key string) string {
	for _, w := range n.Warnings {
		if w.Key == key {
			return w.Message
		}
	}
	return ""
}

func wkGetNodes(t *testing.T, e *webtest.Env, tok, id string) wkNodes {
	t.Helper()
	var ans wkNodes
	if st := e.JSON("GET", "/api/knative-regions/"+id+"/nodes", tok, nil, &ans); st != 200 {
		t.Fatalf("nodes: %d %s", st, ans.Error)
	}
	return ans
}

func wkPreflight(v nodes.NodeView, key string) kit.CheckItem {
	for _, it := range v.Preflight {
		if it.Key == key {
			return it
		}
	}
	return kit.CheckItem{}
}

// wkStart posts a node action and returns its job id (202).
func wkStart(t *testing.T, e *webtest.Env, tok, method, path string, body any) (string, string) {
	t.Helper()
	var ans struct {
		JobID   string `json:"job_id"`
		Warning string `json:"warning"`
		Error   string
	}
	if st := e.JSON(method, path, tok, body, &ans); st != 202 {
		t.Fatalf("%s %s: %d %s", method, path, st, ans.Error)
	}
	return ans.JobID, ans.Warning
}

// wkLog returns a job's log and wait lines.
func wkLog(t *testing.T, e *webtest.Env, id string) string {
	t.Helper()
	evs, err := e.Store.JobEvents(context.Background(), id, 0, 5000)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, ev := range evs {
		b.WriteString(ev.Message + "\n")
	}
	return b.String()
}

func TestWorkersNodesPreflightDrainAndDelete(t *testing.T) {
	ctx := context.Background()
	cp := func(name string) testcluster.NodeSpec {
		return testcluster.NodeSpec{Name: name, CPU: "4", Memory: "8Gi", ControlPlane: true, Taints: []corev1.Taint{wkCPTaint}}
	}
	c := testcluster.New(t, testcluster.Options{Nodes: []testcluster.NodeSpec{cp("cp-1")}})
	wkAddNodes(t, c, cp("cp-2"), cp("cp-3"),
		testcluster.NodeSpec{Name: "w-ok", CPU: "8", Memory: "16Gi", Worker: true},
		testcluster.NodeSpec{Name: "w-small", CPU: "1", Memory: "8Gi", Worker: true},
		testcluster.NodeSpec{Name: "w-interim", CPU: "4", Memory: "8Gi", Worker: true, OSImage: "Ubuntu 25.04"})
	e := console(t, nil)
	_, tok := e.User("owner")
	r := newRegion(t, e, tok, c, "nodes", nil)
	// w-lost reports Ready once, then its heartbeat stops; it is checked at the end, after 30 s.
	wkLostNode(t, c, testcluster.NodeSpec{Name: "w-lost", CPU: "4", Memory: "8Gi", Worker: true})
	stopped := time.Now()

	// Roles, heartbeat, software, resources, preflight.
	ns := wkGetNodes(t, e, tok, r.ID)
	if len(ns.Data) != 7 || ns.ControlPlanes != 3 || len(ns.Warnings) != 0 {
		t.Fatalf("nodes %d, control planes %d, warnings %+v", len(ns.Data), ns.ControlPlanes, ns.Warnings)
	}
	if v := ns.node(t, "cp-1"); strings.Join(v.Roles, ",") != "control-plane" || !v.ControlPlane || v.Worker {
		t.Fatalf("cp-1 roles %v", v.Roles)
	}
	ok := ns.node(t, "w-ok")
	if strings.Join(ok.Roles, ",") != "worker" || ok.Status != kube.NodeReadyState || ok.LastHeartbeat == nil || ok.HeartbeatAgeSeconds > 30 ||
		ok.KubeletVersion != testcluster.KubernetesVersion || ok.OSImage != "Ubuntu 24.04.2 LTS" || ok.ContainerRuntime != "containerd://2.1.4" ||
		ok.CPUAllocatableM != 8000 || ok.MemoryAllocatableMi != 16384 || !ok.PreflightOK || ok.Labels["kubernetes.io/hostname"] != "w-ok" {
		t.Fatalf("w-ok: %+v", ok)
	}
	if it := wkPreflight(ns.node(t, "w-small"), "cpu"); it.Status != kit.CheckFail || !strings.Contains(it.Evidence, "1 CPU (at least 2)") {
		t.Fatalf("1-CPU node: %+v", it)
	}
	if it := wkPreflight(ns.node(t, "w-interim"), "os"); it.Status != kit.CheckFail || !strings.Contains(it.Evidence, "Ubuntu 25.04 is an interim release") {
		t.Fatalf("Ubuntu 25.04: %+v", it)
	}
	for _, n := range []string{"w-small", "w-interim"} {
		v := ns.node(t, n)
		if v.PreflightOK || wkPreflight(v, "kubelet").Status != kit.CheckPass || wkPreflight(v, "memory").Status != kit.CheckPass {
			t.Fatalf("%s preflight: %+v", n, v.Preflight)
		}
	}
	if v := ns.node(t, "w-lost"); v.Status != kube.NodeReadyState {
		t.Fatalf("w-lost just lost its heartbeat: %s", v.Status)
	}
	if v := ns.node(t, "cp-3"); v.Delete.Refused != "" || !strings.Contains(v.Delete.Warning, "leaves 2 control-plane nodes") {
		t.Fatalf("cp-3 delete check: %+v", v.Delete)
	}
	if v := ns.node(t, "cp-1"); len(v.Taints) != 1 || v.Taints[0] != "node-role.kubernetes.io/control-plane:NoSchedule" {
		t.Fatalf("cp-1 taints %v", v.Taints)
	}

	// Dedicating a node below the floor asks for a confirmation that names its failed
	// checks, and queues nothing until it is given; the selection is cleared again after.
	var jobs, after int
	e.Store.DB.Get(&jobs, `SELECT count(*) FROM jobs`)
	var below struct{ Fields map[string]string }
	workers := "/api/knative-regions/" + r.ID + "/workers"
	if st := e.JSON("PUT", workers, tok, map[string]any{"nodes": []string{"w-ok", "w-small"}}, &below); st != 422 ||
		!strings.Contains(below.Fields["confirm_below_floor"], "w-small fails CPU: 1 CPU (at least 2)") || strings.Contains(below.Fields["confirm_below_floor"], "w-ok") {
		t.Fatalf("a node below the floor without a confirmation: %d %+v", st, below)
	}
	if e.Store.DB.Get(&after, `SELECT count(*) FROM jobs`); after != jobs {
		t.Fatal("the refused selection queued a job")
	}
	id, _ := wkStart(t, e, tok, "PUT", workers, map[string]any{"nodes": []string{"w-ok", "w-small"}, "confirm_below_floor": true})
	mustSucceed(t, e.WaitJob(id, time.Minute))
	id, _ = wkStart(t, e, tok, "PUT", workers, map[string]any{"nodes": []string{}})
	mustSucceed(t, e.WaitJob(id, time.Minute))

	// Cordon and uncordon.
	base := "/api/knative-regions/" + r.ID + "/nodes/"
	id, _ = wkStart(t, e, tok, "POST", base+"w-small/cordon", nil)
	mustSucceed(t, e.WaitJob(id, time.Minute))
	if n, _ := c.Client.CoreV1().Nodes().Get(ctx, "w-small", metav1.GetOptions{}); !n.Spec.Unschedulable {
		t.Fatal("w-small is not cordoned")
	}
	if v := wkGetNodes(t, e, tok, r.ID).node(t, "w-small"); !v.Cordoned {
		t.Fatal("the API does not show w-small cordoned")
	}
	id, _ = wkStart(t, e, tok, "POST", base+"w-small/uncordon", nil)
	mustSucceed(t, e.WaitJob(id, time.Minute))
	if n, _ := c.Client.CoreV1().Nodes().Get(ctx, "w-small", metav1.GetOptions{}); n.Spec.Unschedulable {
		t.Fatal("w-small is still cordoned")
	}
	var ans struct{ Error string }
	if st := e.JSON("POST", base+"nope/cordon", tok, nil, &ans); st != 404 || !strings.Contains(ans.Error, `no node "nope"`) {
		t.Fatalf("unknown node: %d %+v", st, ans)
	}

	// A drain blocked by a PodDisruptionBudget, then unblocked. Two replicas on w-ok with
	// a budget that needs both, a pod of its own, and a DaemonSet pod that stays.
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
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      nodeSelector: {kubernetes.io/hostname: w-ok}
      containers:
      - name: web
        image: example.com/web:1
        resources:
          requests: {cpu: 250m, memory: 128Mi}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
  namespace: shop
spec:
  minAvailable: 2
  selector:
    matchLabels: {app: web}
---
apiVersion: v1
kind: Pod
metadata:
  name: loner
  namespace: shop
spec:
  nodeName: w-ok
  containers:
  - name: c
    image: example.com/loner:1
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: node-agent
  namespace: kube-system
spec:
  selector:
    matchLabels: {app: node-agent}
  template:
    metadata:
      labels: {app: node-agent}
    spec:
      nodeSelector: {kubernetes.io/hostname: w-ok}
      containers:
      - name: agent
        image: example.com/agent:1
`); err != nil {
		t.Fatal(err)
	}
	wkEventually(t, time.Minute, "the PodDisruptionBudget to count 2 healthy pods and the DaemonSet pod to run", func() bool {
		pdb, err := c.Client.PolicyV1().PodDisruptionBudgets("shop").Get(ctx, "web", metav1.GetOptions{})
		if err != nil || pdb.Status.CurrentHealthy != 2 || pdb.Status.DisruptionsAllowed != 0 || pdb.Status.ObservedGeneration != pdb.Generation {
			return false
		}
		ds, err := c.Client.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "app=node-agent"})
		return err == nil && len(ds.Items) == 1 && ds.Items[0].Status.Phase == corev1.PodRunning
	})
	if v := wkGetNodes(t, e, tok, r.ID).node(t, "w-ok"); v.CPURequestedM != 500 || v.MemoryRequestedMi != 256 || v.Pods != 4 {
		t.Fatalf("w-ok requested %dm %dMi, %d pods", v.CPURequestedM, v.MemoryRequestedMi, v.Pods)
	}
	// A short drain that the budget blocks ends at its own deadline, naming the budget:
	// an eviction refused with 429 is not retried by the client for half a minute.
	started := time.Now()
	short, _ := wkStart(t, e, tok, "POST", base+"w-ok/drain", map[string]any{"timeout_seconds": 8})
	if j := e.WaitJob(short, time.Minute); j.Status != store.JobFailed || !strings.Contains(j.Error, "blocked by PodDisruptionBudget shop/web") {
		t.Fatalf("a blocked drain: %s: %s", j.Status, j.Error)
	}
	if took := time.Since(started); took > 20*time.Second {
		t.Fatalf("an 8 s drain took %s", took)
	}
	if log := wkLog(t, e, short); !strings.Contains(log, "Evicted pod shop/loner") {
		t.Fatalf("the short drain evicts what it may:\n%s", log)
	}
	drain, _ := wkStart(t, e, tok, "POST", base+"w-ok/drain", map[string]any{"timeout_seconds": 120})
	wkEventually(t, time.Minute, "the drain to name the blocking PodDisruptionBudget", func() bool {
		log := wkLog(t, e, drain)
		steps, _ := e.Store.JobSteps(ctx, drain)
		return strings.Contains(log, "waiting for pod shop/web-") && strings.Contains(log, "blocked by PodDisruptionBudget shop/web") &&
			len(steps) == 2 && steps[1].Wait != ""
	})
	if j, _ := e.Store.JobByID(ctx, drain); j.Done() {
		t.Fatalf("the drain ended while blocked: %s %s", j.Status, j.Error)
	}
	steps, _ := e.Store.JobSteps(ctx, drain)
	if len(steps) != 2 || steps[0].Status != store.StepDone || steps[1].Status != store.StepRunning || !strings.Contains(steps[1].Wait, "waiting for the pods to leave w-ok") {
		t.Fatalf("drain steps: %+v", steps)
	}
	if n, _ := c.Client.CoreV1().Nodes().Get(ctx, "w-ok", metav1.GetOptions{}); !n.Spec.Unschedulable {
		t.Fatal("a drained node is cordoned first")
	}
	// Unblock: the budget allows every disruption.
	pdb, _ := c.Client.PolicyV1().PodDisruptionBudgets("shop").Get(ctx, "web", metav1.GetOptions{})
	pdb.Spec.MinAvailable.IntVal = 0
	if _, err := c.Client.PolicyV1().PodDisruptionBudgets("shop").Update(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	j := e.WaitJob(drain, 2*time.Minute)
	mustSucceed(t, j)
	left, _ := c.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=w-ok"})
	if len(left.Items) != 1 || left.Items[0].Namespace != "kube-system" {
		t.Fatalf("after the drain w-ok runs %d pods: %+v", len(left.Items), left.Items)
	}
	if log := wkLog(t, e, drain); !strings.Contains(log, "1 DaemonSet or mirror pod(s) stay") {
		t.Fatalf("drain log:\n%s", log)
	}

	// Deleting control planes: 3 -> 2 warns (even), 2 -> 1 does not, the last is refused.
	if st := e.JSON("GET", base+"cp-3/delete-preflight", tok, nil, nil); st != 200 {
		t.Fatalf("delete-preflight: %d", st)
	}
	id, warning := wkStart(t, e, tok, "DELETE", base+"cp-3", nil)
	if !strings.Contains(warning, "leaves 2 control-plane nodes") || !strings.Contains(warning, "advisory") {
		t.Fatalf("warning %q", warning)
	}
	mustSucceed(t, e.WaitJob(id, time.Minute))
	if os.Getenv("RUNR_WORKERS_PAGE") != "" {
		_, page := e.Raw("GET", "/regions/"+r.ID+"?tab=workers", tok, "")
		_ = os.WriteFile(os.Getenv("RUNR_WORKERS_PAGE"), []byte(page), 0o644)
	}
	if log := wkLog(t, e, id); !strings.Contains(log, "shows no etcd pod in kube-system") || !strings.Contains(log, "If cp-3 ran an etcd member, remove it") {
		t.Fatalf("delete log:\n%s", log)
	}
	// delete-preflight is the job's first step, visible with its advisory warning.
	if steps, _ := e.Store.JobSteps(ctx, id); len(steps) == 0 || steps[0].Name != "delete-preflight" || steps[0].Status != store.StepDone {
		t.Fatalf("the delete's first step: %+v", steps)
	}
	if log := wkLog(t, e, id); !strings.Contains(log, "even number of etcd voting members") {
		t.Fatalf("the delete-preflight step's warning is not in the log:\n%s", log)
	}
	if _, err := c.Client.CoreV1().Nodes().Get(ctx, "cp-3", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("cp-3 still exists: %v", err)
	}
	if ns := wkGetNodes(t, e, tok, r.ID); ns.ControlPlanes != 2 || !strings.Contains(ns.warning("even_control_planes"), "etcd") {
		t.Fatalf("after 3 -> 2: %+v", ns.Warnings)
	}
	id, warning = wkStart(t, e, tok, "DELETE", base+"cp-2", nil)
	if warning != "" {
		t.Fatalf("2 -> 1 is odd: %q", warning)
	}
	mustSucceed(t, e.WaitJob(id, time.Minute))
	if ns := wkGetNodes(t, e, tok, r.ID); ns.warning("single_control_plane") == "" || ns.node(t, "cp-1").Delete.Refused == "" {
		t.Fatalf("after 2 -> 1: %+v %+v", ns.Warnings, ns.node(t, "cp-1").Delete)
	}
	if st := e.JSON("DELETE", base+"cp-1", tok, nil, &ans); st != 422 || !strings.Contains(ans.Error, "last control-plane node") {
		t.Fatalf("last control plane: %d %+v", st, ans)
	}
	if _, err := c.Client.CoreV1().Nodes().Get(ctx, "cp-1", metav1.GetOptions{}); err != nil {
		t.Fatalf("cp-1: %v", err)
	}
	if st := e.JSON("DELETE", base+"nope", tok, nil, &ans); st != 404 {
		t.Fatalf("unknown node: %d", st)
	}

	// The heartbeat of w-lost is older than 30 s: no_heartbeat.
	wkEventually(t, 90*time.Second, "w-lost to show no_heartbeat", func() bool {
		v := wkGetNodes(t, e, tok, r.ID).node(t, "w-lost")
		return v.Status == kube.NodeNoHeartbeat && v.HeartbeatAgeSeconds >= 30
	})
	t.Logf("no_heartbeat %s after the heartbeat stopped", time.Since(stopped).Round(time.Second))
	if v := wkGetNodes(t, e, tok, r.ID).node(t, "w-ok"); v.Status != kube.NodeReadyState {
		t.Fatalf("w-ok: %s", v.Status)
	}
}

// wkAddNodes adds kwok nodes like testcluster's AddNodes, retrying the status write
// when kwok or a controller changed the new node first (AddNodes fails the cluster's
// start on that conflict; with many nodes it happens often).
func wkAddNodes(t *testing.T, c *testcluster.Cluster, specs ...testcluster.NodeSpec) {
	t.Helper()
	ctx := context.Background()
	for _, spec := range specs {
		n := spec.Node()
		if _, err := c.Client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := c.Client.CoreV1().Nodes().Get(ctx, spec.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Status.Capacity, cur.Status.Allocatable, cur.Status.NodeInfo, cur.Status.Phase =
				n.Status.Capacity, n.Status.Allocatable, n.Status.NodeInfo, n.Status.Phase
			_, err = c.Client.CoreV1().Nodes().UpdateStatus(ctx, cur, metav1.UpdateOptions{})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, spec := range specs {
		if err := c.WaitNodeReady(ctx, spec.Name, true); err != nil {
			t.Fatal(err)
		}
	}
}

// wkLostNode adds a node that kwok keeps Ready, then stops its heartbeat, as when
// its kubelet dies.
func wkLostNode(t *testing.T, c *testcluster.Cluster, spec testcluster.NodeSpec) {
	t.Helper()
	ctx := context.Background()
	if err := c.AddNodes(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if err := c.StopHeartbeat(ctx, spec.Name); err != nil {
		t.Fatal(err)
	}
}

func wkEventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// wkCapacity is GET /api/knative-regions/{id}/capacity.
type wkCapacity struct {
	Data  nodes.CapacityReport `json:"data"`
	Error string
}

func wkGetCapacity(t *testing.T, e *webtest.Env, tok, id string) nodes.CapacityReport {
	t.Helper()
	var ans wkCapacity
	if st := e.JSON("GET", "/api/knative-regions/"+id+"/capacity", tok, nil, &ans); st != 200 {
		t.Fatalf("capacity: %d %s", st, ans.Error)
	}
	return ans.Data
}

func wkDedicated(t *testing.T, c *testcluster.Cluster, name string) (label, taint bool) {
	t.Helper()
	n, err := c.Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, role := n.Labels[nodes.KnativeWorkerRL]
	return n.Labels[nodes.DedicatedKey] == nodes.DedicatedValue && role, hasTaint(n, nodes.DedicatedKey)
}

func TestWorkersSelectionCapacityAndAdmission(t *testing.T) {
	ctx := context.Background()
	c := testcluster.New(t, testcluster.Options{}) // cp-1 (tainted), worker-1 and worker-2 (8 CPU, 16 GiB)
	e := console(t, nil)
	owner, tok := e.User("owner")
	r := newRegion(t, e, tok, c, "cap", nil)

	// Platform workloads: 500m / 512Mi on worker-1, 1 CPU / 1 GiB on worker-2. A project
	// pod (namespace cap, labelled runr.dev/region) is not subtracted.
	if err := c.ApplyYAML(ctx, `apiVersion: v1
kind: Namespace
metadata:
  name: observability
---
apiVersion: v1
kind: Pod
metadata:
  name: proxy
  namespace: kube-system
spec:
  nodeName: worker-1
  containers:
  - name: c
    image: example.com/proxy:1
    resources:
      requests: {cpu: 500m, memory: 512Mi}
---
apiVersion: v1
kind: Pod
metadata:
  name: prometheus
  namespace: observability
spec:
  nodeName: worker-2
  containers:
  - name: c
    image: example.com/prometheus:1
    resources:
      requests: {cpu: "1", memory: 1Gi}
---
apiVersion: v1
kind: Pod
metadata:
  name: fn
  namespace: cap
spec:
  nodeName: worker-1
  containers:
  - name: c
    image: example.com/fn:1
    resources:
      requests: {cpu: "2", memory: 2Gi}
`); err != nil {
		t.Fatal(err)
	}
	type want struct{ alloc, platform, total nodes.Resources }
	check := func(label string, dedicated bool, counted string, w want) nodes.CapacityReport {
		t.Helper()
		cp := wkGetCapacity(t, e, tok, r.ID)
		var got []string
		for _, n := range cp.Nodes {
			if n.Counted {
				got = append(got, n.Name)
			}
		}
		if cp.Dedicated != dedicated || strings.Join(got, ",") != counted || cp.Allocatable != w.alloc || cp.Platform != w.platform || cp.Total != w.total {
			t.Fatalf("%s: dedicated %v, counted %v, allocatable %+v, platform %+v, total %+v; want %v %s %+v",
				label, cp.Dedicated, got, cp.Allocatable, cp.Platform, cp.Total, dedicated, counted, w)
		}
		return cp
	}
	// Without dedicated workers: worker-1 and worker-2 (cp-1 is tainted).
	cp := check("every schedulable node", false, "worker-1,worker-2",
		want{nodes.Resources{CPUm: 16000, MemoryMi: 32768}, nodes.Resources{CPUm: 1500, MemoryMi: 1536}, nodes.Resources{CPUm: 14500, MemoryMi: 31232}})
	if cp.CPUOvercommit != 3 || cp.MemoryOvercommit != 1.5 || cp.FaaS.CPU.Gross != 43500 || cp.FaaS.Memory.Gross != 46848 || cp.AlwaysOn.CPU.Budget != 14500 {
		t.Fatalf("default budgets: %+v", cp.Budgets)
	}

	// Dedicated workers: the selection reaches the labels and taints, and only the
	// selected nodes count.
	put := func(nodes any) {
		t.Helper()
		id, _ := wkStart(t, e, tok, "PUT", "/api/knative-regions/"+r.ID+"/workers", map[string]any{"nodes": nodes})
		mustSucceed(t, e.WaitJob(id, time.Minute))
	}
	put([]string{"worker-2"})
	if l, tt := wkDedicated(t, c, "worker-2"); !l || !tt {
		t.Fatalf("worker-2 label %v taint %v", l, tt)
	}
	if l, tt := wkDedicated(t, c, "worker-1"); l || tt {
		t.Fatalf("worker-1 label %v taint %v", l, tt)
	}
	check("worker-2 dedicated", true, "worker-2",
		want{nodes.Resources{CPUm: 8000, MemoryMi: 16384}, nodes.Resources{CPUm: 1000, MemoryMi: 1024}, nodes.Resources{CPUm: 7000, MemoryMi: 15360}})
	put([]string{"worker-1"})
	if l, tt := wkDedicated(t, c, "worker-2"); l || tt {
		t.Fatalf("deselected worker-2 keeps label %v taint %v", l, tt)
	}
	if l, tt := wkDedicated(t, c, "worker-1"); !l || !tt {
		t.Fatalf("worker-1 label %v taint %v", l, tt)
	}
	check("worker-1 dedicated", true, "worker-1",
		want{nodes.Resources{CPUm: 8000, MemoryMi: 16384}, nodes.Resources{CPUm: 500, MemoryMi: 512}, nodes.Resources{CPUm: 7500, MemoryMi: 15872}})
	if r, _ = e.Store.RegionByID(ctx, r.ID); strings.Join(r.Nodes, ",") != "worker-1" {
		t.Fatalf("region nodes %v", r.Nodes)
	}
	if v := wkGetNodes(t, e, tok, r.ID).node(t, "worker-1"); !v.Dedicated || !v.DedicatedApplied {
		t.Fatalf("worker-1 view: dedicated %v applied %v", v.Dedicated, v.DedicatedApplied)
	}
	var bad struct {
		Fields map[string]string
	}
	if st := e.JSON("PUT", "/api/knative-regions/"+r.ID+"/workers", tok, map[string]any{"nodes": []string{"worker-1", "nope"}}, &bad); st != 422 || !strings.Contains(bad.Fields["nodes"], `no node "nope"`) {
		t.Fatalf("unknown node: %d %+v", st, bad)
	}
	if st := e.JSON("PUT", "/api/knative-regions/"+r.ID+"/workers", tok, map[string]any{}, &bad); st != 422 || bad.Fields["nodes"] == "" {
		t.Fatalf("no nodes key: %d %+v", st, bad)
	}

	// Overcommit factors: 1-10.
	for _, body := range []map[string]any{{"faas_cpu_overcommit": 11}, {"faas_memory_overcommit": 0.5}, {}} {
		if st := e.JSON("PUT", "/api/knative-regions/"+r.ID+"/overcommit", tok, body, &bad); st != 422 || len(bad.Fields) == 0 {
			t.Fatalf("overcommit %v: %d %+v", body, st, bad)
		}
	}
	if st := e.JSON("PUT", "/api/knative-regions/"+r.ID+"/overcommit", tok, map[string]any{"faas_cpu_overcommit": 2}, nil); st != 200 {
		t.Fatalf("overcommit: %d", st)
	}

	// Admission: capacity 7500m / 15872Mi; an always-on project reserves 2000m / 2048Mi,
	// a FaaS project 10000m / 4096Mi; stopped and never-deployed projects count for nothing.
	for _, p := range []struct {
		id       string
		cpu, mem int
		alwaysOn bool
		state    string
	}{{"p-ao", 2000, 2048, true, "running"}, {"p-faas", 10000, 4096, false, "running"}, {"p-stopped", 50000, 50000, false, "stopped"}, {"p-new", 50000, 50000, true, "none"}} {
		if _, err := e.Store.DB.ExecContext(ctx, `INSERT INTO projects (id, name, slug, region_id, cpu_m, memory_mi, always_on, state)
			VALUES ($1, $1, $1, $2, $3, $4, $5, $6)`, p.id, r.ID, p.cpu, p.mem, p.alwaysOn, p.state); err != nil {
			t.Fatal(err)
		}
	}
	if r, _ = e.Store.RegionByID(ctx, r.ID); r.FaaSCPUOvercommit != 2 || r.FaaSMemoryOvercommit != 1.5 {
		t.Fatalf("factors %v %v", r.FaaSCPUOvercommit, r.FaaSMemoryOvercommit)
	}
	// FaaS CPU: 7500 × 2 − 2000 = 13000m, 10000m used. FaaS memory: 15872 × 1.5 − 2048 = 21760Mi.
	cp = wkGetCapacity(t, e, tok, r.ID)
	if w := (nodes.BudgetLine{Gross: 15000, Reserved: 2000, Budget: 13000, Used: 10000, Free: 3000}); cp.FaaS.CPU != w {
		t.Fatalf("FaaS CPU %+v, want %+v", cp.FaaS.CPU, w)
	}
	if w := (nodes.BudgetLine{Gross: 23808, Reserved: 2048, Budget: 21760, Used: 4096, Free: 17664}); cp.FaaS.Memory != w {
		t.Fatalf("FaaS memory %+v, want %+v", cp.FaaS.Memory, w)
	}
	if w := (nodes.BudgetLine{Gross: 8000, Reserved: 500, Budget: 7500, Used: 2000, Free: 5500}); cp.AlwaysOn.CPU != w || cp.AlwaysOn.Projects != 1 || cp.FaaS.Projects != 1 {
		t.Fatalf("always-on CPU %+v, want %+v", cp.AlwaysOn.CPU, w)
	}
	admit := []struct {
		name string
		req  nodes.AdmitRequest
		want string
	}{
		{"oversized FaaS deploy", nodes.AdmitRequest{ProjectID: "p-next", CPUm: 4000, MemoryMi: 256},
			"CPU: this deploy asks 4000m; the FaaS budget is 13000m, 10000m used: 3000m free"},
		{"FaaS deploy that fits", nodes.AdmitRequest{ProjectID: "p-next", CPUm: 3000, MemoryMi: 256}, ""},
		{"a redeploy does not count itself", nodes.AdmitRequest{ProjectID: "p-faas", CPUm: 13000, MemoryMi: 4096}, ""},
		{"oversized always-on deploy", nodes.AdmitRequest{ProjectID: "p-next", CPUm: 6000, MemoryMi: 20000, AlwaysOn: true},
			"CPU: this deploy asks 6000m; the always-on budget is 7500m, 2000m used: 5500m free; memory: this deploy asks 20000Mi; the always-on budget is 15872Mi, 2048Mi used: 13824Mi free"},
	}
	for _, tc := range admit {
		err := e.Kube.Nodes.Admit(ctx, r, tc.req)
		var ae *nodes.AdmissionError
		switch {
		case tc.want == "" && err != nil:
			t.Fatalf("%s: refused: %v", tc.name, err)
		case tc.want != "" && !errors.As(err, &ae):
			t.Fatalf("%s: %v, want an AdmissionError", tc.name, err)
		case tc.want != "" && err.Error() != tc.want:
			t.Fatalf("%s:\n got %q\nwant %q", tc.name, err.Error(), tc.want)
		}
	}

	// The Workers tab: an owner gets its forms, a viewer none; a bad factor comes back
	// with its error on the tab.
	_, viewer := e.User("viewer")
	for who, token := range map[string]string{"owner": tok, "viewer": viewer} {
		st, body := e.Raw("GET", "/regions/"+r.ID+"?tab=workers", token, "")
		if st != 200 || !strings.Contains(body, `data-testid="workers-tab"`) || !strings.Contains(body, `data-node="worker-2"`) ||
			!strings.Contains(body, `data-budget="FaaS"`) || !strings.Contains(body, "Ubuntu 24.04.2 LTS") {
			t.Fatalf("workers tab as %s: %d", who, st)
		}
		forms := strings.Count(body, `method="post"`) - 1 // the logout form
		if who == "viewer" && forms > 0 {
			t.Fatalf("the workers tab offers a viewer %d forms", forms)
		}
		if who == "owner" && (forms < 5 || !strings.Contains(body, `data-testid="node-action-drain"`) || !strings.Contains(body, "data-confirm=")) {
			t.Fatalf("the workers tab offers an owner %d forms", forms)
		}
	}
	if st, _ := e.Raw("GET", "/regions/"+r.ID+"/tabs/workers", tok, ""); st != 200 {
		t.Fatalf("tab fragment: %d", st)
	}
	b := e.NewBrowser()
	b.Login(owner.Email, "password-of-owner")
	b.Get("/regions/" + r.ID + "?tab=workers")
	resp, body := b.PostForm("/regions/"+r.ID+"/overcommit", url.Values{"faas_cpu_overcommit": {"12"}, "faas_memory_overcommit": {"2"}}, true)
	if resp.StatusCode != 422 || !strings.Contains(body, `data-testid="error-faas_cpu_overcommit"`) {
		t.Fatalf("bad factor form: %d", resp.StatusCode)
	}
	if resp, _ := b.PostForm("/regions/"+r.ID+"/overcommit", url.Values{"faas_cpu_overcommit": {"4"}, "faas_memory_overcommit": {"2"}}, true); resp.StatusCode != 303 {
		t.Fatalf("factor form: %d", resp.StatusCode)
	}
	if resp, _ := b.PostForm("/regions/"+r.ID+"/nodes/worker-1/undedicate", url.Values{}, true); resp.StatusCode != 303 {
		t.Fatalf("undedicate form: %d", resp.StatusCode)
	}
	j, err := e.Store.LatestJobOf(ctx, r.ID, []string{nodes.KindApplyWorkers})
	if err != nil {
		t.Fatal(err)
	}
	mustSucceed(t, e.WaitJob(j.ID, time.Minute))
	if l, tt := wkDedicated(t, c, "worker-1"); l || tt {
		t.Fatalf("worker-1 left the workers but keeps label %v taint %v", l, tt)
	}
	r, _ = e.Store.RegionByID(ctx, r.ID)
	if len(r.Nodes) != 0 || r.FaaSCPUOvercommit != 4 || r.FaaSMemoryOvercommit != 2 {
		t.Fatalf("region nodes %v, factors %v %v", r.Nodes, r.FaaSCPUOvercommit, r.FaaSMemoryOvercommit)
	}
	check("no dedicated workers again", false, "worker-1,worker-2",
		want{nodes.Resources{CPUm: 16000, MemoryMi: 32768}, nodes.Resources{CPUm: 1500, MemoryMi: 1536}, nodes.Resources{CPUm: 14500, MemoryMi: 31232}})
}
