package isolation

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/problem"
	"runr.dev/console/store"
)

// Job kinds of the sandbox runtimes.
const (
	KindSandboxInstall   = "sandbox-install"
	KindSandboxUninstall = "sandbox-uninstall"
	KindSandboxProbe     = "sandbox-probe"
)

// Node installers of the sandbox runtimes, in the sandbox namespace.
const (
	KVMProbe        = "runr-kvm-probe"
	GVisorInstaller = "runr-gvisor-installer"
	// sandboxNodeAccount is the service account of the node installers: they label their
	// own node.
	sandboxNodeAccount = "runr-sandbox-node"
	// GVisorClass is gVisor's RuntimeClass.
	GVisorClass = "gvisor"
)

// SandboxParams names a sandbox runtime to install or remove: kata with its hypervisors,
// gvisor, or wasm on some nodes (none: every node with containerd).
type SandboxParams struct {
	Runtime     string   `json:"runtime"`
	Hypervisors []string `json:"hypervisors,omitempty"`
	Nodes       []string `json:"nodes,omitempty"`
	// SharedWith names the region of the same cluster whose install of the runtime this
	// region shares: an install records it, a removal forgets it (the cluster keeps it).
	SharedWith string `json:"shared_with,omitempty"`
}

var (
	gvkRuntimeClass = schema.GroupVersionKind{Group: "node.k8s.io", Version: "v1", Kind: "RuntimeClass"}
	gvkShim         = schema.GroupVersionKind{Group: "runtime.spinkube.dev", Version: "v1alpha1", Kind: "Shim"}
	gvkDaemonSet    = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"}
)

func (s *Service) registerKinds() {
	failed := func(ctx context.Context, jc *engine.JobContext, err error) {
		var p SandboxParams
		var refused *problem.Refused
		if err == nil || jc.Params(&p) != nil || errors.As(err, &refused) {
			// A refusal (the install would delete classes in use) changed nothing.
			return
		}
		r, rerr := s.JobRegion(ctx, jc)
		if rerr != nil {
			return
		}
		rt := r.Isolation.V.Runtime(p.Runtime)
		rt.Status, rt.Message = store.ComponentError, err.Error()
		s.Record(s.Store.SetSandboxRuntime(ctx, r.ID, p.Runtime, rt))
	}
	s.Engine.Register(&engine.Kind{Name: KindSandboxInstall, Finished: failed, Plan: engine.PlanWith(s.InstallSteps)})
	s.Engine.Register(&engine.Kind{Name: KindSandboxUninstall, Finished: failed, Plan: engine.PlanWith(s.sandboxUninstallSteps)})
	s.Engine.Register(&engine.Kind{Name: KindSandboxProbe, Plan: func(*engine.JobContext) ([]engine.Step, error) {
		return []engine.Step{s.RegionStep("probe", "Probe the nodes for /dev/kvm", s.probeKVM)}, nil
	}})
}

func (s *Service) InstallSteps(p SandboxParams) []engine.Step {
	if p.SharedWith != "" {
		return []engine.Step{s.RegionStep("share", "Share the cluster's "+runtimeLabels[p.Runtime]+" with region "+p.SharedWith, s.shareRuntime(p))}
	}
	start := s.RegionStep("start", "Record the install", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
		if p.Runtime == store.RuntimeKata {
			// Checked again here: a mapping or a pod may have come since the job was queued.
			reason, err := kataDropRefusal(ctx, r, c, p.Hypervisors)
			if err != nil {
				return err
			}
			if reason != "" {
				return &problem.Refused{Reason: reason}
			}
		}
		rt := r.Isolation.V.Runtime(p.Runtime)
		// An install of its own (a move's to another cluster) ends a share.
		rt.Status, rt.Message, rt.SharedWith = store.ComponentInstalling, "", ""
		return s.Store.SetSandboxRuntime(ctx, r.ID, p.Runtime, rt)
	})
	switch p.Runtime {
	case store.RuntimeKata:
		return []engine.Step{start,
			s.RegionStep("probe", "Probe the nodes for /dev/kvm", s.probeKVM),
			s.RegionStep("eligible", "Label the nodes Kata may run on", s.labelKataNodes(p)),
			s.RegionStep("kata", "Install kata-deploy", s.installKata(p)),
		}
	case store.RuntimeGVisor:
		return []engine.Step{start,
			s.RegionStep("installer", "Install runsc on the nodes", s.installGVisor),
		}
	default:
		return []engine.Step{start,
			s.RegionStep("nodes", "Label the nodes for WebAssembly", s.labelWasmNodes(p)),
			s.RegionStep("wasm", "Install the WebAssembly shims", s.installWasm),
		}
	}
}

