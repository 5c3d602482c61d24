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
//     matching the nodeSelector leaves the label;
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
	unlabel func(ctx context.Context, c *Cluster) (bool, error)
}

// nodeAgents are the agents and, per agent, the pods seen running (to their node).
type nodeAgents struct {
	agents []nodeAgent
	seen   []map[types.UID]string
}

func newNodeAgents() *nodeAgents {
	always := func(context.Context, *Cluster) (bool, error) { return true, nil }
	a := &nodeAgents{agents: []nodeAgent{
		{name: "KVM probe", selector: "app.kubernetes.io/name=" + KVMProbeApp, label: KVMLabel, completed: true,
			value: func(c *Cluster, node string) string { return strconv.FormatBool(c.hasKVM(node)) }},
		{name: "kata-deploy", selector: KataDeployPodLabel, label: KataRuntimeLabel,
			value:   func(*Cluster, string) string { return "true" },
			unlabel: noKataDeployDaemonSet},
		{name: "gVisor installer", selector: "app.kubernetes.io/name=" + GVisorInstallerApp, label: GVisorLabel,
			value: func(*Cluster, string) string { return "true" }, unlabel: always},
	}}
	for range a.agents {
		a.seen = append(a.seen, map[types.UID]string{})
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
		return errors.Join(errs...)
	}
}

// reconcileNodeAgent labels the nodes of the agent's running pods, and unlabels the nodes
// its pods left.
func (c *Cluster) reconcileNodeAgent(ctx context.Context, ag nodeAgent, seen map[types.UID]string) error {
	pods, err := c.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: ag.selector})
	if err != nil {
		return fmt.Errorf("list pods %s: %w", ag.selector, err)
	}
	running := map[types.UID]string{}
	onNode := map[string]bool{}
	for _, p := range pods.Items {
		ran := p.Status.Phase == corev1.PodRunning || (ag.completed && p.Status.Phase == corev1.PodSucceeded)
		if p.Spec.NodeName == "" || p.DeletionTimestamp != nil || !ran {
			continue
		}
		running[p.UID] = p.Spec.NodeName
		onNode[p.Spec.NodeName] = true
	}
	for uid, node := range running {
		if err := c.setNodeLabel(ctx, node, ag.label, ag.value(c, node)); err != nil {
			return err
		}
		seen[uid] = node
	}
	for uid, node := range seen {
		if _, ok := running[uid]; ok {
			continue
		}
		if ag.unlabel != nil && !onNode[node] {
			gone, err := ag.unlabel(ctx, c)
			if err != nil {
				return err
			}
			if gone {
				if err := c.setNodeLabel(ctx, node, ag.label, ""); err != nil {
					return err
				}
			}
		}
		delete(seen, uid)
	}
	return nil
}

// noKataDeployDaemonSet reports whether no DaemonSet named *kata-deploy* is left (not
// being deleted), in any namespace: then a leaving kata-deploy pod removes its node's label.
func noKataDeployDaemonSet(ctx context.Context, c *Cluster) (bool, error) {
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
