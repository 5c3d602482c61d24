package testcluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
)

// NodeSpec describes one fake node that kwok keeps Ready.
type NodeSpec struct {
	Name         string
	CPU          string // e.g. "4"
	Memory       string // e.g. "8Gi"
	Pods         string // default "110"
	ControlPlane bool
	// Worker marks the node with the worker role label too (a control plane that runs workloads).
	Worker           bool
	Labels           map[string]string
	Taints           []corev1.Taint
	KubeletVersion   string // default KubernetesVersion
	OSImage          string // default "Ubuntu 24.04.2 LTS"
	ContainerRuntime string // default "containerd://2.1.4"
	// Arch is the node's architecture as Kubernetes names it (label kubernetes.io/arch and
	// status.nodeInfo.architecture): amd64 (the default), arm64, s390x, ppc64le.
	Arch string
	// Address is the node's InternalIP (default a loopback address of the cluster's own,
	// so that whatever the console reads from it stays on this machine).
	Address string
	// KVM says whether /dev/kvm exists on the node: what a KVM probe pod finds there
	// (sandboxnodes.go).
	KVM bool
	// GPUs is how many NVIDIA GPUs the node has (GPUProduct, GPUMemoryMiB each): what NFD
	// finds on its PCI bus and what a device plugin advertises there (gpunodes.go).
	GPUs         int
	GPUProduct   string
	GPUMemoryMiB int
	// What the node probe measures there (sandboxnodes.go): cgroup v1 instead of v2, the
	// free GiB behind /var/lib/containerd (default 100), no egress to Kubernetes' hosts.
	CgroupV1          bool
	ContainerdFreeGiB int
	NoEgress          bool
}

// DefaultNodes is one control-plane node (tainted) and two workers.
func DefaultNodes() []NodeSpec {
	return []NodeSpec{
		{Name: "cp-1", CPU: "4", Memory: "8Gi", ControlPlane: true,
			Taints: []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}},
		{Name: "worker-1", CPU: "8", Memory: "16Gi", Worker: true},
		{Name: "worker-2", CPU: "8", Memory: "16Gi", Worker: true},
	}
}

// Node builds the Node object of a spec.
func (n NodeSpec) Node() *corev1.Node {
	if n.Pods == "" {
		n.Pods = "110"
	}
	if n.KubeletVersion == "" {
		n.KubeletVersion = KubernetesVersion
	}
	if n.OSImage == "" {
		n.OSImage = "Ubuntu 24.04.2 LTS"
	}
	if n.ContainerRuntime == "" {
		n.ContainerRuntime = "containerd://2.1.4"
	}
	if n.Arch == "" {
		n.Arch = "amd64"
	}
	labels := map[string]string{
		"kubernetes.io/hostname": n.Name,
		"kubernetes.io/os":       "linux",
		"kubernetes.io/arch":     n.Arch,
		"type":                   "kwok",
	}
	if n.ControlPlane {
		labels["node-role.kubernetes.io/control-plane"] = ""
	}
	if n.Worker {
		labels["node-role.kubernetes.io/worker"] = ""
	}
	for k, v := range n.Labels {
		labels[k] = v
	}
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(n.CPU),
		corev1.ResourceMemory: resource.MustParse(n.Memory),
		corev1.ResourcePods:   resource.MustParse(n.Pods),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        n.Name,
			Labels:      labels,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
		},
		Spec: corev1.NodeSpec{Taints: n.Taints},
		Status: corev1.NodeStatus{
			Capacity:    res,
			Allocatable: res,
			NodeInfo: corev1.NodeSystemInfo{
				KubeletVersion:          n.KubeletVersion,
				OSImage:                 n.OSImage,
				ContainerRuntimeVersion: n.ContainerRuntime,
				KernelVersion:           "6.8.0-50-generic",
				OperatingSystem:         "linux",
				Architecture:            n.Arch,
			},
			Phase: corev1.NodeRunning,
		},
	}
}