// EnsureNodeAccess creates the sandbox namespace and the service account of the console's
// node programs (installers, probes), allowed to read and label nodes.
func EnsureNodeAccess(ctx context.Context, jc *engine.JobContext, c *kube.Cluster) error {
	if _, err := kit.EnsureNamespace(ctx, jc, c, SandboxNamespace, nil); err != nil {
		return err
	}
	labels := kit.ToAnyMap(kit.ManagedLabels(nil))
	for _, o := range []map[string]any{
		{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": sandboxNodeAccount, "namespace": SandboxNamespace, "labels": labels}},
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": map[string]any{"name": sandboxNodeAccount, "labels": labels},
			"rules": []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"nodes"}, "verbs": []any{"get", "patch"}}}},
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": map[string]any{"name": sandboxNodeAccount, "labels": labels},
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": sandboxNodeAccount},
			"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": sandboxNodeAccount, "namespace": SandboxNamespace}}},
	} {
		if _, err := c.ApplyObject(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

// NodeDaemonSet is a privileged DaemonSet of the sandbox namespace running `runr sandbox
// <args>` with the host's / at /host and its node's name in NODE_NAME.
func NodeDaemonSet(name, image string, args []string, nodeSelector map[string]any) map[string]any {
	labels := map[string]any{"app.kubernetes.io/name": name, "app.kubernetes.io/managed-by": "runr"}
	spec := map[string]any{
		"serviceAccountName": sandboxNodeAccount, "hostPID": true,
		"tolerations": []any{map[string]any{"operator": "Exists"}},
		"containers": []any{map[string]any{
			"name": "installer", "image": image, "args": append([]any{"sandbox"}, toAny(args)...),
			"env":             []any{map[string]any{"name": "NODE_NAME", "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "spec.nodeName"}}}},
			"securityContext": map[string]any{"privileged": true},
			"resources":       map[string]any{"requests": map[string]any{"cpu": "5m", "memory": "16Mi"}},
			"volumeMounts":    []any{map[string]any{"name": "host", "mountPath": "/host"}},
		}},
		"volumes": []any{map[string]any{"name": "host", "hostPath": map[string]any{"path": "/"}}},
	}
	if len(nodeSelector) > 0 {
		spec["nodeSelector"] = nodeSelector
	}
	return map[string]any{
		"apiVersion": "apps/v1", "kind": "DaemonSet",
		"metadata": map[string]any{"name": name, "namespace": SandboxNamespace, "labels": labels},
		"spec": map[string]any{
			// A reconcile's image-registry step may have left OnDelete: an install rolls.
			"updateStrategy": map[string]any{"type": "RollingUpdate"},
			"selector":       map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": name}},
			"template":       map[string]any{"metadata": map[string]any{"labels": labels}, "spec": spec},
		},
	}
}

func toAny(xs []string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// nodesLabelled waits for every node of names to carry a label (any value when value is
// "").
func nodesLabelled(c *kube.Cluster, names []string, label, value string) kube.Cond {
	return func(ctx context.Context) (bool, string, error) {
		var missing []string
		for _, n := range names {
			node, err := c.Clientset.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return false, "", fmt.Errorf("read node %s: %w", n, err)
			}
			if v, ok := node.Labels[label]; !ok || value != "" && v != value {
				missing = append(missing, n)
			}
		}
		return len(missing) == 0, "not yet on " + strings.Join(missing, ", "), nil
	}
}

// probeKVM runs the short-lived KVM probe on every node: each pod labels its node
// runr.dev/kvm with whether /dev/kvm is there.
func (s *Service) probeKVM(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	if err := EnsureNodeAccess(ctx, jc, c); err != nil {
		return err
	}
	nodes, err := SandboxNodes(ctx, c)
	if err != nil {
		return err
	}
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	image, err := s.RegionImage(ctx, r, s.Cfg.AgentImage)
	if err != nil {
		return err
	}
	if _, err := c.ApplyObject(ctx, NodeDaemonSet(KVMProbe, image, []string{"probe-kvm", "--root", "/host"}, nil)); err != nil {
		return err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10e9)
		defer cancel()
		_ = c.Delete(dctx, schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"}, SandboxNamespace, KVMProbe)
	}()
	if err := jc.Wait(ctx, "the KVM probe to report on every node", engine.WaitOpts{Hint: "read the probe's logs in " + SandboxNamespace},
		nodesLabelled(c, names, KVMLabel, "")); err != nil {
		return err
	}
	if nodes, err = SandboxNodes(ctx, c); err != nil {
		return err
	}
	var with []string
	for _, n := range nodes {
		if n.KVM == "true" {
			with = append(with, n.Name)
		}
	}
	jc.Note("/dev/kvm on %d of %d node(s): %s", len(with), len(nodes), kit.OrNoneList(with))
	return nil
}

// setNodeLabel sets (value != "") or removes a label of a node.
func setNodeLabel(ctx context.Context, c *kube.Cluster, node, label, value string) error {
	var v any = value
	if value == "" {
		v = nil
	}
	_, err := c.Clientset.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType,
		mustJSON(map[string]any{"metadata": map[string]any{"labels": map[string]any{label: v}}}), metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("label node %s: %w", node, err)
	}
	return nil
}

// labelKataNodes labels the nodes Kata may run on with the picked hypervisors
// (containerd or CRI-O, /dev/kvm, an architecture one of them runs on) and takes the label
// off the others. No eligible node, or a pick no eligible node can run, is an error naming
// why, before any label changes.
func (s *Service) labelKataNodes(p SandboxParams) func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	return func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
		nodes, err := SandboxNodes(ctx, c)
		if err != nil {
			return err
		}
		var eligible, refused []string
		archs := map[string][]string{} // the eligible nodes by architecture
		for _, n := range nodes {
			if ok, why := kataEligibleWith(n, p.Hypervisors); ok {
				eligible = append(eligible, n.Name)
				archs[n.Arch] = append(archs[n.Arch], n.Name)
			} else {
				refused = append(refused, n.Name+" ("+why+")")
			}
		}
		if len(eligible) == 0 {
			return fmt.Errorf("no node can run Kata Containers: %s", strings.Join(refused, "; "))
		}
		if err := kataPicksRunnable(p.Hypervisors, archs); err != nil {
			return err
		}
		for _, n := range nodes {
			value := ""
			if slices.Contains(eligible, n.Name) {
				value = "eligible"
			}
			if err := setNodeLabel(ctx, c, n.Name, KataEligibleLabel, value); err != nil {
				return err
			}
		}
		if len(refused) > 0 {
			jc.Logf("Not eligible for Kata: %s", strings.Join(refused, "; "))
		}
		jc.Note("Kata may run on %s", strings.Join(eligible, ", "))
		return nil
	}
}

// kataPicksRunnable refuses picks of which one runs on none of the architectures of the
// nodes (names by architecture), naming them.
func kataPicksRunnable(picks []string, nodes map[string][]string) error {
	var bad []string
	for _, h := range sortedCopy(picks) {
		if !slices.ContainsFunc(HypervisorArches[h], func(a string) bool { return len(nodes[a]) > 0 }) {
			bad = append(bad, fmt.Sprintf("%s runs on %s only", h, strings.Join(HypervisorArches[h], ", ")))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	var have []string
	for _, a := range slices.Sorted(maps.Keys(nodes)) {
		have = append(have, a+" ("+strings.Join(nodes[a], ", ")+")")
	}
	return fmt.Errorf("%s, and the nodes that can run Kata are %s: pick hypervisors for them, or add a node of that architecture with /dev/kvm",
		strings.Join(bad, "; "), kit.OrNoneList(have))
}

// installKata installs kata-deploy on the eligible nodes with the picked hypervisors and
// waits until kata-deploy reports on each of them.
func (s *Service) installKata(p SandboxParams) func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	return func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
		nodes, err := SandboxNodes(ctx, c)
		if err != nil {
			return err
		}
		var eligible, kubelets, perArch []string
		archs := map[string][]string{}
		for _, n := range nodes {
			if ok, _ := kataEligibleWith(n, p.Hypervisors); ok {
				eligible = append(eligible, n.Name)
				kubelets = append(kubelets, n.Flavor)
				archs[n.Arch] = append(archs[n.Arch], n.Name)
			}
		}
		dist := "k8s"
		if len(kubelets) > 0 && kubelets[0] != "" {
			dist = kubelets[0]
		}
		rel, err := s.HelmApply(ctx, jc, c, kit.Release{Namespace: SandboxNamespace, Name: KataRelease, Chart: ChartKataDeploy, Values: KataValues(p.Hypervisors, dist)})
		if err != nil {
			return err
		}
		if err := kit.WaitRelease(ctx, jc, c, rel, engine.WaitOpts{}); err != nil {
			return err
		}
		if err := jc.Wait(ctx, "kata-deploy to install on "+strings.Join(eligible, ", "), engine.WaitOpts{Hint: "read kata-deploy's logs in " + SandboxNamespace},
			nodesLabelled(c, eligible, KataRuntimeLabel, "true")); err != nil {
			return err
		}
		classes := make([]string, len(p.Hypervisors))
		for i, h := range p.Hypervisors {
			classes[i] = KataRuntimeClass(h)
		}
		sort.Strings(classes)
		for _, a := range slices.Sorted(maps.Keys(archs)) {
			var cs []string
			for _, h := range HypervisorsOn(p.Hypervisors, a) {
				cs = append(cs, KataRuntimeClass(h))
			}
			perArch = append(perArch, fmt.Sprintf("%s on %s (%s)", strings.Join(cs, ", "), a, strings.Join(archs[a], ", ")))
		}
		jc.Note("Kata Containers %s runs on %s: %s", ChartKataDeploy.Version, strings.Join(eligible, ", "), strings.Join(perArch, "; "))
		return s.Store.SetSandboxRuntime(ctx, r.ID, store.RuntimeKata, store.SandboxRuntime{Status: store.ComponentReady,
			Hypervisors: p.Hypervisors, Nodes: eligible, Classes: classes})
	}
}

// installGVisor runs gVisor's node installer on the nodes with containerd and creates the
// RuntimeClass gvisor for the nodes it registered runsc on.
func (s *Service) installGVisor(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	if err := EnsureNodeAccess(ctx, jc, c); err != nil {
		return err
	}
	nodes, err := SandboxNodes(ctx, c)
	if err != nil {
		return err
	}
	var targets []string
	for _, n := range nodes {
		if n.Containerd {
			targets = append(targets, n.Name)
		}
		value := ""
		if n.Containerd {
			value = "eligible"
		}
		if err := setNodeLabel(ctx, c, n.Name, "runr.dev/gvisor-eligible", value); err != nil {
			return err
		}
	}
	if len(targets) == 0 {
		return errors.New("no node runs containerd: gVisor's runsc registers with containerd only")
	}
	image, err := s.RegionImage(ctx, r, s.Cfg.AgentImage)
	if err != nil {
		return err
	}
	ds := NodeDaemonSet(GVisorInstaller, image, []string{"install-gvisor", "--root", "/host"}, map[string]any{"runr.dev/gvisor-eligible": "eligible"})
	if _, err := c.ApplyObject(ctx, ds); err != nil {
		return err
	}
	if err := jc.Wait(ctx, "runsc to be registered on "+strings.Join(targets, ", "), engine.WaitOpts{Hint: "read the installer's logs in " + SandboxNamespace},
		nodesLabelled(c, targets, GVisorLabel, "true")); err != nil {
		return err
	}
	if _, err := c.ApplyObject(ctx, map[string]any{"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
		"metadata":   map[string]any{"name": GVisorClass, "labels": kit.ToAnyMap(kit.ManagedLabels(nil))},
		"handler":    "runsc",
		"scheduling": map[string]any{"nodeSelector": map[string]any{GVisorLabel: "true"}}}); err != nil {
		return err
	}
	jc.Note("gVisor (runsc) runs on %s; RuntimeClass %s", strings.Join(targets, ", "), GVisorClass)
	return s.Store.SetSandboxRuntime(ctx, r.ID, store.RuntimeGVisor, store.SandboxRuntime{Status: store.ComponentReady, Nodes: targets, Classes: []string{GVisorClass}})
}

// labelWasmNodes labels the nodes WebAssembly goes on: the selected ones, else every
// node with containerd.
func (s *Service) labelWasmNodes(p SandboxParams) func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	return func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
		nodes, err := SandboxNodes(ctx, c)
		if err != nil {
			return err
		}
		var chosen []string
		for _, n := range nodes {
			want := n.Containerd && (len(p.Nodes) == 0 || slices.Contains(p.Nodes, n.Name))
			value := ""
			if want {
				value = "true"
				chosen = append(chosen, n.Name)
			}
			if err := setNodeLabel(ctx, c, n.Name, WasmLabel, value); err != nil {
				return err
			}
		}
		if len(chosen) == 0 {
			return errors.New("no selected node runs containerd: the WebAssembly shims are containerd shims")
		}
		rt := r.Isolation.V.Wasm
		rt.Status, rt.Nodes = store.ComponentInstalling, chosen
		jc.Note("WebAssembly goes on %s", strings.Join(chosen, ", "))
		return s.Store.SetSandboxRuntime(ctx, r.ID, store.RuntimeWasm, rt)
	}
}

