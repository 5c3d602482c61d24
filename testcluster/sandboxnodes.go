package testcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
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
//     tools/packaging/kata-deploy/binary/src/main.rs install_stage_label and cleanup): a
//     running pod labels its node katacontainers.io/kata-runtime=true once Kata is
//     installed. When the pod goes, it cleans up only if its DaemonSet is gone, and it
//     removes the label (then restarts the container runtime) only if no DaemonSet named
//     *kata-deploy* remains: a pod removed by a rolling update or because its node stopped
//     matching the nodeSelector leaves the label. The harness sees a pod's end up to a
//     period late, so it tells the cases apart by state rather than by time: the pod's
//     DaemonSet still exists, or the node no longer matches the pod's nodeSelector (the
//     DaemonSet took the pod away while it existed), or another kata-deploy DaemonSet
//     exists: the label stays;
//     Once a kata-deploy release is gone (no Helm release record) and its pods too, the
//     RBAC it kept (helm.sh/resource-policy: keep) is deleted, as its post-delete hook Job
//     kata-deploy-rb-cleanup does (kwok only completes that Job);
//   - the console's gVisor installer (pods app.kubernetes.io/name=runr-gvisor-installer):
//     labels its node runr.dev/gvisor=true while it runs there, and removes the label when
//     no such pod is left on the node.

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
	// GVisorInstallerApp is the app.kubernetes.io/name of the console's gVisor installer pods.
	GVisorInstallerApp = "runr-gvisor-installer"
	// GVisorLabel is the node label the gVisor installer sets to "true" once runsc is registered.
	GVisorLabel = "runr.dev/gvisor"
)

// nodeAgent is what one kind of privileged pod does to its node's labels.
type nodeAgent struct {
	name     string
	selector string // its pods
	label    string
	// completed: a Succeeded pod counts too (a probe run by a Job completes at once).
	completed bool
	value     func(c *Cluster, node string) string
	// unlabel, when a pod left its node and no other of the agent's pods is there,
	// reports whether the label goes; nil: it stays.
	unlabel func(ctx context.Context, c *Cluster, p seenPod) (bool, error)
}

// seenPod is what the harness remembers of an agent's running pod.
type seenPod struct {
	node         string
	nodeSelector map[string]string
	owner        *metav1.OwnerReference // its controller
	namespace    string
}

// nodeAgents are the agents and, per agent, the pods seen running.
type nodeAgents struct {
	agents []nodeAgent
	seen   []map[types.UID]seenPod
}

