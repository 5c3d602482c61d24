package apitest

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"runr.dev/console/config"
	"runr.dev/console/ops/isolation"
	"runr.dev/console/store"
	"runr.dev/console/testcluster"
	"runr.dev/console/web/webtest"
)

// sandboxNodes are a control plane and three workers: worker-1 has /dev/kvm, worker-2
// has none, worker-3 has /dev/kvm but runs Docker (no CRI Kata can use).
func sandboxNodes() []testcluster.NodeSpec {
	nodes := testcluster.DefaultNodes()
	nodes[1].KVM = true
	return append(nodes, testcluster.NodeSpec{Name: "worker-3", CPU: "8", Memory: "16Gi", Worker: true, KVM: true,
		ContainerRuntime: "docker://24.0.7"})
}

// sandboxState is GET /api/knative-regions/{id}/sandbox.
type sandboxState struct {
	Runtimes       map[string]store.SandboxRuntime `json:"runtimes"`
	RuntimeClasses map[string]string               `json:"runtime_classes"`
	Nodes          []isolation.SandboxNode         `json:"nodes"`
}

func (s sandboxState) node(t *testing.T, name string) isolation.SandboxNode {
	t.Helper()
	for _, n := range s.Nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("node %s missing from %+v", name, s.Nodes)
	return isolation.SandboxNode{}
}

func getSandbox(t *testing.T, e *webtest.Env, tok, id string) sandboxState {
	t.Helper()
	var s sandboxState
	if st := e.JSON("GET", "/api/knative-regions/"+id+"/sandbox", tok, nil, &s); st != 200 {
		t.Fatalf("GET sandbox: %d", st)
	}
	return s
}

// labelled lists the nodes of a cluster that carry a label with a value.
func labelled(t *testing.T, c *testcluster.Cluster, label, value string) []string {
	t.Helper()
	nodes, err := c.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range nodes.Items {
		if v, ok := n.Labels[label]; ok && v == value {
			out = append(out, n.Name)
		}
	}
	slices.Sort(out)
	return out
}

func runtimeClassExists(t *testing.T, c *testcluster.Cluster, name string) bool {
	t.Helper()
	_, err := c.Client.NodeV1().RuntimeClasses().Get(context.Background(), name, metav1.GetOptions{})
	return err == nil
}

// sandboxRegion is a region with Serving ready on a cluster of sandboxNodes.
func sandboxRegion(t *testing.T, name string) (*testcluster.Cluster, *webtest.Env, string, *store.Region) {
	return readyRegionOn(t, name, testcluster.Options{Nodes: sandboxNodes()})
}

