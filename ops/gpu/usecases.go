package gpu

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/engine"
	"runr.dev/console/ops/kit"
	"runr.dev/console/problem"
	"runr.dev/console/store"
)

// MaxProjectGPUs bounds the GPUs one project asks for (chosen: a large node's eight GPUs
// twice; the spec gives no bound).
const MaxProjectGPUs = 16

// gpuBusy refuses a second GPU job while one runs on the region.
func (s *Service) gpuBusy(ctx context.Context, r *store.Region) error {
	b, err := s.Busy(ctx, r.ID, GPUKinds...)
	if err != nil {
		return err
	}
	if b {
		return &problem.Refused{Reason: "A GPU job of this region runs already; wait for it to finish."}
	}
	return nil
}

// InstallGPU queues the install of GPU support: the GPU operator, or the device plugin
// with GPU feature discovery for nodes whose drivers are installed already.
func (s *Service) InstallGPU(ctx context.Context, actor kit.Actor, r *store.Region, in Params) (*store.Job, error) {
	if !slices.Contains(GPUModes, in.Mode) {
		return nil, &problem.Invalid{Fields: map[string]string{"mode": "Choose operator (NVIDIA's GPU operator installs drivers and toolkit) or device-plugin (the nodes' drivers are installed already)."}}
	}
	if g := r.GPU.V; g.State() != store.ComponentNotInstalled && g.Mode != "" && g.Mode != in.Mode {
		return nil, &problem.Refused{Field: "mode", Reason: fmt.Sprintf("GPU support is installed with %s: remove it before installing %s.", g.Mode, in.Mode)}
	}
	if owner, mode, err := s.neighbourGPU(ctx, r); err != nil {
		return nil, err
	} else if owner != "" && mode != in.Mode {
		return nil, &problem.Refused{Field: "mode", Reason: fmt.Sprintf("GPU support on this cluster is installed with %s for region %s, which shares the cluster's nodes: install with %s too, or remove it from %s first.", mode, owner, mode, owner)}
	}
	if err := s.gpuBusy(ctx, r); err != nil {
		return nil, err
	}
	return s.Enqueue(ctx, engine.Request{Kind: KindGPUInstall, Title: "Install GPU support (" + in.Mode + ") on " + r.Name,
		Subject: r.ID, Params: in, CreatedBy: actor.Email})
}

// neighbourGPU names another region on r's cluster with GPU support, and its mode: the
// GPU operator and the device plugin serve every node of the cluster, so one of them runs.
func (s *Service) neighbourGPU(ctx context.Context, r *store.Region) (owner, mode string, err error) {
	rs, err := s.OtherRegionsOnCluster(ctx, r)
	if err != nil {
		return "", "", err
	}
	for _, x := range rs {
		if g := x.GPU.V; g.State() != store.ComponentNotInstalled && g.Mode != "" {
			return x.Name, g.Mode, nil
		}
	}
	return "", "", nil
}

// UninstallGPU queues the removal of GPU support; it is refused while pods request GPUs
// (they are named).
func (s *Service) UninstallGPU(ctx context.Context, actor kit.Actor, r *store.Region) (*store.Job, error) {
	if r.GPU.V.State() == store.ComponentNotInstalled {
		return nil, &problem.Refused{Reason: "GPU support is not installed on this region."}
	}
	if err := s.gpuBusy(ctx, r); err != nil {
		return nil, err
	}
	if err := s.noGPUPods(ctx, r); err != nil {
		return nil, err
	}
	req := uninstallRequest(r)
	req.CreatedBy = actor.Email
	return s.Enqueue(ctx, req)
}

// noGPUPods refuses the removal of GPU support while pods request GPUs (they are named).
func (s *Service) noGPUPods(ctx context.Context, r *store.Region) error {
	c, err := s.RegionCluster(r)
	if err != nil {
		return err
	}
	used, err := PodsWithGPUs(ctx, c)
	if err != nil {
		return &problem.Unreachable{Region: r.Name, Err: err}
	}
	if len(used) > 0 {
		return &problem.Refused{Reason: "Pods still request GPUs: " + strings.Join(used, ", ") + ". Stop them first."}
	}
	return nil
}

func uninstallRequest(r *store.Region) engine.Request {
	return engine.Request{Kind: KindGPUUninstall, Title: "Remove GPU support from " + r.Name, Subject: r.ID, Params: Params{Mode: r.GPU.V.Mode}}
}

// TeardownParts is the removal of GPU support when it is installed, for the removal of
// a region with what the console installed.
func (s *Service) TeardownParts(ctx context.Context, r *store.Region) ([]engine.Part, error) {
	if r.GPU.V.State() == store.ComponentNotInstalled {
		return nil, nil
	}
	if err := s.noGPUPods(ctx, r); err != nil {
		return nil, err
	}
	p, err := engine.PartOf("GPU support", uninstallRequest(r))
	return []engine.Part{p}, err
}

// SetModelStorage queues the model storage volume of a region: a StorageClass of the
// cluster ("" its default) and a size of 1 to 10240 GiB.
func (s *Service) SetModelStorage(ctx context.Context, actor kit.Actor, r *store.Region, in ModelStorageParams) (*store.Job, error) {
	in.StorageClass = strings.TrimSpace(in.StorageClass)
	fields := map[string]string{}
	if in.SizeGi < 1 || in.SizeGi > 10240 {
		fields["size_gi"] = "Use 1 to 10240 GiB."
	}
	c, err := s.RegionCluster(r)
	if err != nil {
		return nil, err
	}
	if in.StorageClass != "" {
		_, err := c.Clientset.StorageV1().StorageClasses().Get(ctx, in.StorageClass, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			fields["storage_class"] = "The cluster has no StorageClass " + in.StorageClass + "."
		case err != nil:
			return nil, &problem.Unreachable{Region: r.Name, Err: err}
		}
	}
	if len(fields) > 0 {
		return nil, &problem.Invalid{Fields: fields}
	}
	if err := s.gpuBusy(ctx, r); err != nil {
		return nil, err
	}
	return s.Enqueue(ctx, engine.Request{Kind: KindModelStorage, Title: "Model storage of " + r.Name,
		Subject: r.ID, Params: in, CreatedBy: actor.Email})
}

