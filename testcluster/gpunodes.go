package testcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
)

// kwok runs no containers, so the harness does what NVIDIA's node agents do to the nodes
// that have GPUs (NodeSpec.GPUs), as far as the API shows it. Every 500 ms:
//
//   - node-feature-discovery (NFD 0.19.0, the subchart of both NVIDIA charts): its worker
//     (pods app.kubernetes.io/name=node-feature-discovery, role=worker) reports what it
//     scanned on its node, and its master (role=master), while one runs, writes the labels
//     (pkg/nfd-master/nfd-master.go): every node a worker runs on gets its kernel's
//     feature label (feature.node.kubernetes.io/kernel-version.major), a node with GPUs
//     feature.node.kubernetes.io/pci-10de.present=true (10de: NVIDIA's PCI vendor id),
//     and the labels GPU feature discovery reports through the worker (below). The master
//     records the labels it wrote in the node's annotation
//     nfd.node.kubernetes.io/feature-labels and removes those no longer reported; without
//     a running master nothing changes, so helm uninstall leaves the labels to the chart's
//     post-delete hook Job <fullname>-prune (nfd-master -prune, pods role=prune), which
//     runNFDPruneHooks plays when the Job is created: as the Job's ServiceAccount (which
//     must be allowed to patch nodes) it removes from every node the labels the
//     annotation names and the nfd.node.kubernetes.io/ annotations;
//   - the device plugin (pods app.kubernetes.io/name=nvidia-device-plugin of a DaemonSet
//     whose name ends in neither -gpu-feature-discovery nor -mps-control-daemon; the three
//     DaemonSets of k8s-device-plugin 0.20.0 share one selector and pod labels, so a pod
//     is told apart by its controller) running there makes the kubelet advertise
//     nvidia.com/gpu (capacity and allocatable); once no such pod runs there, it
//     advertises 0, as a kubelet does after its plugin unregistered. The MPS control
//     daemon's pods advertise nothing;
//   - GPU feature discovery (the DaemonSet <release>-gpu-feature-discovery) writes
//     nvidia.com/gpu.product, nvidia.com/gpu.memory (MiB) and nvidia.com/gpu.count to its
//     features file, which the worker reports and the master labels; the file goes with
//     the pod (removeOutputFile), and the labels with the master's next update;
//   - the GPU operator (v26.7.0: a running pod app=gpu-operator and the ClusterPolicy
//     cluster-policy) runs all three on every node NFD labelled, labels it
//     nvidia.com/gpu.present=true itself (its node labelling controller), and reports the
//     ClusterPolicy's status.state ready (notReady while its operator pod does not run).

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
	mpsDaemonSetTail = "-mps-control-daemon"
	// NFDFeatureLabelsAnnotation names the labels nfd-master wrote on a node (those of
	// its default namespace feature.node.kubernetes.io/ without it), comma-separated.
	NFDFeatureLabelsAnnotation = "nfd.node.kubernetes.io/feature-labels"
	nfdLabelNs                 = "feature.node.kubernetes.io/"
	nfdAnnotationNs            = "nfd.node.kubernetes.io/"
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
	master, operator bool
}