// installWasm installs runtime-class-manager and its shims on the labelled nodes, and
// waits until each node reports them provisioned and their RuntimeClasses exist.
func (s *Service) installWasm(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	rel, err := s.HelmApply(ctx, jc, c, kit.Release{Namespace: SandboxNamespace, Name: WasmRelease, Chart: ChartRuntimeClassManager, Values: WasmValues()})
	if err != nil {
		return err
	}
	if err := kit.WaitRelease(ctx, jc, c, rel, engine.WaitOpts{}); err != nil {
		return err
	}
	nodes := r.Isolation.V.Wasm.Nodes
	var classes []string
	for _, sh := range WasmShims {
		if _, err := c.ApplyObject(ctx, ShimObject(sh)); err != nil {
			return err
		}
		if err := jc.Wait(ctx, "shim "+sh.Name+" to be provisioned on "+strings.Join(nodes, ", "), engine.WaitOpts{Hint: "read the installer Jobs in " + SandboxNamespace},
			nodesLabelled(c, nodes, sh.Name, shimProvisioned)); err != nil {
			return err
		}
		if err := jc.Wait(ctx, "RuntimeClass "+sh.RuntimeClass, engine.WaitOpts{}, func(ctx context.Context) (bool, string, error) {
			_, found, err := c.Get(ctx, gvkRuntimeClass, "", sh.RuntimeClass)
			return found, "", err
		}); err != nil {
			return err
		}
		classes = append(classes, sh.RuntimeClass)
	}
	jc.Note("WebAssembly (%s) runs on %s", strings.Join(classes, ", "), strings.Join(nodes, ", "))
	return s.Store.SetSandboxRuntime(ctx, r.ID, store.RuntimeWasm, store.SandboxRuntime{Status: store.ComponentReady, Nodes: nodes, Classes: classes})
}