// RegionGPUs reads a region's GPUs and keeps their count and models for the region list.
func (s *Service) RegionGPUs(ctx context.Context, r *store.Region) (GPUReport, error) {
	c, err := s.RegionCluster(r)
	if err != nil {
		return GPUReport{}, err
	}
	rep, err := GPUs(ctx, c)
	if err != nil {
		return rep, err
	}
	if rep.Total != r.GPU.V.Total || !sameCounts(rep.Models, r.GPU.V.Models) {
		if err := s.recordGPUs(ctx, r, rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

func sameCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// ApplyProjectGPU validates what a project asks of GPUs.
func ApplyProjectGPU(p *store.Project, in *store.ProjectGPU, errs map[string]string) {
	if in == nil {
		return
	}
	in.Model = strings.TrimSpace(in.Model)
	switch {
	case in.Count < 0 || in.Count > MaxProjectGPUs:
		errs["gpu.count"] = fmt.Sprintf("Use 0 to %d GPUs.", MaxProjectGPUs)
	case len(in.Model) > 100 || strings.ContainsAny(in.Model, " \t\n"):
		errs["gpu.model"] = "A GPU model is the node label nvidia.com/gpu.product, e.g. NVIDIA-A100-SXM4-80GB."
	case in.Count == 0 && (in.Model != "" || in.ModelStorage):
		errs["gpu.count"] = "A model or the model storage needs at least one GPU."
	}
	p.GPU.V = *in
}

// GPURefusal says why a project's GPUs cannot deploy on a region before asking its
// cluster ("" when they may): the region has no GPU support, or no model storage for a
// project that mounts it.
func GPURefusal(r *store.Region, p *store.Project) string {
	want := p.GPU.V
	switch {
	case want.Count == 0:
		return ""
	case r.GPU.V.State() != store.ComponentReady:
		return fmt.Sprintf("%s asks for %d GPU(s) and region %s has no GPU support installed.", p.Slug, want.Count, r.Name)
	case want.ModelStorage && r.GPU.V.Storage.Status != store.ComponentReady:
		return fmt.Sprintf("%s mounts the model storage and region %s has none ready.", p.Slug, r.Name)
	}
	return ""
}

// Admission refuses a project that asks for more GPUs than the region has free (its
// own pods' GPUs count as free: a redeploy replaces them), naming the shortfall.
func (s *Service) Admission(ctx context.Context, r *store.Region, p *store.Project) error {
	want := p.GPU.V
	if want.Count == 0 {
		return nil
	}
	if why := GPURefusal(r, p); why != "" {
		return &problem.Refused{Reason: why}
	}
	c, err := s.RegionCluster(r)
	if err != nil {
		return err
	}
	rep, err := GPUs(ctx, c)
	if err != nil {
		return fmt.Errorf("GPU admission: %w", err)
	}
	own, err := c.Clientset.CoreV1().Pods(r.Name).List(ctx, metav1.ListOptions{LabelSelector: "runr.dev/project=" + p.ID})
	if err != nil {
		return fmt.Errorf("GPU admission: list the project's pods: %w", err)
	}
	free := rep.FreeOf(want.Model)
	for i := range own.Items {
		if n := own.Items[i].Spec.NodeName; want.Model == "" || nodeProduct(rep, n) == want.Model {
			free += podGPUs(&own.Items[i])
		}
	}
	if want.Count > free {
		what := "GPU(s)"
		if want.Model != "" {
			what = want.Model + " GPU(s)"
		}
		return &problem.Refused{Reason: fmt.Sprintf("%s asks for %d %s; region %s has %d free: %d short.", p.Slug, want.Count, what, r.Name, free, want.Count-free)}
	}
	return nil
}

func nodeProduct(rep GPUReport, node string) string {
	for _, n := range rep.Nodes {
		if n.Name == node {
			return n.Product
		}
	}
	return ""
}

// AddGPUs gives a project's pod its GPUs: the resource limit, the toleration of the GPU
// nodes' usual taint, a node selector on the model, and the model storage read-only.
func AddGPUs(podSpec, container map[string]any, g store.ProjectGPU) {
	if g.Count == 0 {
		return
	}
	res := container["resources"].(map[string]any)
	res["limits"] = map[string]any{GPUResource: fmt.Sprint(g.Count)}
	podSpec["tolerations"] = append(anyList(podSpec["tolerations"]), map[string]any{"key": GPUResource, "operator": "Exists", "effect": "NoSchedule"})
	if g.Model != "" {
		sel, _ := podSpec["nodeSelector"].(map[string]any)
		if sel == nil {
			sel = map[string]any{}
		}
		sel[GPUProductLabel] = g.Model
		podSpec["nodeSelector"] = sel
	}
	if g.ModelStorage {
		podSpec["volumes"] = []any{map[string]any{"name": "models", "persistentVolumeClaim": map[string]any{"claimName": ModelStorageClaim, "readOnly": true}}}
		container["volumeMounts"] = []any{map[string]any{"name": "models", "mountPath": ModelStoragePath, "readOnly": true}}
	}
}

func anyList(v any) []any {
	l, _ := v.([]any)
	return l
}