// nextNodeAddress gives the cluster's next node a loopback address: the load balancers'
// 127.0.A.B becomes 127.<10+n>.A.B for the n-th node.
func (c *Cluster) nextNodeAddress() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nodes++
	var a, b int
	fmt.Sscanf(c.LBAddress, "127.0.%d.%d", &a, &b)
	return fmt.Sprintf("127.%d.%d.%d", 9+c.nodes, a, b)
}

// setKVM records whether /dev/kvm exists on a node.
func (c *Cluster) setKVM(node string, kvm bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kvm == nil {
		c.kvm = map[string]bool{}
	}
	c.kvm[node] = kvm
}

// hasKVM reports whether /dev/kvm exists on a node (false for a node the cluster did not add).
func (c *Cluster) hasKVM(node string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.kvm[node]
}

// AddNodes creates fake nodes and waits until kwok reports them Ready.
func (c *Cluster) AddNodes(ctx context.Context, specs ...NodeSpec) error {
	addrs := map[string]string{}
	for _, n := range specs {
		c.setKVM(n.Name, n.KVM)
		c.mu.Lock()
		if c.probed == nil {
			c.probed = map[string]NodeSpec{}
		}
		c.probed[n.Name] = n
		c.mu.Unlock()
		c.setGPUs(n)
		node := n.Node()
		addrs[n.Name] = n.Address
		if addrs[n.Name] == "" {
			addrs[n.Name] = c.nextNodeAddress()
		}
		created, err := c.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) && c.kept {
			// A kept cluster started again: its nodes are there already.
			created, err = c.Client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		}
		if err != nil {
			return fmt.Errorf("testcluster: create node %s: %w", n.Name, err)
		}
		// Status is written through the status subresource, as a kubelet would; kwok may
		// write the node at the same time, so a conflict is retried on the newest version.
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			latest, err := c.Client.CoreV1().Nodes().Get(ctx, created.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			latest.Status.Capacity, latest.Status.Allocatable = node.Status.Capacity, node.Status.Allocatable
			latest.Status.NodeInfo, latest.Status.Phase = node.Status.NodeInfo, node.Status.Phase
			_, err = c.Client.CoreV1().Nodes().UpdateStatus(ctx, latest, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("testcluster: node %s status: %w", n.Name, err)
		}
	}
	for _, n := range specs {
		if err := c.WaitNodeReady(ctx, n.Name, true); err != nil {
			return err
		}
		// kwok's initialisation writes the addresses it knows (none here): the node's own
		// go in after it.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			latest, err := c.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			latest.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: addrs[n.Name]}, {Type: corev1.NodeHostName, Address: n.Name}}
			_, err = c.Client.CoreV1().Nodes().UpdateStatus(ctx, latest, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("testcluster: node %s addresses: %w", n.Name, err)
		}
	}
	return nil
}

// WaitNodeReady waits for a node's Ready condition to be (or not be) True.
func (c *Cluster) WaitNodeReady(ctx context.Context, name string, ready bool) error {
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			for _, cd := range n.Status.Conditions {
				if cd.Type == corev1.NodeReady && (cd.Status == corev1.ConditionTrue) == ready {
					return nil
				}
			}
		} else if !apierrors.IsNotFound(err) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("testcluster: node %s did not become ready=%v%s", name, ready, c.logTail("kwok"))
}

// HeartbeatStopped is the annotation that keeps kwok's node stages off a node.
const HeartbeatStopped = "runr.dev/heartbeat"

// StopHeartbeat stops a node's heartbeat, as when its kubelet dies: kwok's heartbeat
// and initialisation stages skip nodes with the annotation.
func (c *Cluster) StopHeartbeat(ctx context.Context, name string) error {
	patch := []byte(`{"metadata":{"annotations":{"` + HeartbeatStopped + `":"stopped"}}}`)
	_, err := c.Client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// ResumeHeartbeat lets kwok heartbeat a node again.
func (c *Cluster) ResumeHeartbeat(ctx context.Context, name string) error {
	patch := []byte(`{"metadata":{"annotations":{"` + HeartbeatStopped + `":null}}}`)
	_, err := c.Client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}
