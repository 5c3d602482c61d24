package testcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"runr.dev/console/agent/nodeprobe"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
)

// kwok runs no containers, so the harness does what the sandbox runtimes' privileged pods
// do on their node, as far as the API shows it: node labels. Every 500 ms (runOperator),
// for the pods of each agent below:
//
//   - the console's KVM probe (pods app.kubernetes.io/name=runr-kvm-probe, running or
//     completed): labels its node runr.dev/kvm "true" or "false", per the node's
//     NodeSpec.KVM (whether /dev/kvm exists there);
//   - kata-deploy (pods name=kata-deploy, kata-containers 3.32.0
//     tools/packaging/kata-deploy/binary/src/main.rs install_stage_label and cleanup,
//     config.rs, k8s/client.rs): a running pod installs the shims of its SHIMS_<ARCH> for
//     its node's architecture, or kata-deploy's built-in list for that architecture when
//     the pod has none (config.rs get_default_shims_for_arch: nine on aarch64), and labels
//     its node katacontainers.io/kata-runtime=true (KataShims says what it installed).
//     When the pod goes (SIGTERM) it asks the API, as its ServiceAccount, whether its
//     DaemonSet still exists; if so (a rolling update, or a node that stopped matching the
//     nodeSelector: the DaemonSet took the pod away while it existed) it leaves Kata and
//     the label. Otherwise it removes Kata from the node, which takes kataCleanupTime, and
//     then, still as its ServiceAccount, lists the DaemonSets and, when none named
//     *kata-deploy* remains, patches its node to remove the label. A pod whose
//     ServiceAccount is gone (its token no longer authenticates) or not allowed fails its
//     cleanup and leaves the label. kwok deletes a terminating pod at once (so a hook
//     that could count the pods would not see them wait for their cleanup here); the
//     harness sees a pod's end up to a period late and plays its cleanup from then on;
//   - the console's node probe (pods app.kubernetes.io/name=runr-node-probe): writes its
//     node's report (agent/nodeprobe.Report) in the annotation runr.dev/node-probe, per
//     the node's NodeSpec (CgroupV1, ContainerdFreeGiB, NoEgress; egress "connects" to
//     127.0.0.1, as a resolver of the test would answer: nothing leaves the machine);
//   - the console's gVisor installer (pods app.kubernetes.io/name=runr-gvisor-installer):
//     labels its node runr.dev/gvisor=true while it runs there, and removes the label when
//     no such pod is left on the node.
//
// kata-deploy's post-delete hook Job kata-deploy-rb-cleanup (kata-cleanup-rbac-job.yaml)
// is played by runKataCleanupHooks as soon as the Job is created (kwok completes its pod):
// it counts the DaemonSet's pods with `kubectl get pod` as the Job's ServiceAccount, an
// error counting none, waits while some are left (at most 300 s), then deletes the kept
// ClusterRoleBinding, ClusterRole and ServiceAccount its env names. Upstream's cleanup
// role grants no get or list of pods, so the count is 0 and the kept RBAC goes at once,
// before the pods' cleanup needs it.

// Labels and pod names of the sandbox runtimes' node agents.
const (
	// KVMProbeApp is the app.kubernetes.io/name of the console's KVM probe pods.
	KVMProbeApp = "runr-kvm-probe"
	// KVMLabel is the node label a KVM probe pod sets: "true" or "false".
	KVMLabel = "runr.dev/kvm"
	// KataDeployPodLabel selects kata-deploy's DaemonSet pods (name=<chart name>).
	KataDeployPodLabel = "name=kata-deploy"
	// KataRuntimeLabel is the node label a kata-deploy pod sets to "true" once Kata is installed.
	KataRuntimeLabel = "katacontainers.io/kata-runtime"
	// NodeProbeApp is the app.kubernetes.io/name of the console's node probe pods.
	NodeProbeApp = "runr-node-probe"
	// GVisorInstallerApp is the app.kubernetes.io/name of the console's gVisor installer pods.
	GVisorInstallerApp = "runr-gvisor-installer"
	// GVisorLabel is the node label the gVisor installer sets to "true" once runsc is registered.
	GVisorLabel = "runr.dev/gvisor"
)