func TestSandboxRuntimesInstallMapUseRemove(t *testing.T) {
	c, e, tok, r := sandboxRegion(t, "iso")
	ctx := context.Background()

	// Before any probe the nodes say what they run and that /dev/kvm is not known yet.
	s := getSandbox(t, e, tok, r.ID)
	if n := s.node(t, "worker-3"); n.KataEligible || !strings.Contains(n.KataReason, "docker") {
		t.Fatalf("a Docker node is not eligible for Kata, with the reason: %+v", n)
	}
	if n := s.node(t, "worker-1"); n.KVM != "" || n.KataEligible || n.Runtime != "containerd" {
		t.Fatalf("not probed yet: %+v", n)
	}
	for _, rt := range []string{"kata", "gvisor", "wasm"} {
		if s.Runtimes[rt].Status != store.ComponentNotInstalled {
			t.Fatalf("%s before its install: %+v", rt, s.Runtimes[rt])
		}
	}

	// Refusals: no hypervisor, an unknown one, an unknown runtime.
	for _, body := range []map[string]any{{"runtime": "kata"}, {"runtime": "kata", "hypervisors": []string{"vmware"}}, {"runtime": "lxc"}} {
		var ans struct{ Fields map[string]string }
		if st := e.JSON("POST", "/api/knative-regions/"+r.ID+"/install-sandbox", tok, body, &ans); st != 422 || len(ans.Fields) == 0 {
			t.Fatalf("install %v: %d %+v", body, st, ans)
		}
	}

	// Kata: the probe finds /dev/kvm on worker-1 and worker-3; kata-deploy goes on
	// worker-1 only (worker-2 has no /dev/kvm, worker-3 runs Docker).
	mustSucceed(t, action(t, e, tok, r.ID, "install-sandbox", map[string]any{"runtime": "kata", "hypervisors": []string{"qemu", "clh"}}))
	s = getSandbox(t, e, tok, r.ID)
	if n := s.node(t, "worker-2"); n.KVM != "false" || n.KataEligible || n.KataReason != "no /dev/kvm on this node" {
		t.Fatalf("worker-2 without /dev/kvm: %+v", n)
	}
	if n := s.node(t, "worker-3"); n.KVM != "true" || n.KataEligible {
		t.Fatalf("worker-3 with Docker: %+v", n)
	}
	if got := labelled(t, c, isolation.KataRuntimeLabel, "true"); !slices.Equal(got, []string{"worker-1"}) {
		t.Fatalf("Kata installed on %v, want worker-1 only", got)
	}
	kata := s.Runtimes["kata"]
	if !kata.Ready() || !slices.Equal(kata.Classes, []string{"kata-clh", "kata-qemu"}) || !slices.Equal(kata.Nodes, []string{"worker-1"}) {
		t.Fatalf("Kata recorded: %+v", kata)
	}
	for _, rc := range kata.Classes {
		if !runtimeClassExists(t, c, rc) {
			t.Fatalf("RuntimeClass %s must exist", rc)
		}
	}

	// gVisor on every node with containerd (not the Docker one).
	mustSucceed(t, action(t, e, tok, r.ID, "install-sandbox", map[string]any{"runtime": "gvisor"}))
	if got := labelled(t, c, isolation.GVisorLabel, "true"); !slices.Equal(got, []string{"cp-1", "worker-1", "worker-2"}) {
		t.Fatalf("runsc registered on %v", got)
	}
	if !runtimeClassExists(t, c, isolation.GVisorClass) {
		t.Fatal("RuntimeClass gvisor must exist")
	}

	// WebAssembly on the selected node only.
	mustSucceed(t, action(t, e, tok, r.ID, "wasm", map[string]any{"nodes": []string{"worker-2"}}))
	if got := labelled(t, c, isolation.WasmLabel, "true"); !slices.Equal(got, []string{"worker-2"}) {
		t.Fatalf("WebAssembly nodes %v", got)
	}
	for _, sh := range isolation.WasmShims {
		if got := labelled(t, c, sh.Name, "provisioned"); !slices.Equal(got, []string{"worker-2"}) {
			t.Fatalf("shim %s provisioned on %v", sh.Name, got)
		}
		if !runtimeClassExists(t, c, sh.RuntimeClass) {
			t.Fatalf("RuntimeClass %s must exist", sh.RuntimeClass)
		}
	}
	s = getSandbox(t, e, tok, r.ID)
	if !slices.Contains(s.node(t, "worker-2").Installed, "wasm") || !slices.Contains(s.node(t, "worker-1").Installed, "kata") {
		t.Fatalf("installed per node: %+v", s.Nodes)
	}

	// Mapping: a class that is not installed is refused and changes nothing.
	var bad struct{ Fields map[string]string }
	if st := e.JSON("PUT", "/api/knative-regions/"+r.ID+"/runtime-classes", tok, map[string]string{"functions": "kata-fc", "jobs": "gvisor"}, &bad); st != 422 || bad.Fields["functions"] == "" {
		t.Fatalf("an uninstalled class: %d %+v", st, bad)
	}
	if rr, _ := e.Store.RegionByID(ctx, r.ID); rr.Isolation.V.Class(store.WorkloadJobs) != store.RuncClass {
		t.Fatal("a refused mapping must change nothing")
	}
	if st := e.JSON("PUT", "/api/knative-regions/"+r.ID+"/runtime-classes", tok, map[string]string{"functions": "kata-qemu", "services": "gvisor", "builds": "gvisor"}, nil); st != 200 {
		t.Fatalf("mapping: %d", st)
	}

	// A function deploys with Kata's class; an always-on service with gVisor's.
	fn := createProject(t, e, tok, r.ID, "fn", true)
	svc := createProject(t, e, tok, r.ID, "svc", false)
	if st := e.JSON("PUT", "/api/projects/"+svc, tok, map[string]any{"always_on": true}, nil); st != 200 {
		t.Fatalf("always on: %d", st)
	}
	projectAction(t, e, tok, svc, "deploy")
	for slug, want := range map[string]string{"fn": "kata-qemu", "svc": "gvisor"} {
		ks, err := c.DynamicGet(ctx, ksvcGVR, "iso", slug)
		if err != nil {
			t.Fatal(err)
		}
		if got, _, _ := unstructured.NestedString(ks.Object, "spec", "template", "spec", "runtimeClassName"); got != want {
			t.Fatalf("%s runs with runtimeClassName %q, want %q", slug, got, want)
		}
	}
	ksv, err := c.DynamicGet(ctx, ksGVR, "knative-serving", "knative-serving")
	if err != nil {
		t.Fatal(err)
	}
	if f, _, _ := unstructured.NestedString(ksv.Object, "spec", "config", "features", "kubernetes.podspec-runtimeclassname"); f != "enabled" {
		t.Fatal("Knative must allow runtimeClassName")
	}

	// Removal is refused while a pod runs with the runtime, naming it; nothing changes.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "fn-00001-deployment-abc", Namespace: "iso"},
		Spec: corev1.PodSpec{RuntimeClassName: ptrTo("kata-qemu"), NodeName: "worker-1", Containers: []corev1.Container{{Name: "user-container", Image: "ghcr.io/acme/fn:1"}}}}
	if _, err := c.Client.CoreV1().Pods("iso").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var refused struct{ Error string }
	if st := e.JSON("POST", "/api/knative-regions/"+r.ID+"/uninstall-sandbox", tok, map[string]string{"runtime": "kata"}, &refused); st != 422 || !strings.Contains(refused.Error, "iso/fn-00001-deployment-abc") {
		t.Fatalf("removal while used: %d %q", st, refused.Error)
	}
	if got := labelled(t, c, isolation.KataRuntimeLabel, "true"); len(got) != 1 {
		t.Fatal("a refused removal must leave Kata installed")
	}
	if rr, _ := e.Store.RegionByID(ctx, r.ID); !rr.Isolation.V.Kata.Ready() || rr.Isolation.V.Class(store.WorkloadFunctions) != "kata-qemu" {
		t.Fatal("a refused removal must change nothing")
	}

	// Once the pod is gone, Kata is removed (kata-deploy's cleanup takes its label off)
	// and functions run with runc again.
	if err := c.Client.CoreV1().Pods("iso").Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptrTo(int64(0))}); err != nil {
		t.Fatal(err)
	}
	wkEventually(t, time.Minute, "the pod to be gone", func() bool {
		_, err := c.Client.CoreV1().Pods("iso").Get(ctx, pod.Name, metav1.GetOptions{})
		return err != nil
	})
	// kata-deploy's own cleanup takes the label off: the DaemonSet goes before helm
	// uninstall, whose post-delete Job deletes the pods' RBAC at once (issue 31, defect 3).
	removal := action(t, e, tok, r.ID, "uninstall-sandbox", map[string]string{"runtime": "kata"})
	mustSucceed(t, removal)
	if got := labelled(t, c, isolation.KataRuntimeLabel, "true"); len(got) != 0 {
		t.Fatalf("Kata still on %v", got)
	}
	if log := wkLog(t, e, removal.ID); strings.Contains(log, "the console removes it") {
		t.Fatalf("kata-deploy's cleanup should have taken the label off itself:\n%s", log)
	}
	if got := c.KataShims("worker-1"); got != nil {
		t.Fatalf("Kata's shims left on worker-1: %v", got)
	}
	if _, err := c.Client.CoreV1().ServiceAccounts(isolation.SandboxNamespace).Get(ctx, "kata-deploy-sa", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the RBAC helm uninstall kept must go with its post-delete Job: %v", err)
	}
	rr, _ := e.Store.RegionByID(ctx, r.ID)
	if rr.Isolation.V.Kata.Status != store.ComponentNotInstalled || rr.Isolation.V.Class(store.WorkloadFunctions) != store.RuncClass ||
		rr.Isolation.V.Class(store.WorkloadServices) != isolation.GVisorClass {
		t.Fatalf("after Kata's removal: %+v", rr.Isolation.V)
	}

	// Admission refuses a kind mapped to a runtime the region does not have.
	if err := e.Store.SetWorkloadClasses(ctx, r.ID, map[string]string{"functions": "kata-qemu"}); err != nil {
		t.Fatal(err)
	}
	var adm struct{ Error string }
	if st := e.JSON("POST", "/api/projects/"+fn+"/deploy", tok, nil, &adm); st != 422 || !strings.Contains(adm.Error, "kata-qemu") {
		t.Fatalf("deploy with an uninstalled class: %d %q", st, adm.Error)
	}
	if err := e.Store.SetWorkloadClasses(ctx, r.ID, map[string]string{}); err != nil {
		t.Fatal(err)
	}

	// gVisor and WebAssembly come off too (DELETE …/wasm for WebAssembly).
	mustSucceed(t, action(t, e, tok, r.ID, "uninstall-sandbox", map[string]string{"runtime": "gvisor"}))
	var wasmDel struct {
		JobID string `json:"job_id"`
	}
	if st := e.JSON("DELETE", "/api/knative-regions/"+r.ID+"/wasm", tok, nil, &wasmDel); st != 202 {
		t.Fatalf("DELETE wasm: %d", st)
	}
	mustSucceed(t, e.WaitJob(wasmDel.JobID, 3*time.Minute))
	if runtimeClassExists(t, c, isolation.GVisorClass) || len(labelled(t, c, isolation.WasmLabel, "true")) != 0 {
		t.Fatal("gVisor's RuntimeClass and the WebAssembly labels must be gone")
	}
	for _, sh := range isolation.WasmShims {
		if runtimeClassExists(t, c, sh.RuntimeClass) {
			t.Fatalf("RuntimeClass %s must be gone", sh.RuntimeClass)
		}
	}
	if st := e.JSON("POST", "/api/knative-regions/"+r.ID+"/uninstall-sandbox", tok, map[string]string{"runtime": "gvisor"}, nil); st != 422 {
		t.Fatalf("removing what is not installed: %d", st)
	}
}