func (c *Cluster) runningGPUAgents(ctx context.Context) (gpuAgents, error) {
	a := gpuAgents{nfd: map[string]bool{}, plugin: map[string]bool{}, gfd: map[string]bool{}}
	pods, err := c.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return a, fmt.Errorf("list pods: %w", err)
	}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil || p.Spec.NodeName == "" || p.Spec.NodeName == RealNodeName {
			continue
		}
		l, node := p.Labels, p.Spec.NodeName
		switch {
		case l["app.kubernetes.io/name"] == "node-feature-discovery" && l["role"] == "worker":
			a.nfd[node] = true
		case l["app.kubernetes.io/name"] == "node-feature-discovery" && l["role"] == "master":
			a.master = true
		case l["app.kubernetes.io/name"] == "nvidia-device-plugin":
			o := metav1.GetControllerOf(&p)
			switch {
			case o != nil && strings.HasSuffix(o.Name, gfdDaemonSetTail):
				a.gfd[node] = true
			case o != nil && strings.HasSuffix(o.Name, mpsDaemonSetTail):
				// The MPS control daemon: nothing the API shows.
			default:
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
	c.startNFDPruneHooks()
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
	for i := range nodes.Items {
		n := &nodes.Items[i]
		spec, has := c.gpuSpec(n.Name)
		if a.master {
			// What the node's worker reports (GFD's features file included), labelled by
			// nfd-master.
			features := map[string]string{}
			if a.nfd[n.Name] {
				features[NFDKernelLabel] = "6"
				if has {
					features[NFDNvidiaLabel] = "true"
					if a.gfd[n.Name] || operated {
						features[GPUProductLabel], features[GPUMemoryLabel], features[GPUCountLabel] = spec.GPUProduct, strconv.Itoa(spec.GPUMemoryMiB), strconv.Itoa(spec.GPUs)
					}
				}
			}
			if err := c.nfdMasterLabel(ctx, n, features); err != nil {
				errs = append(errs, err)
			}
		}
		if !has {
			continue
		}
		pci := n.Labels[NFDNvidiaLabel] == "true"
		if err := c.setNodeLabel(ctx, n.Name, GPUPresentLabel, flag(pci && operated)); err != nil {
			errs = append(errs, err)
		}
		advertised := 0
		if pci && (a.plugin[n.Name] || operated) {
			advertised = spec.GPUs
		}
		if err := c.advertiseGPUs(ctx, n, advertised); err != nil {
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

// nfdLabelNames reads the annotation of the labels nfd-master wrote: full label names.
func nfdLabelNames(n *corev1.Node) []string {
	var out []string
	for _, name := range strings.Split(n.Annotations[NFDFeatureLabelsAnnotation], ",") {
		switch {
		case name == "":
		case strings.Contains(name, "/"):
			out = append(out, name)
		default:
			out = append(out, nfdLabelNs+name)
		}
	}
	return out
}

// nfdMasterLabel plays nfd-master's update of a node: the reported labels set, the ones
// it wrote before and no longer reported removed, its annotation naming what it wrote.
func (c *Cluster) nfdMasterLabel(ctx context.Context, n *corev1.Node, features map[string]string) error {
	labels := map[string]any{}
	for _, old := range nfdLabelNames(n) {
		if _, kept := features[old]; !kept {
			if _, has := n.Labels[old]; has {
				labels[old] = nil
			}
		}
	}
	var names []string
	for k, v := range features {
		if n.Labels[k] != v {
			labels[k] = v
		}
		names = append(names, strings.TrimPrefix(k, nfdLabelNs))
	}
	slices.Sort(names)
	var annotation any = strings.Join(names, ",")
	if len(names) == 0 {
		annotation = nil
	}
	_, annotated := n.Annotations[NFDFeatureLabelsAnnotation]
	if len(labels) == 0 && ((annotation == nil && !annotated) || (annotation != nil && n.Annotations[NFDFeatureLabelsAnnotation] == annotation)) {
		return nil
	}
	return c.patchNodeMeta(ctx, n.Name, labels, map[string]any{NFDFeatureLabelsAnnotation: annotation})
}

// patchNodeMeta merges labels and annotations into a node (nil values remove them).
func (c *Cluster) patchNodeMeta(ctx context.Context, node string, labels, annotations map[string]any) error {
	meta := map[string]any{}
	if len(labels) > 0 {
		meta["labels"] = labels
	}
	if len(annotations) > 0 {
		meta["annotations"] = annotations
	}
	if len(meta) == 0 {
		return nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": meta})
	if _, err := c.Client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "runr-testcluster"}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("node-feature-discovery's labels on %s: %w", node, err)
	}
	return nil
}

// nfdPruneWatchers holds the clusters whose NFD prune hooks are being played.
var nfdPruneWatchers sync.Map

// startNFDPruneHooks starts playing NFD's post-delete prune Jobs, once per cluster. It is
// called from the GPU agents' reconcile, whose goroutine Stop waits for, so the wait group
// is not at zero when it grows.
func (c *Cluster) startNFDPruneHooks() {
	if _, started := nfdPruneWatchers.LoadOrStore(c, true); started {
		return
	}
	c.wg.Add(1)
	go c.runNFDPruneHooks()
}

// runNFDPruneHooks plays node-feature-discovery's post-delete hook Jobs <fullname>-prune
// from the moment they are created (a watch: Helm deletes a succeeded hook Job within
// moments, and kwok completes its pod at once) until the cluster stops.
func (c *Cluster) runNFDPruneHooks() {
	defer c.wg.Done()
	defer nfdPruneWatchers.Delete(c)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-c.stopCh
		cancel()
	}()
	played := map[types.UID]bool{}
	rv := ""
	for ctx.Err() == nil {
		if rv == "" {
			jobs, err := c.Client.BatchV1().Jobs("").List(ctx, metav1.ListOptions{})
			if err != nil {
				sleepCtx(ctx, operatorPeriod)
				continue
			}
			for i := range jobs.Items {
				c.playNFDPrune(ctx, &jobs.Items[i], played)
			}
			rv = jobs.ResourceVersion
		}
		w, err := c.Client.BatchV1().Jobs("").Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
		if err != nil {
			rv = ""
			sleepCtx(ctx, operatorPeriod)
			continue
		}
		for ev := range w.ResultChan() {
			job, isJob := ev.Object.(*batchv1.Job)
			if !isJob {
				rv = "" // an error (410 Gone): list again
				break
			}
			rv = job.ResourceVersion
			if ev.Type == watch.Added {
				c.playNFDPrune(ctx, job, played)
			}
		}
		w.Stop()
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// isNFDPrune reports whether a Job is node-feature-discovery's post-delete prune hook:
// nfd-master -prune in pods app.kubernetes.io/name=node-feature-discovery, role=prune.
func isNFDPrune(job *batchv1.Job) bool {
	l := job.Spec.Template.Labels
	if !strings.Contains(job.Annotations["helm.sh/hook"], "post-delete") || l["app.kubernetes.io/name"] != "node-feature-discovery" || l["role"] != "prune" {
		return false
	}
	for _, ct := range job.Spec.Template.Spec.Containers {
		if slices.Equal(ct.Command, []string{"nfd-master"}) && slices.Contains(ct.Args, "-prune") {
			return true
		}
	}
	return false
}

// playNFDPrune plays nfd-master -prune once for a prune Job: as the Job's ServiceAccount,
// every node loses the labels nfd-master wrote and its nfd.node.kubernetes.io/ annotations.
func (c *Cluster) playNFDPrune(ctx context.Context, job *batchv1.Job, played map[types.UID]bool) {
	if played[job.UID] || !isNFDPrune(job) {
		return
	}
	played[job.UID] = true
	sa := job.Spec.Template.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	user := "system:serviceaccount:" + job.Namespace + ":" + sa
	if _, err := c.Client.CoreV1().ServiceAccounts(job.Namespace).Get(ctx, sa, metav1.GetOptions{}); err != nil {
		c.log("testcluster: %s/%s (nfd-master -prune) cannot run as %s: %v", job.Namespace, job.Name, user, err)
		return
	}
	sar, err := c.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + job.Namespace, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "patch", Resource: "nodes"}}}, metav1.CreateOptions{})
	if err != nil || !sar.Status.Allowed {
		c.log("testcluster: %s/%s (nfd-master -prune): %s may not patch nodes: %v", job.Namespace, job.Name, user, err)
		return
	}
	nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		c.log("testcluster: %s/%s (nfd-master -prune): list nodes: %v", job.Namespace, job.Name, err)
		return
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		labels, annotations := map[string]any{}, map[string]any{}
		for _, name := range nfdLabelNames(n) {
			if _, has := n.Labels[name]; has {
				labels[name] = nil
			}
		}
		for k := range n.Annotations {
			if strings.HasPrefix(k, nfdAnnotationNs) {
				annotations[k] = nil
			}
		}
		if err := c.patchNodeMeta(ctx, n.Name, labels, annotations); err != nil {
			c.log("testcluster: %s/%s (nfd-master -prune): %v", job.Namespace, job.Name, err)
		}
	}
}

// flag is "true" when b, else "" (the label goes).
func flag(b bool) string {
	if b {
		return "true"
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
