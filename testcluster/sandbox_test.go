package testcluster_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"runr.dev/console/ops/isolation"
	"runr.dev/console/testcluster"
)

var gvrShim = schema.GroupVersionResource{Group: "runtime.spinkube.dev", Version: "v1alpha1", Resource: "shims"}

// labelled returns the nodes whose label key has value (any value when value is "*"), sorted.
func labelled(ctx context.Context, c *testcluster.Cluster, key, value string) ([]string, error) {
	nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range nodes.Items {
		if v, ok := n.Labels[key]; ok && (value == "*" || v == value) {
			out = append(out, n.Name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// waitLabelled waits until exactly the nodes want carry key=value.
func waitLabelled(t *testing.T, c *testcluster.Cluster, key, value string, want ...string) {
	t.Helper()
	slices.Sort(want)
	eventually(t, fmt.Sprintf("%s=%s on %v", key, value, want), func(ctx context.Context) (bool, string) {
		got, err := labelled(ctx, c, key, value)
		if err != nil {
			return false, err.Error()
		}
		return slices.Equal(got, want), fmt.Sprintf("on %v", got)
	})
}

// setNodeLabel sets (or with value "" removes) a node's label.
func setNodeLabel(t *testing.T, c *testcluster.Cluster, node, key, value string) {
	t.Helper()
	v := fmt.Sprintf("%q", value)
	if value == "" {
		v = "null"
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%s}}}`, key, v)
	if _, err := c.Client.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// agentDaemonSet creates a DaemonSet whose pods carry app.kubernetes.io/name=app, on the
// nodes matching nodeSelector.
func agentDaemonSet(t *testing.T, c *testcluster.Cluster, ns, app string, nodeSelector map[string]string) {
	t.Helper()
	lbl := map[string]string{"app.kubernetes.io/name": app}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: ns},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec: corev1.PodSpec{NodeSelector: nodeSelector,
					Containers: []corev1.Container{{Name: "agent", Image: "ghcr.io/runr/agent:1"}}},
			},
		},
	}
	if _, err := c.Client.AppsV1().DaemonSets(ns).Create(context.Background(), ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestSimulatedSandboxNodes checks what the harness does for the sandbox runtimes' node
// pods: the KVM probe's answer per NodeSpec.KVM, the gVisor installer's label, and
// kata-deploy 3.32.0 installed with the console's values on the eligible nodes only, the
// shims it installs per architecture, and its removal as upstream's post-delete hook
// plays it: helm uninstall alone leaves the label (the hook deletes the pods' RBAC before
// their cleanup needs it), the DaemonSet deleted first does not.
func TestSimulatedSandboxNodes(t *testing.T) {
	if testcluster.KVMLabel != isolation.KVMLabel || testcluster.GVisorLabel != isolation.GVisorLabel {
		t.Fatalf("labels %s, %s; the console reads %s, %s", testcluster.KVMLabel, testcluster.GVisorLabel, isolation.KVMLabel, isolation.GVisorLabel)
	}
	eligible := map[string]string{isolation.KataEligibleLabel: "eligible"}
	nodes := []testcluster.NodeSpec{
		{Name: "cp-1", CPU: "4", Memory: "8Gi", ControlPlane: true, KVM: true,
			Taints: []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}},
		{Name: "kvm-1", CPU: "8", Memory: "16Gi", Worker: true, KVM: true, Labels: eligible},
		{Name: "kvm-2", CPU: "8", Memory: "16Gi", Worker: true, KVM: true, Labels: eligible},
		{Name: "kvm-3", CPU: "8", Memory: "16Gi", Worker: true, KVM: true},
		{Name: "plain-1", CPU: "8", Memory: "16Gi", Worker: true},
		{Name: "arm-1", CPU: "8", Memory: "16Gi", Worker: true, KVM: true, Arch: "arm64", Labels: eligible},
	}
	c := testcluster.New(t, testcluster.Options{Nodes: nodes})
	ctx := context.Background()
	s := serve(t)
	ns := isolation.SandboxNamespace
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The KVM probe answers on the nodes it ran on (not on the tainted control plane).
	agentDaemonSet(t, c, ns, testcluster.KVMProbeApp, nil)
	waitLabelled(t, c, isolation.KVMLabel, "true", "kvm-1", "kvm-2", "kvm-3", "arm-1")
	waitLabelled(t, c, isolation.KVMLabel, "false", "plain-1")

	// gVisor: labelled while its installer runs on the node, unlabelled when it left.
	agentDaemonSet(t, c, ns, testcluster.GVisorInstallerApp, map[string]string{"kubernetes.io/hostname": "plain-1"})
	waitLabelled(t, c, isolation.GVisorLabel, "true", "plain-1")
	if err := c.Client.AppsV1().DaemonSets(ns).Delete(ctx, testcluster.GVisorInstallerApp, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitLabelled(t, c, isolation.GVisorLabel, "*")

	// kata-deploy on the eligible nodes only; its RuntimeClasses send pods there. arm-1 gets
	// the picks that run on arm64 only (SHIMS_AARCH64).
	_, ch := s.chart(t, isolation.ChartKataDeploy.Name, isolation.ChartKataDeploy.Version)
	helmInstall(t, c, ch, isolation.KataRelease, ns, jsonCopy(t, isolation.KataValues([]string{"qemu", "clh"}, "k8s")))
	waitLabelled(t, c, testcluster.KataRuntimeLabel, "true", "kvm-1", "kvm-2", "arm-1")
	for node, want := range map[string][]string{"kvm-1": {"clh", "qemu"}, "arm-1": {"qemu"}, "kvm-3": nil} {
		if got := c.KataShims(node); !slices.Equal(got, want) {
			t.Errorf("shims on %s: %v, want %v", node, got, want)
		}
	}
	if _, err := c.Client.CoreV1().ServiceAccounts(ns).Get(ctx, "kata-deploy-sa", metav1.GetOptions{}); err != nil {
		t.Fatalf("kata-deploy-sa: %v", err)
	}
	for _, h := range []string{"qemu", "clh"} {
		rc, err := c.Client.NodeV1().RuntimeClasses().Get(ctx, isolation.KataRuntimeClass(h), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rc.Handler != isolation.KataRuntimeClass(h) || rc.Scheduling == nil || rc.Scheduling.NodeSelector[testcluster.KataRuntimeLabel] != "true" {
			t.Errorf("RuntimeClass %s: handler %s, scheduling %+v", rc.Name, rc.Handler, rc.Scheduling)
		}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sandboxed", Namespace: "default"},
		Spec: corev1.PodSpec{RuntimeClassName: ptr(isolation.KataRuntimeClass("qemu")), Containers: []corev1.Container{{Name: "app", Image: "ghcr.io/runr/app:1"}}}}
	if _, err := c.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the kata-qemu pod to run on a Kata node", func(ctx context.Context) (bool, string) {
		p, err := c.Client.CoreV1().Pods("default").Get(ctx, "sandboxed", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodRunning && slices.Contains([]string{"kvm-1", "kvm-2", "arm-1"}, p.Spec.NodeName), fmt.Sprintf("%s on %q", p.Status.Phase, p.Spec.NodeName)
	})

	// A node that stops matching loses its pod but keeps the label (its DaemonSet still
	// exists: the pod skips its cleanup).
	setNodeLabel(t, c, "kvm-2", isolation.KataEligibleLabel, "")
	eventually(t, "kata-deploy's pod to leave kvm-2", func(ctx context.Context) (bool, string) {
		pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: testcluster.KataDeployPodLabel})
		if err != nil {
			return false, err.Error()
		}
		var on []string
		for _, p := range pods.Items {
			on = append(on, p.Spec.NodeName)
		}
		return !slices.Contains(on, "kvm-2"), fmt.Sprintf("pods on %v", on)
	})

	// helm uninstall alone: the post-delete Job's `kubectl get pod` is forbidden, counts
	// none, and the kept RBAC goes at once; the pods' cleanup then cannot patch their
	// nodes, and the label stays everywhere.
	keptRBACGone := func(ctx context.Context) (bool, string) {
		_, errSA := c.Client.CoreV1().ServiceAccounts(ns).Get(ctx, "kata-deploy-sa", metav1.GetOptions{})
		_, errCR := c.Client.RbacV1().ClusterRoles().Get(ctx, "kata-deploy-role", metav1.GetOptions{})
		_, errCRB := c.Client.RbacV1().ClusterRoleBindings().Get(ctx, "kata-deploy-rb", metav1.GetOptions{})
		return apierrors.IsNotFound(errSA) && apierrors.IsNotFound(errCR) && apierrors.IsNotFound(errCRB), fmt.Sprintf("%v; %v; %v", errSA, errCR, errCRB)
	}
	helmUninstall(t, c, isolation.KataRelease, ns)
	if _, err := c.Client.NodeV1().RuntimeClasses().Get(ctx, isolation.KataRuntimeClass("qemu"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("RuntimeClass kata-qemu after uninstall: %v", err)
	}
	eventually(t, "the kept RBAC to go", keptRBACGone)
	time.Sleep(5 * time.Second) // longer than a pod's cleanup
	waitLabelled(t, c, testcluster.KataRuntimeLabel, "true", "kvm-1", "kvm-2", "arm-1")

	// The DaemonSet deleted first: its pods clean up with their RBAC still there and take
	// the label off their nodes (kvm-2 has no pod: it keeps its label); then helm
	// uninstall's hook deletes the kept RBAC.
	helmInstall(t, c, ch, isolation.KataRelease, ns, jsonCopy(t, isolation.KataValues([]string{"qemu"}, "k8s")))
	eventually(t, "kata-deploy's pods on kvm-1 and arm-1", func(ctx context.Context) (bool, string) {
		return slices.Equal(c.KataShims("kvm-1"), []string{"qemu"}) && slices.Equal(c.KataShims("arm-1"), []string{"qemu"}),
			fmt.Sprintf("kvm-1 %v, arm-1 %v", c.KataShims("kvm-1"), c.KataShims("arm-1"))
	})
	if err := c.Client.AppsV1().DaemonSets(ns).Delete(ctx, "kata-deploy", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitLabelled(t, c, testcluster.KataRuntimeLabel, "true", "kvm-2")
	if got := c.KataShims("kvm-1"); got != nil {
		t.Errorf("Kata left on kvm-1 after its cleanup: %v", got)
	}
	helmUninstall(t, c, isolation.KataRelease, ns)
	eventually(t, "the kept RBAC to go", keptRBACGone)

	// No shim of the pod runs on arm64 (SHIMS_AARCH64 absent): kata-deploy installs its
	// built-in aarch64 list there.
	helmInstall(t, c, ch, isolation.KataRelease, ns, map[string]any{"shims": map[string]any{"disableAll": true, "fc": map[string]any{"enabled": true}},
		"nodeSelector": map[string]any{"kubernetes.io/hostname": "arm-1"}})
	nine := []string{"clh", "clh-runtime-rs", "dragonball", "fc", "qemu", "qemu-cca", "qemu-coco-dev-runtime-rs", "qemu-nvidia-gpu", "qemu-runtime-rs"}
	eventually(t, "kata-deploy's built-in shims on arm-1", func(ctx context.Context) (bool, string) {
		got := c.KataShims("arm-1")
		return slices.Equal(got, nine), fmt.Sprintf("%v", got)
	})
}

// TestSimulatedRuntimeClassManager installs runtime-class-manager 0.2.0 with the console's
// values and applies the console's Spin Shim: the matching nodes get the shim and the
// RuntimeClass appears; deleting the Shim uninstalls it and takes the RuntimeClass.
func TestSimulatedRuntimeClassManager(t *testing.T) {
	wasm := map[string]string{isolation.WasmLabel: "true"}
	nodes := []testcluster.NodeSpec{
		{Name: "cp-1", CPU: "4", Memory: "8Gi", ControlPlane: true,
			Taints: []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}},
		{Name: "wasm-1", CPU: "8", Memory: "16Gi", Worker: true, Labels: wasm},
		{Name: "wasm-2", CPU: "8", Memory: "16Gi", Worker: true, Labels: wasm},
		{Name: "plain-1", CPU: "8", Memory: "16Gi", Worker: true},
	}
	c := testcluster.New(t, testcluster.Options{Nodes: nodes})
	ctx := context.Background()
	s := serve(t)
	dyn := dynamic.NewForConfigOrDie(c.REST)
	ns := isolation.SandboxNamespace
	_, ch := s.chart(t, isolation.ChartRuntimeClassManager.Name, isolation.ChartRuntimeClassManager.Version)
	helmInstall(t, c, ch, isolation.WasmRelease, ns, jsonCopy(t, isolation.WasmValues()))

	sh := isolation.WasmShims[0]
	obj := &unstructured.Unstructured{Object: jsonCopy(t, isolation.ShimObject(sh))}
	// Strict: the API server refuses a field the CRD does not know instead of dropping it.
	if _, err := dyn.Resource(gvrShim).Create(ctx, obj, metav1.CreateOptions{FieldValidation: "Strict"}); err != nil {
		t.Fatalf("create Shim %s: %v", sh.Name, err)
	}
	waitLabelled(t, c, sh.Name, "provisioned", "wasm-1", "wasm-2")
	shim, err := dyn.Resource(gvrShim).Get(ctx, sh.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(shim.GetFinalizers(), "rcm.spinkube.dev/finalizer") {
		t.Errorf("Shim finalizers %v", shim.GetFinalizers())
	}
	rc, err := c.Client.NodeV1().RuntimeClasses().Get(ctx, sh.RuntimeClass, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rc.Handler != sh.Handler || rc.Scheduling == nil || !maps.Equal(rc.Scheduling.NodeSelector, wasm) ||
		len(rc.OwnerReferences) != 1 || rc.OwnerReferences[0].UID != shim.GetUID() {
		t.Errorf("RuntimeClass %s: handler %s, scheduling %+v, owners %+v", rc.Name, rc.Handler, rc.Scheduling, rc.OwnerReferences)
	}
	for _, n := range []string{"wasm-1", "wasm-2"} {
		j, err := c.Client.BatchV1().Jobs(ns).Get(ctx, n+"-"+sh.Name+"-install", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := hasLabels("Job "+j.Name, j.Labels, map[string]string{"spinkube.dev/job": "true", "spinkube.dev/shimName": sh.Name, "spinkube.dev/operation": "install"}); err != nil {
			t.Error(err)
		}
	}
	shimStatus := func(want int64) func(ctx context.Context) (bool, string) {
		return func(ctx context.Context) (bool, string) {
			o, err := dyn.Resource(gvrShim).Get(ctx, sh.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			nodes, _, _ := unstructured.NestedInt64(o.Object, "status", "nodes")
			ready, _, _ := unstructured.NestedInt64(o.Object, "status", "nodesReady")
			return nodes == want && ready == want, fmt.Sprintf("status %d nodes, %d ready", nodes, ready)
		}
	}
	eventually(t, "Shim status 2 nodes, 2 ready", shimStatus(2))

	// A node that stops matching keeps the shim and its label: nothing uninstalls it.
	setNodeLabel(t, c, "wasm-2", isolation.WasmLabel, "")
	eventually(t, "Shim status 1 node", shimStatus(1))
	waitLabelled(t, c, sh.Name, "provisioned", "wasm-1", "wasm-2")

	// Deleting the Shim uninstalls it from the matching nodes and takes the RuntimeClass.
	if err := dyn.Resource(gvrShim).Delete(ctx, sh.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitLabelled(t, c, sh.Name, "provisioned", "wasm-2")
	waitLabelled(t, c, sh.Name, "*", "wasm-2")
	eventually(t, "the Shim and its RuntimeClass to go", func(ctx context.Context) (bool, string) {
		_, errShim := dyn.Resource(gvrShim).Get(ctx, sh.Name, metav1.GetOptions{})
		_, errRC := c.Client.NodeV1().RuntimeClasses().Get(ctx, sh.RuntimeClass, metav1.GetOptions{})
		return apierrors.IsNotFound(errShim) && apierrors.IsNotFound(errRC), fmt.Sprintf("Shim: %v, RuntimeClass: %v", errShim, errRC)
	})
	if _, err := c.Client.BatchV1().Jobs(ns).Get(ctx, "wasm-1-"+sh.Name+"-uninstall", metav1.GetOptions{}); err != nil {
		t.Errorf("uninstall Job: %v", err)
	}
}

// sandboxStandInCases are kata-deploy's and runtime-class-manager's options (TestStandIns).
func sandboxStandInCases() []standInCase {
	kata := func(name, values, wantErr string, check func(m *manifest) error) standInCase {
		return standInCase{name: name, chart: "kata-deploy", version: "3.32.0", release: "kata", namespace: "kata-system", values: values, wantErr: wantErr, check: check}
	}
	kataEnv := func(m *manifest) (map[string]string, error) {
		pt, err := m.podTemplate("DaemonSet", "kata-deploy")
		if err != nil {
			return nil, err
		}
		c, err := container(pt, "kube-kata")
		if err != nil {
			return nil, err
		}
		return envOf(c), nil
	}
	rcNames := func(m *manifest) ([]string, map[string]nodev1.RuntimeClass, error) {
		rcs, err := m.runtimeClasses()
		return slices.Sorted(maps.Keys(rcs)), rcs, err
	}
	return []standInCase{
		kata("defaults", "", "", func(m *manifest) error {
			names, _, err := rcNames(m)
			if err != nil {
				return err
			}
			if len(names) != 22 || slices.Contains(names, "kata-remote") || !slices.Contains(names, "kata-qemu-nvidia-gpu-snp") {
				return fmt.Errorf("RuntimeClasses %v: want every shim but remote", names)
			}
			env, err := kataEnv(m)
			if err != nil {
				return err
			}
			if env["DEFAULT_SHIM_X86_64"] != "qemu" || !strings.Contains(env["SHIMS_AARCH64"], "qemu-runtime-rs") || m.find("ConfigMap", "kata-deploy-custom-configs") != nil {
				return fmt.Errorf("env %v", env)
			}
			return nil
		}),
		kata("create-default", "shims: {disableAll: true, clh: {enabled: true}}\ndefaultShim: {amd64: clh}\nruntimeClasses: {createDefault: true}", "", func(m *manifest) error {
			names, rcs, err := rcNames(m)
			if err != nil {
				return err
			}
			if !slices.Equal(names, []string{"kata", "kata-clh"}) || rcs["kata"].Handler != "kata-clh" {
				return fmt.Errorf("RuntimeClasses %v, kata's handler %q", names, rcs["kata"].Handler)
			}
			return nil
		}),
		kata("runtime-class-options", "shims: {disableAll: true, qemu: {enabled: true, runtimeClass: {overheadEnabled: false, nodeSelector: {gpu: 'no'}}}}", "", func(m *manifest) error {
			_, rcs, err := rcNames(m)
			if err != nil {
				return err
			}
			rc := rcs["kata-qemu"]
			want := map[string]string{"katacontainers.io/kata-runtime": "true", "gpu": "no"}
			if rc.Overhead != nil || rc.Scheduling == nil || !maps.Equal(rc.Scheduling.NodeSelector, want) {
				return fmt.Errorf("kata-qemu: overhead %+v, scheduling %+v", rc.Overhead, rc.Scheduling)
			}
			return nil
		}),
		kata("default-shim-disabled", "shims: {disableAll: true, fc: {enabled: true}}", "", func(m *manifest) error {
			env, err := kataEnv(m)
			if err != nil {
				return err
			}
			if _, ok := env["DEFAULT_SHIM_X86_64"]; ok || env["SHIMS_X86_64"] != "fc" || env["SNAPSHOTTER_HANDLER_MAPPING_X86_64"] != "fc:devmapper" {
				return fmt.Errorf("env %v", env)
			}
			if _, ok := env["SHIMS_AARCH64"]; ok {
				return fmt.Errorf("fc is amd64 only: %v", env)
			}
			return nil
		}),
		kata("job-mode", "deploymentMode: job", "daemonset only", nil),
		kata("node-feature-discovery", "node-feature-discovery: {enabled: true}", "node-feature-discovery", nil),
		kata("cleanup-hook", "", "", func(m *manifest) error {
			// The post-delete Job counts the pods with a get whose errors count none.
			var j batchv1.Job
			if err := m.typed("Job", "kata-deploy-rb-cleanup", &j); err != nil {
				return err
			}
			script := strings.Join(j.Spec.Template.Spec.Containers[0].Command, " ")
			if !strings.Contains(script, "kubectl get pod") || !strings.Contains(script, "2>/dev/null | wc -l") || !strings.Contains(script, "kubectl delete serviceaccount") {
				return fmt.Errorf("kata-deploy-rb-cleanup runs %q", script)
			}
			return kataCleanupHookForbidden(m)
		}),
		{name: "release-name", chart: "runtime-class-manager", version: "0.2.0", release: "rcm", namespace: "spin",
			values: "rcm: {nodeInstallerJob: {ttl: 300}}", check: func(m *manifest) error {
				pt, err := m.podTemplate("Deployment", "rcm-runtime-class-manager")
				if err != nil {
					return err
				}
				env := envOf(&pt.Spec.Containers[0])
				if env["SHIM_NODE_INSTALLER_JOB_TTL"] != "300" || env["CONTROLLER_NAMESPACE"] != "spin" {
					return fmt.Errorf("env %v", env)
				}
				return nil
			}},
	}
}