// kataCleanupTime is how long a kata-deploy pod's cleanup takes from its SIGTERM to the
// removal of its node's label: it first removes the snapshotters, the CRI configuration
// and Kata's files from the host (main.rs cleanup).
const kataCleanupTime = 3 * time.Second

// nodeAgent is what one kind of privileged pod does to its node's labels.
type nodeAgent struct {
	name     string
	selector string // its pods
	label    string
	// annotation: label names an annotation instead (the node probe's report).
	annotation bool
	// completed: a Succeeded pod counts too (a probe run by a Job completes at once).
	completed bool
	value     func(c *Cluster, node string) string
	// ran, when set, is told of each running pod (what it installed on its node).
	ran func(c *Cluster, p *corev1.Pod)
	// unlabel, when a pod left its node and no other of the agent's pods is there,
	// reports whether the label goes now; nil: it stays.
	unlabel func(ctx context.Context, c *Cluster, p seenPod) (bool, error)
}

// seenPod is what the harness remembers of an agent's running pod.
type seenPod struct {
	node           string
	nodeSelector   map[string]string
	owner          *metav1.OwnerReference // its controller
	namespace      string
	serviceAccount string
}

// kataCleanup is a kata-deploy pod's cleanup under way on its node: its label goes at due
// if the pod's ServiceAccount may still do it.
type kataCleanup struct {
	pod seenPod
	due time.Time
}

// nodeAgents are the agents and, per agent, the pods seen running; kataPending are the
// kata-deploy cleanups under way, by node.
type nodeAgents struct {
	agents      []nodeAgent
	seen        []map[types.UID]seenPod
	kataPending map[string]kataCleanup
}

func newNodeAgents() *nodeAgents {
	always := func(context.Context, *Cluster, seenPod) (bool, error) { return true, nil }
	a := &nodeAgents{kataPending: map[string]kataCleanup{}}
	a.agents = []nodeAgent{
		{name: "KVM probe", selector: "app.kubernetes.io/name=" + KVMProbeApp, label: KVMLabel, completed: true,
			value: func(c *Cluster, node string) string { return strconv.FormatBool(c.hasKVM(node)) }},
		{name: "kata-deploy", selector: KataDeployPodLabel, label: KataRuntimeLabel,
			value:   func(*Cluster, string) string { return "true" },
			ran:     (*Cluster).kataInstalled,
			unlabel: a.kataSIGTERM},
		{name: "node probe", selector: "app.kubernetes.io/name=" + NodeProbeApp, label: nodeprobe.Annotation, annotation: true,
			value: (*Cluster).nodeProbeReport},
		{name: "gVisor installer", selector: "app.kubernetes.io/name=" + GVisorInstallerApp, label: GVisorLabel,
			value: func(*Cluster, string) string { return "true" }, unlabel: always},
	}
	for range a.agents {
		a.seen = append(a.seen, map[types.UID]seenPod{})
	}
	return a
}

func (c *Cluster) reconcileNodeAgents(a *nodeAgents) func(ctx context.Context, dyn dynamic.Interface) error {
	return func(ctx context.Context, _ dynamic.Interface) error {
		var errs []error
		for i := range a.agents {
			if err := c.reconcileNodeAgent(ctx, a.agents[i], a.seen[i]); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", a.agents[i].name, err))
			}
		}
		if err := c.finishKataCleanups(ctx, a); err != nil {
			errs = append(errs, fmt.Errorf("kata-deploy cleanup: %w", err))
		}
		return errors.Join(errs...)
	}
}