func ptrTo[T any](v T) *T { return &v }

// kataEnv returns the env of kata-deploy's DaemonSet container kube-kata.
func kataEnv(t *testing.T, c *testcluster.Cluster) map[string]string {
	t.Helper()
	ds, err := c.Client.AppsV1().DaemonSets(isolation.SandboxNamespace).Get(context.Background(), "kata-deploy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range ds.Spec.Template.Spec.Containers[0].Env {
		out[e.Name] = e.Value
	}
	return out
}

// TestKataArchitecturesAndReinstall: on arm64 nodes Kata installs the picks that run
// there, never kata-deploy's built-in list (a pick set without one leaves arm64 nodes
// out); a re-install that would delete a RuntimeClass still mapped or used is refused and
// changes nothing; a removal whose node cleanup cannot finish takes the label off itself,
// saying so (issue 31, defects 5, 4 and 3).
func TestKataArchitecturesAndReinstall(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: []testcluster.NodeSpec{testcluster.DefaultNodes()[0],
		{Name: "worker-1", CPU: "8", Memory: "16Gi", Worker: true, KVM: true},
		{Name: "arm-1", CPU: "8", Memory: "16Gi", Worker: true, KVM: true, Arch: "arm64"}}})
	e := console(t, func(cfg *config.Config) { cfg.InstallTimeout = 30 * time.Second })
	_, tok := e.User("owner")
	ctx := context.Background()
	r := newRegion(t, e, tok, c, "arch", nil)

	// Firecracker and Dragonball run on amd64 only: arm-1 is left out, not given
	// kata-deploy's nine aarch64 shims.
	mustSucceed(t, action(t, e, tok, r.ID, "install-sandbox", map[string]any{"runtime": "kata", "hypervisors": []string{"fc", "dragonball"}}))
	if got := labelled(t, c, isolation.KataRuntimeLabel, "true"); !slices.Equal(got, []string{"worker-1"}) {
		t.Fatalf("Kata on %v, want worker-1 only", got)
	}
	if got := c.KataShims("worker-1"); !slices.Equal(got, []string{"dragonball", "fc"}) {
		t.Fatalf("shims on worker-1: %v", got)
	}
	if got := c.KataShims("arm-1"); got != nil {
		t.Fatalf("shims on arm-1, which none of the picks runs on: %v", got)
	}
	s := getSandbox(t, e, tok, r.ID)
	if n := s.node(t, "arm-1"); n.Arch != "arm64" || !slices.Equal(n.KataHypervisors, []string{"qemu"}) {
		t.Fatalf("arm-1 as the API shows it: %+v", n)
	}
	if kata := s.Runtimes["kata"]; !slices.Equal(kata.Nodes, []string{"worker-1"}) || !slices.Equal(kata.Classes, []string{"kata-dragonball", "kata-fc"}) {
		t.Fatalf("Kata recorded: %+v", kata)
	}
	if _, page := e.Raw("GET", "/regions/"+r.ID+"?tab=isolation", tok, ""); !strings.Contains(page, `data-testid="node-arch">arm64<`) ||
		!strings.Contains(page, "(qemu only on arm64)") || strings.Contains(page, "no node here can run it") {
		t.Fatal("the Isolation tab shows each node's architecture and what Kata can run on it")
	}
	fc, err := c.Client.NodeV1().RuntimeClasses().Get(ctx, "kata-fc", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fc.Scheduling == nil || fc.Scheduling.NodeSelector[isolation.ArchLabel] != "amd64" {
		t.Fatalf("kata-fc must schedule on amd64 nodes only: %+v", fc.Scheduling)
	}

	// QEMU and Firecracker: arm-1 gets QEMU, worker-1 both (kata-dragonball goes, unused).
	mustSucceed(t, action(t, e, tok, r.ID, "install-sandbox", map[string]any{"runtime": "kata", "hypervisors": []string{"qemu", "fc"}}))
	if got := labelled(t, c, isolation.KataRuntimeLabel, "true"); !slices.Equal(got, []string{"arm-1", "worker-1"}) {
		t.Fatalf("Kata on %v", got)
	}
	// worker-1 kept its label through the rolling update (kata-deploy leaves it while its
	// DaemonSet exists), so the install's wait passed at once: the new pod installs its
	// shims on its own time (the simulation within a period, 500 ms). kata-deploy gives no
	// sign of which configuration a node runs; the README says so.
	for node, want := range map[string][]string{"worker-1": {"fc", "qemu"}, "arm-1": {"qemu"}} {
		deadline := time.Now().Add(10 * time.Second)
		for got := c.KataShims(node); !slices.Equal(got, want); got = c.KataShims(node) {
			if time.Now().After(deadline) {
				t.Fatalf("shims on %s: %v, want %v", node, got, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	// Functions mapped to kata-qemu and a pod running with it: a re-install without QEMU
	// is refused, naming both, and nothing changes.
	if st := e.JSON("PUT", "/api/knative-regions/"+r.ID+"/runtime-classes", tok, map[string]string{"functions": "kata-qemu"}, nil); st != 200 {
		t.Fatalf("mapping: %d", st)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sbx-1", Namespace: "default"},
		Spec: corev1.PodSpec{RuntimeClassName: ptrTo("kata-qemu"), NodeName: "worker-1", Containers: []corev1.Container{{Name: "app", Image: "ghcr.io/acme/app:1"}}}}
	if _, err := c.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before, err := e.Store.LatestJobOf(ctx, r.ID, isolation.SandboxKinds)
	if err != nil {
		t.Fatal(err)
	}
	envBefore := kataEnv(t, c)
	var refused struct{ Error string }
	st := e.JSON("POST", "/api/knative-regions/"+r.ID+"/install-sandbox", tok, map[string]any{"runtime": "kata", "hypervisors": []string{"fc", "dragonball"}}, &refused)
	if st != 422 || !strings.Contains(refused.Error, "kata-qemu") || !strings.Contains(refused.Error, "functions") || !strings.Contains(refused.Error, "default/sbx-1") {
		t.Fatalf("a re-install dropping kata-qemu in use: %d %q", st, refused.Error)
	}
	after, err := e.Store.LatestJobOf(ctx, r.ID, isolation.SandboxKinds)
	if err != nil || after.ID != before.ID {
		t.Fatalf("a refused install must queue no job: %v %+v", err, after)
	}
	rr, _ := e.Store.RegionByID(ctx, r.ID)
	if kata := rr.Isolation.V.Kata; !kata.Ready() || !slices.Equal(kata.Classes, []string{"kata-fc", "kata-qemu"}) || rr.Isolation.V.Class(store.WorkloadFunctions) != "kata-qemu" {
		t.Fatalf("a refused install must change nothing: %+v", rr.Isolation.V)
	}
	if !runtimeClassExists(t, c, "kata-qemu") || !maps.Equal(kataEnv(t, c), envBefore) {
		t.Fatal("a refused install must leave kata-deploy as it was")
	}
	// The mapping back on runc: the pod alone still refuses it.
	if st := e.JSON("PUT", "/api/knative-regions/"+r.ID+"/runtime-classes", tok, map[string]string{"functions": "runc"}, nil); st != 200 {
		t.Fatalf("mapping: %d", st)
	}
	refused.Error = ""
	if st := e.JSON("POST", "/api/knative-regions/"+r.ID+"/install-sandbox", tok, map[string]any{"runtime": "kata", "hypervisors": []string{"fc"}}, &refused); st != 422 ||
		!strings.Contains(refused.Error, "default/sbx-1") || strings.Contains(refused.Error, "functions") {
		t.Fatalf("a re-install dropping kata-qemu a pod runs with: %d %q", st, refused.Error)
	}
	if err := c.Client.CoreV1().Pods("default").Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptrTo(int64(0))}); err != nil {
		t.Fatal(err)
	}
	wkEventually(t, time.Minute, "the pod to be gone", func() bool {
		_, err := c.Client.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		return err != nil
	})

	// The pods' cleanup cannot finish (their ServiceAccount is gone): once the wait ends,
	// the console takes the label off itself and says so.
	if err := c.Client.CoreV1().ServiceAccounts(isolation.SandboxNamespace).Delete(ctx, "kata-deploy-sa", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	removal := action(t, e, tok, r.ID, "uninstall-sandbox", map[string]string{"runtime": "kata"})
	mustSucceed(t, removal)
	if got := labelled(t, c, isolation.KataRuntimeLabel, "true"); len(got) != 0 {
		t.Fatalf("Kata's label still on %v", got)
	}
	if log := wkLog(t, e, removal.ID); !strings.Contains(log, "did not take "+isolation.KataRuntimeLabel+" off arm-1, worker-1; the console removes it") {
		t.Fatalf("the removal must say it took the label off itself:\n%s", log)
	}
}

func TestSandboxSettingsValidation(t *testing.T) {
	e := console(t, nil)
	_, tok := e.User("owner")
	_, member := e.User("member")
	ctx := context.Background()
	c := testcluster.New(t, testcluster.Options{})
	r := newRegion(t, e, tok, c, "sbx", nil)
	// Kata and gVisor recorded as installed (the install itself is tested above).
	e.Store.SetSandboxRuntime(ctx, r.ID, store.RuntimeKata, store.SandboxRuntime{Status: store.ComponentReady, Classes: []string{"kata-qemu"}})
	e.Store.SetSandboxRuntime(ctx, r.ID, store.RuntimeGVisor, store.SandboxRuntime{Status: store.ComponentReady, Classes: []string{"gvisor"}})

	type settings struct {
		Enabled           bool     `json:"enabled"`
		AllowedClasses    []string `json:"allowed_classes"`
		DefaultClass      string   `json:"default_class"`
		AllowRunc         bool     `json:"allow_runc"`
		DefaultTTLSeconds int      `json:"default_ttl_seconds"`
		MaxCPUm           int      `json:"max_cpu_m"`
		Fields            map[string]string
	}
	var got settings
	if st := e.JSON("GET", "/api/sandbox-regions/"+r.ID, tok, nil, &got); st != 200 {
		t.Fatalf("GET: %d", st)
	}
	if !got.Enabled || got.AllowRunc || got.DefaultTTLSeconds != 900 || got.DefaultClass != "kata-qemu" || !slices.Equal(got.AllowedClasses, []string{"kata-qemu", "gvisor"}) {
		t.Fatalf("defaults: %+v", got)
	}

	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"max_cpu_m": 10}, "max_cpu_m"},
		{map[string]any{"max_cpu_m": 4001}, "max_cpu_m"},
		{map[string]any{"max_memory_mb": 63}, "max_memory_mb"},
		{map[string]any{"max_memory_mb": 8193}, "max_memory_mb"},
		{map[string]any{"max_disk_mb": 10241}, "max_disk_mb"},
		{map[string]any{"default_ttl_seconds": 5}, "default_ttl_seconds"},
		{map[string]any{"default_ttl_seconds": 7200, "max_ttl_seconds": 3600}, "default_ttl_seconds"},
		{map[string]any{"allowed_classes": []string{"kata-fc"}}, "allowed_classes"},
		{map[string]any{"allowed_classes": []string{"gvisor"}, "default_class": "kata-qemu"}, "default_class"},
		{map[string]any{"default_class": "runc"}, "default_class"},
	} {
		var ans settings
		if st := e.JSON("PUT", "/api/sandbox-regions/"+r.ID, tok, tc.body, &ans); st != 422 || ans.Fields[tc.field] == "" {
			t.Fatalf("PUT %v: %d %+v, want a 422 on %s", tc.body, st, ans.Fields, tc.field)
		}
	}
	if rr, _ := e.Store.RegionByID(ctx, r.ID); rr.SandboxSettings.V.Set {
		t.Fatal("refused settings must store nothing")
	}
	// Without sandboxes.manage: 403, nothing stored.
	if st := e.JSON("PUT", "/api/sandbox-regions/"+r.ID, member, map[string]any{"enabled": false}, nil); st != 403 {
		t.Fatalf("a member: %d", st)
	}
	if rr, _ := e.Store.RegionByID(ctx, r.ID); rr.SandboxSettings.V.Set {
		t.Fatal("a refused request must store nothing")
	}

	// The Isolation tab is for sandbox.manage: a viewer neither sees it nor opens it.
	_, viewer := e.User("viewer")
	if _, page := e.Raw("GET", "/regions/"+r.ID+"?tab=isolation", viewer, ""); strings.Contains(page, `data-testid="tab-isolation"`) || strings.Contains(page, `data-testid="isolation-tab"`) {
		t.Fatal("a viewer must not see the Isolation tab")
	}
	if _, page := e.Raw("GET", "/regions/"+r.ID+"?tab=isolation", tok, ""); !strings.Contains(page, `data-testid="isolation-tab"`) || !strings.Contains(page, `data-testid="sandbox-settings"`) {
		t.Fatal("the owner sees the Isolation tab with the Sandbox API's settings")
	}

	body := map[string]any{"enabled": false, "allowed_classes": []string{"gvisor"}, "allow_runc": true, "default_class": "runc",
		"default_ttl_seconds": 600, "max_ttl_seconds": 7200, "max_cpu_m": 2000, "max_memory_mb": 2048, "max_disk_mb": 4096}
	if st := e.JSON("PUT", "/api/sandbox-regions/"+r.ID, tok, body, &got); st != 200 {
		t.Fatalf("PUT: %d %+v", st, got.Fields)
	}
	got = settings{}
	e.JSON("GET", "/api/sandbox-regions/"+r.ID, tok, nil, &got)
	if got.Enabled || got.DefaultClass != "runc" || !got.AllowRunc || !slices.Equal(got.AllowedClasses, []string{"gvisor"}) || got.MaxCPUm != 2000 || got.DefaultTTLSeconds != 600 {
		t.Fatalf("stored: %+v", got)
	}
	// Dropping the default class from the allowed ones moves the default to the strongest left.
	if st := e.JSON("PUT", "/api/sandbox-regions/"+r.ID, tok, map[string]any{"allow_runc": false}, &got); st != 200 || got.DefaultClass != "gvisor" {
		t.Fatalf("runc no longer allowed: %d %+v", st, got)
	}
}

