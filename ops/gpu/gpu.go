package gpu

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/store"
)

// Job kinds of GPU support.
const (
	KindGPUInstall   = "gpu-install"
	KindGPUUninstall = "gpu-uninstall"
	KindModelStorage = "gpu-model-storage"
)

// GPUKinds are the job kinds of the GPU tab.
var GPUKinds = []string{KindGPUInstall, KindGPUUninstall, KindModelStorage}

var gvkClusterPolicy = schema.GroupVersionKind{Group: "nvidia.com", Version: "v1", Kind: "ClusterPolicy"}

// GPUNode is a node as the GPU tab shows it, with the evidence: whether
// node-feature-discovery found an NVIDIA device on it, how many GPUs its kubelet
// advertises, how many pods request, and the model GPU feature discovery labelled.
type GPUNode struct {
	Name        string `json:"name"`
	Hardware    bool   `json:"nvidia_device"`
	Allocatable int    `json:"allocatable"`
	Requested   int    `json:"requested"`
	Product     string `json:"product,omitempty"`
	MemoryMiB   int    `json:"memory_mib,omitempty"`
}

// Free is how many of the node's GPUs no pod requests.
func (n GPUNode) Free() int { return max(0, n.Allocatable-n.Requested) }

// GPUReport is a cluster's GPUs: per node (the nodes with an NVIDIA device or GPUs), in
// total and per model.
type GPUReport struct {
	Nodes  []GPUNode      `json:"nodes"`
	Total  int            `json:"total"`
	Free   int            `json:"free"`
	Models map[string]int `json:"models"`
}

// FreeOf is how many GPUs of a model ("" any) no pod requests.
func (g GPUReport) FreeOf(model string) int {
	free := 0
	for _, n := range g.Nodes {
		if model == "" || n.Product == model {
			free += n.Free()
		}
	}
	return free
}

// podGPUs is how many GPUs a pod asks for (its containers' limits, which GPUs are given by).
func podGPUs(p *corev1.Pod) int {
	n := 0
	for _, c := range p.Spec.Containers {
		if q, ok := c.Resources.Limits[GPUResource]; ok {
			n += int(q.Value())
		}
	}
	return n
}

// GPUs reads a cluster's GPUs from its nodes and the pods that request them.
func GPUs(ctx context.Context, c *kube.Cluster) (GPUReport, error) {
	rep := GPUReport{Nodes: []GPUNode{}, Models: map[string]int{}}
	nodes, err := c.Clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return rep, fmt.Errorf("list the nodes: %w", err)
	}
	requested, err := gpuRequests(ctx, c)
	if err != nil {
		return rep, err
	}
	for _, n := range nodes.Items {
		q := n.Status.Allocatable[GPUResource]
		gn := GPUNode{Name: n.Name, Hardware: n.Labels[NFDNvidiaLabel] == "true" || n.Labels[GPUPresentLabel] == "true",
			Allocatable: int(q.Value()), Requested: requested[n.Name], Product: n.Labels[GPUProductLabel]}
		gn.MemoryMiB, _ = strconv.Atoi(n.Labels[GPUMemoryLabel])
		if !gn.Hardware && gn.Allocatable == 0 {
			continue
		}
		rep.Nodes = append(rep.Nodes, gn)
		rep.Total += gn.Allocatable
		rep.Free += gn.Free()
		if gn.Allocatable > 0 {
			rep.Models[kit.OrV(gn.Product, "unknown model")] += gn.Allocatable
		}
	}
	sort.Slice(rep.Nodes, func(a, b int) bool { return rep.Nodes[a].Name < rep.Nodes[b].Name })
	return rep, nil
}

// gpuRequests counts the GPUs requested per node by the pods that are not finished.
func gpuRequests(ctx context.Context, c *kube.Cluster) (map[string]int, error) {
	pods, err := c.Clientset.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list the pods: %w", err)
	}
	out := map[string]int{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		out[p.Spec.NodeName] += podGPUs(p)
	}
	return out, nil
}

// PodsWithGPUs lists the pods (namespace/name) that request GPUs and are not finished.
func PodsWithGPUs(ctx context.Context, c *kube.Cluster) ([]string, error) {
	pods, err := c.Clientset.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list the pods: %w", err)
	}
	var out []string
	for i := range pods.Items {
		p := &pods.Items[i]
		if podGPUs(p) > 0 && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && p.DeletionTimestamp == nil {
			out = append(out, p.Namespace+"/"+p.Name)
		}
	}
	return out, nil
}

// recordGPUs keeps the GPUs found on the region, for the region list.
func (s *Service) recordGPUs(ctx context.Context, r *store.Region, rep GPUReport) error {
	now := time.Now().UTC()
	g := r.GPU.V
	g.Total, g.Models, g.CheckedAt = rep.Total, rep.Models, &now
	r.GPU.V = g
	return s.Store.SetRegionGPU(ctx, r.ID, g)
}