func newNodeAgents() *nodeAgents {
	always := func(context.Context, *Cluster, seenPod) (bool, error) { return true, nil }
	a := &nodeAgents{agents: []nodeAgent{
		{name: "KVM probe", selector: "app.kubernetes.io/name=" + KVMProbeApp, label: KVMLabel, completed: true,
			value: func(c *Cluster, node string) string { return strconv.FormatBool(c.hasKVM(node)) }},
		{name: "kata-deploy", selector: KataDeployPodLabel, label: KataRuntimeLabel,
			value:   func(*Cluster, string) string { return "true" },
			unlabel: kataCleansUp},
		{name: "gVisor installer", selector: "app.kubernetes.io/name=" + GVisorInstallerApp, label: GVisorLabel,
			value: func(*Cluster, string) string { return "true" }, unlabel: always},
	}}
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
		if err := c.cleanupKataRBAC(ctx); err != nil {
			errs = append(errs, fmt.Errorf("kata-deploy-rb-cleanup: %w", err))
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
	for _, p := range pods.Items {
		ran := p.Status.Phase == corev1.PodRunning || (ag.completed && p.Status.Phase == corev1.PodSucceeded)
		if p.Spec.NodeName == "" || p.DeletionTimestamp != nil || !ran {
			continue
		}
		running[p.UID] = seenPod{node: p.Spec.NodeName, nodeSelector: p.Spec.NodeSelector, owner: metav1.GetControllerOf(&p), namespace: p.Namespace}
		onNode[p.Spec.NodeName] = true
	}
	for uid, sp := range running {
		if err := c.setNodeLabel(ctx, sp.node, ag.label, ag.value(c, sp.node)); err != nil {
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

// kataCleansUp reports whether a kata-deploy pod that left its node removed the node's
// label: not when its DaemonSet still exists, nor when the node no longer matches the
// pod's nodeSelector (its DaemonSet took it away while it existed), nor while another
// DaemonSet named *kata-deploy* exists.
func kataCleansUp(ctx context.Context, c *Cluster, p seenPod) (bool, error) {
	if p.owner != nil && p.owner.Kind == "DaemonSet" {
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
	dss, err := c.Client.AppsV1().DaemonSets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, fmt.Errorf("list DaemonSets: %w", err)
	}
	for _, d := range dss.Items {
		if d.DeletionTimestamp == nil && strings.Contains(d.Name, "kata-deploy") {
			return false, nil
		}
	}
	return true, nil
}

// setNodeLabel sets a node's label to value, or removes it when value is "" (a node that
// is gone is left alone).
func (c *Cluster) setNodeLabel(ctx context.Context, node, key, value string) error {
	n, err := c.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get node %s: %w", node, err)
	}
	old, has := n.Labels[key]
	if (value == "" && !has) || (value != "" && has && old == value) {
		return nil
	}
	var v any = value
	if value == "" {
		v = nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{key: v}}})
	if err != nil {
		return fmt.Errorf("label node %s: %w", node, err)
	}
	if _, err := c.Client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "runr-testcluster"}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("label node %s %s=%q: %w", node, key, value, err)
	}
	return nil
}

// cleanupKataRBAC deletes the RBAC a kata-deploy release kept (ServiceAccount
// kata-deploy-sa, ClusterRole kata-deploy-role, ClusterRoleBinding kata-deploy-rb) once
// the release has no Helm record left (but uninstalled ones) and its namespace no
// kata-deploy pod.
func (c *Cluster) cleanupKataRBAC(ctx context.Context) error {
	sas, err := c.Client.CoreV1().ServiceAccounts("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=kata-deploy-sa"})
	if err != nil {
		return fmt.Errorf("list ServiceAccounts: %w", err)
	}
	for _, sa := range sas.Items {
		release := sa.Annotations["meta.helm.sh/release-name"]
		if release == "" || sa.Annotations["helm.sh/resource-policy"] != "keep" {
			continue
		}
		records := metav1.ListOptions{LabelSelector: "owner=helm,status!=uninstalled,name=" + release}
		secrets, err := c.Client.CoreV1().Secrets(sa.Namespace).List(ctx, records)
		if err != nil {
			return fmt.Errorf("list Helm records: %w", err)
		}
		cms, err := c.Client.CoreV1().ConfigMaps(sa.Namespace).List(ctx, records)
		if err != nil {
			return fmt.Errorf("list Helm records: %w", err)
		}
		pods, err := c.Client.CoreV1().Pods(sa.Namespace).List(ctx, metav1.ListOptions{LabelSelector: KataDeployPodLabel})
		if err != nil {
			return fmt.Errorf("list pods: %w", err)
		}
		if len(secrets.Items)+len(cms.Items)+len(pods.Items) > 0 {
			continue
		}
		del := []func() error{
			func() error {
				return c.Client.RbacV1().ClusterRoleBindings().Delete(ctx, "kata-deploy-rb", metav1.DeleteOptions{})
			},
			func() error {
				return c.Client.RbacV1().ClusterRoles().Delete(ctx, "kata-deploy-role", metav1.DeleteOptions{})
			},
			func() error {
				return c.Client.CoreV1().ServiceAccounts(sa.Namespace).Delete(ctx, sa.Name, metav1.DeleteOptions{})
			},
		}
		for _, d := range del {
			if err := d(); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete the kept RBAC of %s/%s: %w", sa.Namespace, release, err)
			}
		}
	}
	return nil
}