// reconcileNodeAgent labels the nodes of the agent's running pods, and unlabels the nodes
// its pods left.
func (c *Cluster) reconcileNodeAgent(ctx context.Context, ag nodeAgent, seen map[types.UID]seenPod) error {
	pods, err := c.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: ag.selector})
	if err != nil {
		return fmt.Errorf("list pods %s: %w", ag.selector, err)
	}
	running := map[types.UID]seenPod{}
	onNode := map[string]bool{}
	for i := range pods.Items {
		p := &pods.Items[i]
		ran := p.Status.Phase == corev1.PodRunning || (ag.completed && p.Status.Phase == corev1.PodSucceeded)
		if p.Spec.NodeName == "" || p.Spec.NodeName == RealNodeName || p.DeletionTimestamp != nil || !ran {
			continue
		}
		running[p.UID] = seenPod{node: p.Spec.NodeName, nodeSelector: p.Spec.NodeSelector, owner: metav1.GetControllerOf(p),
			namespace: p.Namespace, serviceAccount: p.Spec.ServiceAccountName}
		onNode[p.Spec.NodeName] = true
		if ag.ran != nil {
			ag.ran(c, p)
		}
	}
	field := "labels"
	if ag.annotation {
		field = "annotations"
	}
	for uid, sp := range running {
		if err := c.setNodeMeta(ctx, sp.node, field, ag.label, ag.value(c, sp.node)); err != nil {
			return err
		}
		seen[uid] = sp
	}
	for uid, sp := range seen {
		if _, ok := running[uid]; ok {
			continue
		}
		if ag.unlabel != nil && !onNode[sp.node] {
			gone, err := ag.unlabel(ctx, c, sp)
			if err != nil {
				return err
			}
			if gone {
				if err := c.setNodeLabel(ctx, sp.node, ag.label, ""); err != nil {
					return err
				}
			}
		}
		delete(seen, uid)
	}
	return nil
}

// kataArchs are the architecture names of Kubernetes, as kata-deploy's env suffixes and
// built-in shim lists name them (config.rs get_arch_var_or_base, get_default_shims_for_arch).
var kataArchs = map[string]struct{ suffix, defaults string }{
	"amd64":   {"X86_64", "clh clh-runtime-rs dragonball fc qemu qemu-coco-dev qemu-coco-dev-runtime-rs qemu-runtime-rs qemu-nvidia-gpu qemu-nvidia-gpu-runtime-rs qemu-nvidia-gpu-snp qemu-nvidia-gpu-snp-runtime-rs qemu-nvidia-gpu-tdx qemu-nvidia-gpu-tdx-runtime-rs qemu-snp qemu-snp-runtime-rs qemu-tdx qemu-tdx-runtime-rs"},
	"arm64":   {"AARCH64", "clh clh-runtime-rs dragonball fc qemu qemu-coco-dev-runtime-rs qemu-runtime-rs qemu-nvidia-gpu qemu-cca"},
	"s390x":   {"S390X", "qemu qemu-runtime-rs qemu-se qemu-se-runtime-rs qemu-coco-dev qemu-coco-dev-runtime-rs"},
	"ppc64le": {"PPC64LE", "qemu"},
}

// kataInstalled records the shims a running kata-deploy pod installed on its node: its
// SHIMS_<ARCH> for the node's architecture, else kata-deploy's built-in list for it (qemu
// for an architecture it does not know).
func (c *Cluster) kataInstalled(p *corev1.Pod) {
	n, err := c.Client.CoreV1().Nodes().Get(context.Background(), p.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		return
	}
	shims := "qemu"
	if a, ok := kataArchs[n.Labels["kubernetes.io/arch"]]; ok {
		shims = a.defaults
		for _, ctr := range p.Spec.Containers {
			for _, e := range ctr.Env {
				if e.Name == "SHIMS_"+a.suffix && strings.TrimSpace(e.Value) != "" {
					shims = e.Value
				}
			}
		}
	}
	list := strings.Fields(shims)
	slices.Sort(list)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kataShims == nil {
		c.kataShims = map[string][]string{}
	}
	c.kataShims[p.Spec.NodeName] = list
}

// KataShims returns the shims the simulated kata-deploy installed on a node, sorted (nil
// when Kata is not there): a kata-deploy pod's SHIMS_<ARCH> for the node's architecture,
// or kata-deploy's built-in list of that architecture when the chart gave the pod none.
func (c *Cluster) KataShims(node string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.kataShims[node])
}