func TestMoveCarriesSandboxRuntimes(t *testing.T) {
	a, e, tok, r := sandboxRegion(t, "carry")
	ctx := context.Background()
	mustSucceed(t, action(t, e, tok, r.ID, "install-sandbox", map[string]any{"runtime": "kata", "hypervisors": []string{"qemu"}}))
	mustSucceed(t, action(t, e, tok, r.ID, "install-sandbox", map[string]any{"runtime": "gvisor"}))
	mustSucceed(t, action(t, e, tok, r.ID, "wasm", map[string]any{"nodes": []string{"worker-3", "worker-2"}}))
	if st := e.JSON("PUT", "/api/knative-regions/"+r.ID+"/runtime-classes", tok, map[string]string{"functions": "gvisor"}, nil); st != 200 {
		t.Fatalf("mapping: %d", st)
	}
	createProject(t, e, tok, r.ID, "web", true)
	if got := labelled(t, a, isolation.WasmLabel, "true"); !slices.Equal(got, []string{"worker-2"}) {
		t.Fatalf("WebAssembly goes on the selected nodes with containerd: %v", got)
	}

	// The new cluster: worker-1 has /dev/kvm, worker-2 is not there.
	b := testcluster.New(t, testcluster.Options{Nodes: []testcluster.NodeSpec{testcluster.DefaultNodes()[0],
		{Name: "worker-1", CPU: "8", Memory: "16Gi", Worker: true, KVM: true}, {Name: "worker-5", CPU: "8", Memory: "16Gi", Worker: true}}})
	mustSucceed(t, migrate(t, e, tok, r.ID, b.Kubeconfig(), nil))

	if got := labelled(t, b, isolation.KataRuntimeLabel, "true"); !slices.Equal(got, []string{"worker-1"}) {
		t.Fatalf("Kata on the new cluster: %v", got)
	}
	if got := labelled(t, b, isolation.GVisorLabel, "true"); !slices.Equal(got, []string{"cp-1", "worker-1", "worker-5"}) {
		t.Fatalf("gVisor on the new cluster: %v", got)
	}
	// None of the WebAssembly nodes exists there: every node with containerd gets it.
	if got := labelled(t, b, isolation.WasmLabel, "true"); !slices.Equal(got, []string{"cp-1", "worker-1", "worker-5"}) {
		t.Fatalf("WebAssembly on the new cluster: %v", got)
	}
	for _, rc := range []string{"kata-qemu", isolation.GVisorClass, isolation.WasmShims[0].RuntimeClass} {
		if !runtimeClassExists(t, b, rc) {
			t.Fatalf("RuntimeClass %s must exist on the new cluster", rc)
		}
	}
	rr, _ := e.Store.RegionByID(ctx, r.ID)
	for _, name := range isolation.SandboxRuntimes {
		if !rr.Isolation.V.Runtime(name).Ready() {
			t.Fatalf("%s after the move: %+v", name, rr.Isolation.V.Runtime(name))
		}
	}
	ks, err := b.DynamicGet(ctx, ksvcGVR, "carry", "web")
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := unstructured.NestedString(ks.Object, "spec", "template", "spec", "runtimeClassName"); got != isolation.GVisorClass {
		t.Fatalf("the moved function runs with %q", got)
	}
}