func (s *Service) registerKinds() {
	failed := func(ctx context.Context, jc *engine.JobContext, err error) {
		if err == nil {
			return
		}
		r, rerr := s.JobRegion(ctx, jc)
		if rerr != nil {
			return
		}
		g := r.GPU.V
		if jc.Job.Kind == KindModelStorage {
			g.Storage.Status, g.Storage.Message = store.ComponentError, err.Error()
		} else {
			g.Status, g.Message = store.ComponentError, err.Error()
		}
		s.Record(s.Store.SetRegionGPU(ctx, r.ID, g))
	}
	s.Engine.Register(&engine.Kind{Name: KindGPUInstall, Finished: failed, Plan: engine.PlanWith(s.InstallSteps)})
	s.Engine.Register(&engine.Kind{Name: KindGPUUninstall, Finished: failed, Plan: engine.PlanWith(s.gpuUninstallSteps)})
	s.Engine.Register(&engine.Kind{Name: KindModelStorage, Finished: failed, Plan: engine.PlanWith(s.ModelStorageSteps)})
}

// Params is a GPU install: its mode.
type Params struct {
	Mode string `json:"mode"`
}

func (s *Service) InstallSteps(p Params) []engine.Step {
	rel := gpuRelease(p.Mode)
	return []engine.Step{
		s.RegionStep("start", "Record the install", func(ctx context.Context, jc *engine.JobContext, r *store.Region, _ *kube.Cluster) error {
			g := r.GPU.V
			g.Mode, g.Status, g.Message = p.Mode, store.ComponentInstalling, ""
			return s.Store.SetRegionGPU(ctx, r.ID, g)
		}),
		s.RegionStep("chart", "Install "+rel.Chart.Name+" "+rel.Chart.Version, func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
			if _, err := kit.EnsureNamespace(ctx, jc, c, GPUNamespace, nil); err != nil {
				return err
			}
			out, err := s.HelmApply(ctx, jc, c, rel)
			if err != nil {
				return err
			}
			return kit.WaitRelease(ctx, jc, c, out, engine.WaitOpts{})
		}),
		s.RegionStep("discover", "Find the GPU nodes", s.discoverGPUNodes(p)),
	}
}

// discoverGPUNodes waits for node-feature-discovery to scan the nodes, then for the nodes
// with an NVIDIA device to advertise their GPUs (and, with the operator, for its
// ClusterPolicy to be ready), and records what it found.
func (s *Service) discoverGPUNodes(p Params) func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	return func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
		// The GPU waits are long (driver containers compile on nodes without drivers):
		// RUNR_GPU_DISCOVERY_TIMEOUT each.
		wait := func(hint string) engine.WaitOpts {
			return engine.WaitOpts{Timeout: s.Cfg.GPUDiscoveryTimeout, Hint: hint + " (each GPU wait lasts RUNR_GPU_DISCOVERY_TIMEOUT)"}
		}
		if err := jc.Wait(ctx, "node-feature-discovery to label the nodes (its workers scan them, nfd-master writes the labels)", wait("read the logs of the node-feature-discovery master and workers in "+GPUNamespace), nfdScanned(c)); err != nil {
			return err
		}
		rep, err := GPUs(ctx, c)
		if err != nil {
			return err
		}
		var gpuNodes []string
		for _, n := range rep.Nodes {
			if n.Hardware {
				gpuNodes = append(gpuNodes, n.Name)
			}
		}
		if len(gpuNodes) > 0 {
			if err := jc.Wait(ctx, "GPUs to be advertised on "+strings.Join(gpuNodes, ", ")+" (the drivers loaded, the device plugin running)", wait("read the driver and device plugin pods' logs in "+GPUNamespace),
				gpusAdvertised(c, gpuNodes)); err != nil {
				return err
			}
		}
		if p.Mode == store.GPUModeOperator {
			if err := jc.Wait(ctx, "ClusterPolicy "+ClusterPolicyName+" to be ready (driver containers build the kernel module on nodes without drivers)", wait("kubectl get clusterpolicy "+ClusterPolicyName+" -o yaml"), clusterPolicyReady(c)); err != nil {
				return err
			}
		}
		if rep, err = GPUs(ctx, c); err != nil {
			return err
		}
		if len(gpuNodes) == 0 {
			jc.Note("GPU support is installed; node-feature-discovery found no NVIDIA GPU on the nodes")
		} else {
			jc.Note("%d GPU(s) on %s: %s", rep.Total, strings.Join(gpuNodes, ", "), modelsText(rep.Models))
		}
		g := r.GPU.V
		g.Mode, g.Status, g.Message = p.Mode, store.ComponentReady, ""
		r.GPU.V = g
		return s.recordGPUs(ctx, r, rep)
	}
}

// modelsText says "2× NVIDIA-A100, 1× Tesla-T4".
func modelsText(models map[string]int) string {
	var out []string
	for m, n := range models {
		out = append(out, fmt.Sprintf("%d× %s", n, m))
	}
	sort.Strings(out)
	return kit.OrNoneList(out)
}