// kataSIGTERM starts the cleanup of a kata-deploy pod that left its node: none when its
// ServiceAccount may not read DaemonSets (the cleanup fails) or its DaemonSet still exists,
// nor when the node no longer matches the pod's nodeSelector (its DaemonSet took it away
// while it existed). The label goes later, in finishKataCleanups.
func (a *nodeAgents) kataSIGTERM(ctx context.Context, c *Cluster, p seenPod) (bool, error) {
	if p.owner != nil && p.owner.Kind == "DaemonSet" {
		ok, why, err := c.serviceAccountMay(ctx, p.namespace, p.serviceAccount, authorizationv1.ResourceAttributes{
			Namespace: p.namespace, Verb: "get", Group: "apps", Resource: "daemonsets", Name: p.owner.Name})
		if err != nil {
			return false, err
		}
		if !ok {
			c.log("testcluster: kata-deploy's cleanup on %s failed: cannot read DaemonSet %s/%s: %s; Kata and the label stay", p.node, p.namespace, p.owner.Name, why)
			return false, nil
		}
		ds, err := c.Client.AppsV1().DaemonSets(p.namespace).Get(ctx, p.owner.Name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("get DaemonSet %s/%s: %w", p.namespace, p.owner.Name, err)
		}
		if err == nil && ds.UID == p.owner.UID && ds.DeletionTimestamp == nil {
			return false, nil
		}
	}
	n, err := c.Client.CoreV1().Nodes().Get(ctx, p.node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get node %s: %w", p.node, err)
	}
	if !labels.SelectorFromSet(p.nodeSelector).Matches(labels.Set(n.Labels)) {
		return false, nil
	}
	a.kataPending[p.node] = kataCleanup{pod: p, due: time.Now().Add(kataCleanupTime)}
	return false, nil
}

// finishKataCleanups ends the kata-deploy cleanups that are due: Kata is off the node, and
// the label goes when the pod's ServiceAccount may list DaemonSets and patch the node and
// no DaemonSet named *kata-deploy* remains.
func (c *Cluster) finishKataCleanups(ctx context.Context, a *nodeAgents) error {
	kata := map[string]bool{} // the nodes a kata-deploy pod runs on again
	for i, ag := range a.agents {
		if ag.label == KataRuntimeLabel {
			for _, sp := range a.seen[i] {
				kata[sp.node] = true
			}
		}
	}
pending:
	for node, kc := range a.kataPending {
		if time.Now().Before(kc.due) {
			continue
		}
		delete(a.kataPending, node)
		if !kata[node] {
			c.mu.Lock()
			delete(c.kataShims, node)
			c.mu.Unlock()
		}
		p := kc.pod
		for _, attr := range []authorizationv1.ResourceAttributes{{Verb: "list", Group: "apps", Resource: "daemonsets"}, {Verb: "patch", Resource: "nodes", Name: node}} {
			ok, why, err := c.serviceAccountMay(ctx, p.namespace, p.serviceAccount, attr)
			if err != nil {
				return err
			}
			if !ok {
				c.log("testcluster: kata-deploy's cleanup on %s failed: cannot %s %s: %s; the label %s stays", node, attr.Verb, attr.Resource, why, KataRuntimeLabel)
				continue pending
			}
		}
		dss, err := c.Client.AppsV1().DaemonSets("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list DaemonSets: %w", err)
		}
		if slices.ContainsFunc(dss.Items, func(d appsv1.DaemonSet) bool {
			return d.DeletionTimestamp == nil && strings.Contains(d.Name, "kata-deploy")
		}) {
			continue
		}
		if err := c.setNodeLabel(ctx, node, KataRuntimeLabel, ""); err != nil {
			return err
		}
	}
	return nil
}

// serviceAccountMay reports whether a pod running as the ServiceAccount may do what attr
// says (a SubjectAccessReview), and why not: a ServiceAccount that is gone authenticates no
// more.
func (c *Cluster) serviceAccountMay(ctx context.Context, ns, sa string, attr authorizationv1.ResourceAttributes) (bool, string, error) {
	if sa == "" {
		sa = "default"
	}
	if _, err := c.Client.CoreV1().ServiceAccounts(ns).Get(ctx, sa, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return false, fmt.Sprintf("ServiceAccount %s/%s is gone (401 Unauthorized)", ns, sa), nil
	} else if err != nil {
		return false, "", fmt.Errorf("get ServiceAccount %s/%s: %w", ns, sa, err)
	}
	user := "system:serviceaccount:" + ns + ":" + sa
	r, err := c.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}, ResourceAttributes: &attr}},
		metav1.CreateOptions{})
	if err != nil {
		return false, "", fmt.Errorf("review the access of %s: %w", user, err)
	}
	return r.Status.Allowed, fmt.Sprintf("%s is forbidden to %s %s (403)", user, attr.Verb, attr.Resource), nil
}