// TestKataNeedsANodeThatCanRunIt: on a region none of whose nodes can run Kata (Docker
// everywhere), its install is refused with the reason and nothing is queued or changed;
// the Isolation tab disables the button with the same reason.
func TestKataNeedsANodeThatCanRunIt(t *testing.T) {
	nodes := testcluster.DefaultNodes()
	for i := range nodes {
		nodes[i].ContainerRuntime = "docker://24.0.7"
	}
	_, e, tok, r := readyRegionOn(t, "nokata", testcluster.Options{Nodes: nodes})
	ctx := context.Background()
	var refused struct{ Error string }
	if st := e.JSON("POST", "/api/knative-regions/"+r.ID+"/install-sandbox", tok, map[string]any{"runtime": "kata", "hypervisors": []string{"qemu"}}, &refused); st != 422 || refused.Error != isolation.NoKataNode {
		t.Fatalf("Kata with no node to run it: %d %q", st, refused.Error)
	}
	if _, err := e.Store.LatestJobOf(ctx, r.ID, isolation.SandboxKinds); err == nil {
		t.Fatal("a refused install must queue no job")
	}
	if rr, _ := e.Store.RegionByID(ctx, r.ID); rr.Isolation.V.Kata.State() != store.ComponentNotInstalled {
		t.Fatalf("a refused install must change nothing: %+v", rr.Isolation.V.Kata)
	}
	if st, body := e.Raw("GET", "/regions/"+r.ID+"?tab=isolation", tok, ""); st != 200 || !strings.Contains(body, `data-testid="install-kata" disabled`) {
		t.Fatalf("isolation tab: %d, Install Kata disabled: %v", st, strings.Contains(body, `data-testid="install-kata" disabled`))
	}
}

