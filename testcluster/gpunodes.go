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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// kwok runs no containers, so the harness does what NVIDIA's node agents do to the nodes
// that have GPUs (NodeSpec.GPUs), as far as the API shows it. Every 500 ms:
//
//   - node-feature-discovery's worker (pods app.kubernetes.io/name=node-feature-discovery,
//     role=worker; NFD 0.19.0, the subchart of both NVIDIA charts) running on a node with
//     GPUs labels it feature.node.kubernetes.io/pci-10de.present=true (10de: NVIDIA's PCI
//     vendor id), and every node it runs on with its kernel's feature label
//     (feature.node.kubernetes.io/kernel-version.major, as NFD's kernel source does);
//   - the device plugin (pods app.kubernetes.io/name=nvidia-device-plugin of a DaemonSet
//     whose name does not end in -gpu-feature-discovery; k8s-device-plugin 0.20.0)
//     running there makes the kubelet advertise nvidia.com/gpu (capacity and allocatable);
//     once no such pod runs there, it advertises 0, as a kubelet does after its plugin
//     unregistered;
//   - GPU feature discovery (the same chart's DaemonSet <release>-gpu-feature-discovery,
//     whose pods carry the same labels) labels the node nvidia.com/gpu.product,
//     nvidia.com/gpu.memory (MiB) and nvidia.com/gpu.count; the labels go with it;
//   - the GPU operator (v26.7.0: a running pod app=gpu-operator and the ClusterPolicy
//     cluster-policy) does all three on every node NFD labelled, labels it
//     nvidia.com/gpu.present=true (its NodeFeatureRule), and reports the ClusterPolicy's
//     status.state ready (notReady while its operator pod does not run).

// GPU labels and resources of the NVIDIA agents.
const (
	GPUResource      = "nvidia.com/gpu"
	NFDNvidiaLabel   = "feature.node.kubernetes.io/pci-10de.present"
	NFDKernelLabel   = "feature.node.kubernetes.io/kernel-version.major"
	GPUPresentLabel  = "nvidia.com/gpu.present"
	GPUProductLabel  = "nvidia.com/gpu.product"
	GPUMemoryLabel   = "nvidia.com/gpu.memory"
	GPUCountLabel    = "nvidia.com/gpu.count"
	gfdDaemonSetTail = "-gpu-feature-discovery"
)

var gvrClusterPolicy = schema.GroupVersionResource{Group: "nvidia.com", Version: "v1", Resource: "clusterpolicies"}

// setGPUs records the GPUs of a node.
func (c *Cluster) setGPUs(n NodeSpec) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gpus == nil {
		c.gpus = map[string]NodeSpec{}
	}
	if n.GPUs > 0 {
		c.gpus[n.Name] = n
	}
}

// gpuSpec is the GPUs of a node (ok false for a node without any).
func (c *Cluster) gpuSpec(node string) (NodeSpec, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.gpus[node]
	return n, ok
}

// gpuAgents are the NVIDIA agents running per node.
type gpuAgents struct {
	nfd, plugin, gfd map[string]bool
	operator         bool
}

func (c *Cluster) runningGPUAgents(ctx context.Context) (gpuAgents, error) {
	a := gpuAgents{nfd: map[string]bool{}, plugin: map[string]bool{}, gfd: map[string]bool{}}
	pods, err := c.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return a, fmt.Errorf("list pods: %w", err)
	}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil || p.Spec.NodeName == "" {
			continue
		}
		l, node := p.Labels, p.Spec.NodeName
		switch {
		case l["app.kubernetes.io/name"] == "node-feature-discovery" && l["role"] == "worker":
			a.nfd[node] = true
		case l["app.kubernetes.io/name"] == "nvidia-device-plugin":
			if o := metav1.GetControllerOf(&p); o != nil && strings.HasSuffix(o.Name, gfdDaemonSetTail) {
				a.gfd[node] = true
			} else {
				a.plugin[node] = true
			}
		case l["app"] == "gpu-operator":
			a.operator = true
		}
	}
	return a, nil
}

// reconcileGPUs plays NFD, the device plugin, GPU feature discovery and the GPU operator.
func (c *Cluster) reconcileGPUs(ctx context.Context, dyn dynamic.Interface) error {
	a, err := c.runningGPUAgents(ctx)
	if err != nil {
		return err
	}
	policy, err := dyn.Resource(gvrClusterPolicy).Get(ctx, "cluster-policy", metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		policy = nil
	case err != nil:
		return fmt.Errorf("get ClusterPolicy: %w", err)
	}
	operated := a.operator && policy != nil && policy.GetDeletionTimestamp() == nil
	nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	var errs []error
	for _, n := range nodes.Items {
		if err := c.setNodeLabel(ctx, n.Name, NFDKernelLabel, flagValue(a.nfd[n.Name], "6")); err != nil {
			errs = append(errs, err)
		}
		spec, has := c.gpuSpec(n.Name)
		if !has {
			continue
		}
		pci := a.nfd[n.Name]
		labels := map[string]string{NFDNvidiaLabel: flag(pci), GPUPresentLabel: flag(pci && operated)}
		product, memory, count := "", "", ""
		if pci && (a.gfd[n.Name] || operated) {
			product, memory, count = spec.GPUProduct, strconv.Itoa(spec.GPUMemoryMiB), strconv.Itoa(spec.GPUs)
		}
		labels[GPUProductLabel], labels[GPUMemoryLabel], labels[GPUCountLabel] = product, memory, count
		for k, v := range labels {
			if err := c.setNodeLabel(ctx, n.Name, k, v); err != nil {
				errs = append(errs, err)
			}
		}
		advertised := 0
		if pci && (a.plugin[n.Name] || operated) {
			advertised = spec.GPUs
		}
		if err := c.advertiseGPUs(ctx, &n, advertised); err != nil {
			errs = append(errs, err)
		}
	}
	if policy != nil {
		state := "notReady"
		if operated {
			state = "ready"
		}
		if cur, _, _ := unstructured.NestedString(policy.Object, "status", "state"); cur != state {
			patch, _ := json.Marshal(map[string]any{"status": map[string]any{"state": state}})
			if _, err := dyn.Resource(gvrClusterPolicy).Patch(ctx, "cluster-policy", types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("ClusterPolicy status: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}

func flag(b bool) string { return flagValue(b, "true") }

// flagValue is v when b, else "" (the label goes).
func flagValue(b bool, v string) string {
	if b {
		return v
	}
	return ""
}

// advertiseGPUs sets the node's nvidia.com/gpu capacity and allocatable, as its kubelet
// does for a registered device plugin.
func (c *Cluster) advertiseGPUs(ctx context.Context, n *corev1.Node, count int) error {
	q := n.Status.Allocatable[GPUResource]
	_, had := n.Status.Allocatable[GPUResource]
	if (had && q.Value() == int64(count)) || (!had && count == 0) {
		return nil
	}
	v := strconv.Itoa(count)
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"capacity": map[string]any{GPUResource: v}, "allocatable": map[string]any{GPUResource: v}}})
	if _, err := c.Client.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "runr-testcluster"}, "status"); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("advertise %d GPUs on %s: %w", count, n.Name, err)
	}
	return nil
}