// setNodeLabel sets a node's label to value, or removes it when value is "" (a node that
// is gone is left alone).
func (c *Cluster) setNodeLabel(ctx context.Context, node, key, value string) error {
	return c.setNodeMeta(ctx, node, "labels", key, value)
}

// setNodeMeta sets one of a node's labels or annotations (field), or removes it when value
// is "".
func (c *Cluster) setNodeMeta(ctx context.Context, node, field, key, value string) error {
	n, err := c.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get node %s: %w", node, err)
	}
	meta := n.Labels
	if field == "annotations" {
		meta = n.Annotations
	}
	old, has := meta[key]
	if (value == "" && !has) || (value != "" && has && old == value) {
		return nil
	}
	var v any = value
	if value == "" {
		v = nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{field: map[string]any{key: v}}})
	if err != nil {
		return fmt.Errorf("label node %s: %w", node, err)
	}
	if _, err := c.Client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "runr-testcluster"}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("label node %s %s=%q: %w", node, key, value, err)
	}
	return nil
}

// kataHook is a kata-deploy post-delete hook Job being played: the pods it waits for and
// the kept RBAC it deletes, as its env names them.
type kataHook struct {
	namespace, serviceAccount, podLabel string
	binding, role, account              string
	deadline                            time.Time
}

// runKataCleanupHooks plays kata-deploy's post-delete hook Jobs (kata-deploy-rb-cleanup)
// from the moment they are created (a watch: Helm deletes a succeeded hook Job within
// moments) until the cluster stops.
func (c *Cluster) runKataCleanupHooks() {
	defer c.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-c.stopCh
		cancel()
	}()
	played := map[types.UID]bool{}
	var pending []kataHook
	rv := ""
	tick := time.NewTicker(operatorPeriod)
	defer tick.Stop()
	for ctx.Err() == nil {
		if rv == "" {
			jobs, err := c.Client.BatchV1().Jobs("").List(ctx, metav1.ListOptions{})
			if err != nil {
				select {
				case <-ctx.Done():
				case <-tick.C:
				}
				continue
			}
			for i := range jobs.Items {
				pending = c.playKataHook(ctx, &jobs.Items[i], played, pending)
			}
			rv = jobs.ResourceVersion
		}
		w, err := c.Client.BatchV1().Jobs("").Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
		if err != nil {
			rv = ""
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
			continue
		}
	events:
		for {
			select {
			case <-ctx.Done():
				break events
			case <-tick.C:
				pending = c.waitKataHooks(ctx, pending)
			case ev, ok := <-w.ResultChan():
				if !ok {
					break events
				}
				job, isJob := ev.Object.(*batchv1.Job)
				if !isJob {
					rv = "" // an error (410 Gone): list again
					break events
				}
				rv = job.ResourceVersion
				if ev.Type == watch.Added {
					pending = c.playKataHook(ctx, job, played, pending)
				}
			}
		}
		w.Stop()
	}
}

// playKataHook starts playing a kata-deploy post-delete hook Job once.
func (c *Cluster) playKataHook(ctx context.Context, job *batchv1.Job, played map[types.UID]bool, pending []kataHook) []kataHook {
	if played[job.UID] || !strings.HasPrefix(job.Name, "kata-deploy-rb-cleanup") || !strings.Contains(job.Annotations["helm.sh/hook"], "post-delete") ||
		len(job.Spec.Template.Spec.Containers) == 0 {
		return pending
	}
	played[job.UID] = true
	h := kataHook{namespace: job.Namespace, serviceAccount: job.Spec.Template.Spec.ServiceAccountName, deadline: job.CreationTimestamp.Add(300 * time.Second)}
	for _, e := range job.Spec.Template.Spec.Containers[0].Env {
		switch e.Name {
		case "DAEMONSET_POD_LABEL":
			h.podLabel = e.Value
		case "CLUSTER_ROLE_BINDING_NAME":
			h.binding = e.Value
		case "CLUSTER_ROLE_NAME":
			h.role = e.Value
		case "SERVICE_ACCOUNT_NAME":
			h.account = e.Value
		}
	}
	return c.waitKataHooks(ctx, append(pending, h))
}