// Two regions on one cluster share one install of a sandbox runtime (its installer and
// RuntimeClasses are the cluster's): the second region's install records the first's
// without touching the cluster, its removal forgets it and leaves the runtime running, and
// the owner's removal is refused while another region shares it; a removed owner hands
// the install over to the region that shared it (issue 34 item 2).
func TestSandboxRuntimeSharedOnOneCluster(t *testing.T) {
	c, e, tok, own := sandboxRegion(t, "own")
	ctx := context.Background()
	mustSucceed(t, action(t, e, tok, own.ID, "install-sandbox", map[string]any{"runtime": "gvisor"}))
	before, err := c.Client.NodeV1().RuntimeClasses().Get(ctx, "gvisor", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	share := newRegion(t, e, tok, c, "share", nil)

	j := action(t, e, tok, share.ID, "install-sandbox", map[string]any{"runtime": "gvisor"})
	mustSucceed(t, j)
	if steps, _ := e.Store.JobSteps(ctx, j.ID); len(steps) != 1 || steps[0].Name != "share" {
		t.Fatalf("the second region's install ran %+v, want the share step only", steps)
	}
	if g := getSandbox(t, e, tok, share.ID).Runtimes["gvisor"]; !g.Ready() || g.SharedWith != "own" || !slices.Equal(g.Classes, []string{"gvisor"}) {
		t.Fatalf("share's gVisor: %+v, want own's, shared", g)
	}
	if after, err := c.Client.NodeV1().RuntimeClasses().Get(ctx, "gvisor", metav1.GetOptions{}); err != nil || after.ResourceVersion != before.ResourceVersion {
		t.Fatalf("sharing changed the cluster's RuntimeClass: %v", err)
	}
	b := e.SignedIn("owner")
	if resp, body := b.Get("/regions/" + share.ID + "?tab=isolation"); resp.StatusCode != 200 ||
		!strings.Contains(between(body, `data-testid="runtime-shared"`, "</p>"), "Shared with region own") {
		t.Fatalf("share's Isolation tab does not say whose gVisor it is: %d", resp.StatusCode)
	}

	var refused struct{ Error string }
	if st := e.JSON("POST", "/api/knative-regions/"+own.ID+"/uninstall-sandbox", tok, map[string]string{"runtime": "gvisor"}, &refused); st != 422 ||
		!strings.Contains(refused.Error, "Region share shares this gVisor") {
		t.Fatalf("the owner's removal while share uses it: %d %+v", st, refused)
	}
	mustSucceed(t, action(t, e, tok, share.ID, "uninstall-sandbox", map[string]string{"runtime": "gvisor"}))
	if g := getSandbox(t, e, tok, share.ID).Runtimes["gvisor"]; g.Status != store.ComponentNotInstalled {
		t.Fatalf("share's gVisor after its removal: %+v", g)
	}
	if !runtimeClassExists(t, c, "gvisor") || !getSandbox(t, e, tok, own.ID).Runtimes["gvisor"].Ready() {
		t.Fatal("share's removal took own's gVisor off the cluster")
	}
	// Shared again, then own goes (its record only): share inherits the install, and its
	// removal takes gVisor off the cluster.
	mustSucceed(t, action(t, e, tok, share.ID, "install-sandbox", map[string]any{"runtime": "gvisor"}))
	if st, body := e.Raw("DELETE", "/api/knative-regions/"+own.ID, tok, ""); st != 204 {
		t.Fatalf("remove own: %d %s", st, body)
	}
	if g := getSandbox(t, e, tok, share.ID).Runtimes["gvisor"]; !g.Ready() || g.SharedWith != "" {
		t.Fatalf("share's gVisor once own is gone: %+v, want its own", g)
	}
	mustSucceed(t, action(t, e, tok, share.ID, "uninstall-sandbox", map[string]string{"runtime": "gvisor"}))
	if runtimeClassExists(t, c, "gvisor") {
		t.Fatal("the heir's removal, once nobody shares, must remove the RuntimeClass")
	}
}