// nfdScanned holds once every node that runs a node-feature-discovery worker carries its
// labels (nfd-master writes them from what the worker reported; helm uninstall's
// post-delete Job nfd-master -prune removes them).
func nfdScanned(c *kube.Cluster) kube.Cond {
	return func(ctx context.Context) (bool, string, error) {
		pods, err := c.Clientset.CoreV1().Pods(GPUNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=node-feature-discovery,role=worker"})
		if err != nil {
			return false, "", fmt.Errorf("list the node-feature-discovery workers: %w", err)
		}
		var waiting []string
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" {
				continue
			}
			n, err := c.Clientset.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
			if err != nil {
				return false, "", fmt.Errorf("read node %s: %w", p.Spec.NodeName, err)
			}
			if !hasLabelPrefix(n.Labels, nfdLabelPrefix) {
				waiting = append(waiting, n.Name)
			}
		}
		if len(pods.Items) == 0 {
			return false, "no worker yet", nil
		}
		return len(waiting) == 0, "not yet on " + strings.Join(waiting, ", "), nil
	}
}

func hasLabelPrefix(labels map[string]string, prefix string) bool {
	for k := range labels {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

// gpusAdvertised holds once each node advertises at least one GPU.
func gpusAdvertised(c *kube.Cluster, nodes []string) kube.Cond {
	return func(ctx context.Context) (bool, string, error) {
		var missing []string
		for _, name := range nodes {
			n, err := c.Clientset.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, "", fmt.Errorf("read node %s: %w", name, err)
			}
			if q := n.Status.Allocatable[GPUResource]; q.Value() == 0 {
				missing = append(missing, name)
			}
		}
		return len(missing) == 0, "none yet on " + strings.Join(missing, ", "), nil
	}
}

// clusterPolicyReady holds once the GPU operator reports its ClusterPolicy ready.
func clusterPolicyReady(c *kube.Cluster) kube.Cond {
	return c.ResourceJudged(gvkClusterPolicy, "", ClusterPolicyName, func(o *unstructured.Unstructured) (bool, string, error) {
		state, _, _ := unstructured.NestedString(o.Object, "status", "state")
		return state == "ready", "state " + kit.OrV(state, "none yet"), nil
	})
}

func (s *Service) gpuUninstallSteps(Params) []engine.Step {
	return []engine.Step{
		s.RegionStep("unused", "Check that no pod requests GPUs", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
			used, err := PodsWithGPUs(ctx, c)
			if err != nil {
				return err
			}
			if len(used) > 0 {
				return fmt.Errorf("pods still request GPUs: %s", strings.Join(used, ", "))
			}
			g := r.GPU.V
			g.Status, g.Message = store.ComponentRemoving, ""
			return s.Store.SetRegionGPU(ctx, r.ID, g)
		}),
		s.RegionStep("remove", "Remove the NVIDIA chart", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
			if err := s.HelmUninstall(ctx, jc, c, GPUNamespace, gpuRelease(r.GPU.V.Mode).Name); err != nil {
				return err
			}
			g := r.GPU.V
			g.Mode, g.Status, g.Message, g.Total, g.Models = "", store.ComponentNotInstalled, "", 0, nil
			jc.Note("GPU support removed; the nodes' drivers stay (the operator's driver containers went with it)")
			return s.Store.SetRegionGPU(ctx, r.ID, g)
		}),
	}
}

// ModelStorageParams is the model storage volume's StorageClass ("" the default) and size.
type ModelStorageParams struct {
	StorageClass string `json:"storage_class"`
	SizeGi       int    `json:"size_gi"`
}

func (s *Service) ModelStorageSteps(p ModelStorageParams) []engine.Step {
	return []engine.Step{
		s.RegionStep("volume", "Create the model storage volume", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
			g := r.GPU.V
			g.Storage = store.ModelStorage{StorageClass: p.StorageClass, SizeGi: p.SizeGi, Status: store.ComponentInstalling}
			if err := s.Store.SetRegionGPU(ctx, r.ID, g); err != nil {
				return err
			}
			if _, err := kit.EnsureNamespace(ctx, jc, c, r.Name, map[string]string{"runr.dev/region": r.Name}); err != nil {
				return err
			}
			spec := map[string]any{"accessModes": []any{"ReadWriteMany"},
				"resources": map[string]any{"requests": map[string]any{"storage": fmt.Sprintf("%dGi", p.SizeGi)}}}
			if p.StorageClass != "" {
				spec["storageClassName"] = p.StorageClass
			}
			if _, err := c.ApplyObject(ctx, map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim",
				"metadata": map[string]any{"name": ModelStorageClaim, "namespace": r.Name, "labels": kit.ToAnyMap(kit.ManagedLabels(nil))}, "spec": spec}); err != nil {
				return err
			}
			if err := jc.Wait(ctx, "volume "+r.Name+"/"+ModelStorageClaim+" to bind", engine.WaitOpts{Hint: "kubectl describe pvc -n " + r.Name + " " + ModelStorageClaim},
				c.PVCBound(r.Name, ModelStorageClaim)); err != nil {
				return err
			}
			g.Storage.Status = store.ComponentReady
			jc.Note("Model storage %s/%s (%d GiB) is bound; GPU projects that ask for it mount it read-only at %s", r.Name, ModelStorageClaim, p.SizeGi, ModelStoragePath)
			return s.Store.SetRegionGPU(ctx, r.ID, g)
		}),
	}
}