// waitKataHooks plays the hooks' wait: pods counted with a get as the Job's ServiceAccount
// (none when it may not), then the kept RBAC deleted; the hooks still waiting are returned.
func (c *Cluster) waitKataHooks(ctx context.Context, hooks []kataHook) []kataHook {
	var left []kataHook
	for _, h := range hooks {
		count := 0
		if ok, _, err := c.serviceAccountMay(ctx, h.namespace, h.serviceAccount, authorizationv1.ResourceAttributes{Namespace: h.namespace, Verb: "list", Resource: "pods"}); err == nil && ok {
			if pods, err := c.Client.CoreV1().Pods(h.namespace).List(ctx, metav1.ListOptions{LabelSelector: h.podLabel}); err == nil {
				count = len(pods.Items)
			}
		}
		if count > 0 && time.Now().Before(h.deadline) {
			left = append(left, h)
			continue
		}
		del := []struct {
			attr authorizationv1.ResourceAttributes
			run  func() error
		}{
			{authorizationv1.ResourceAttributes{Verb: "delete", Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings", Name: h.binding},
				func() error {
					return c.Client.RbacV1().ClusterRoleBindings().Delete(ctx, h.binding, metav1.DeleteOptions{})
				}},
			{authorizationv1.ResourceAttributes{Verb: "delete", Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Name: h.role},
				func() error { return c.Client.RbacV1().ClusterRoles().Delete(ctx, h.role, metav1.DeleteOptions{}) }},
			{authorizationv1.ResourceAttributes{Namespace: h.namespace, Verb: "delete", Resource: "serviceaccounts", Name: h.account},
				func() error {
					return c.Client.CoreV1().ServiceAccounts(h.namespace).Delete(ctx, h.account, metav1.DeleteOptions{})
				}},
		}
		for _, d := range del {
			ok, why, err := c.serviceAccountMay(ctx, h.namespace, h.serviceAccount, d.attr)
			if err != nil || !ok {
				c.log("testcluster: kata-deploy-rb-cleanup cannot delete %s %s: %v %s", d.attr.Resource, d.attr.Name, err, why)
				continue
			}
			if err := d.run(); err != nil && !apierrors.IsNotFound(err) {
				c.log("testcluster: kata-deploy-rb-cleanup: delete %s %s: %v", d.attr.Resource, d.attr.Name, err)
			}
		}
	}
	return left
}

// nodeProbeReport is what the node probe finds on a node, from its NodeSpec.
func (c *Cluster) nodeProbeReport(node string) string {
	c.mu.Lock()
	spec := c.probed[node]
	c.mu.Unlock()
	r := nodeprobe.Report{Cgroup: "v2", Controllers: []string{"cpuset", "cpu", "io", "memory", "hugetlb", "pids", "rdma", "misc"},
		DiskPath: nodeprobe.ContainerdDir, FreeBytes: uint64(max(spec.ContainerdFreeGiB, 0)) << 30, OSRelease: spec.Node().Status.NodeInfo.OSImage}
	if spec.ContainerdFreeGiB == 0 {
		r.FreeBytes = 100 << 30
	}
	if spec.CgroupV1 {
		r.Cgroup, r.Controllers = "v1", nil
	}
	for _, t := range nodeprobe.Targets {
		host, _, _ := strings.Cut(t, ":")
		e := nodeprobe.Egress{Target: t, OK: true, Detail: "connected to 127.0.0.1"}
		if spec.NoEgress {
			e = nodeprobe.Egress{Target: t, Detail: "cannot resolve " + host + ": no such host"}
		}
		r.Egress = append(r.Egress, e)
	}
	raw, _ := json.Marshal(r)
	return string(raw)
}
