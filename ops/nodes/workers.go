package nodes

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/problem"
	"runr.dev/console/store"
)

// Dedicated workers carry this label and taint.
const (
	DedicatedKey    = "runr.dev/dedicated"
	DedicatedValue  = "projects"
	KnativeWorkerRL = "node-role.kubernetes.io/knative-worker"
)

// DedicatedTaint keeps everything but projects off the dedicated workers.
var DedicatedTaint = corev1.Taint{Key: DedicatedKey, Value: DedicatedValue, Effect: corev1.TaintEffectNoSchedule}

// ApplyWorkers labels and taints the selected nodes and removes both from the nodes of
// the previous selection that are no longer selected (other regions' workers on the same
// cluster are left alone). It returns the selected nodes that exist.
func ApplyWorkers(ctx context.Context, c *kube.Cluster, selected, previous []string) ([]string, error) {
	want := map[string]bool{}
	for _, n := range selected {
		want[n] = true
	}
	was := map[string]bool{}
	for _, n := range previous {
		was[n] = true
	}
	nodes, err := c.Clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	var exist []string
	for _, n := range nodes.Items {
		dedicated := n.Labels[DedicatedKey] == DedicatedValue && hasTaint(&n, DedicatedTaint)
		switch {
		case want[n.Name]:
			exist = append(exist, n.Name)
			if dedicated {
				continue
			}
			if err := setDedicated(ctx, c, n.Name, true); err != nil {
				return exist, err
			}
		case was[n.Name]:
			if err := setDedicated(ctx, c, n.Name, false); err != nil {
				return exist, err
			}
		}
	}
	return exist, nil
}

func setDedicated(ctx context.Context, c *kube.Cluster, name string, on bool) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.Clientset.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		var taints []corev1.Taint
		for _, t := range n.Spec.Taints {
			if t.Key != DedicatedKey {
				taints = append(taints, t)
			}
		}
		if on {
			n.Labels[DedicatedKey] = DedicatedValue
			n.Labels[KnativeWorkerRL] = ""
			taints = append(taints, DedicatedTaint)
		} else {
			delete(n.Labels, DedicatedKey)
			delete(n.Labels, KnativeWorkerRL)
		}
		n.Spec.Taints = taints
		_, err = c.Clientset.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{FieldManager: kube.FieldManager})
		if err != nil {
			return fmt.Errorf("update node %s: %w", name, err)
		}
		return nil
	})
}

// belowFloor names the selected nodes that fail the preflight floor with their failed
// checks and evidence ("" when every one passes).
func belowFloor(cluster []corev1.Node, sel []string, minMinor int) string {
	var parts []string
	for i := range cluster {
		if !slices.Contains(sel, cluster[i].Name) {
			continue
		}
		if failed := FloorFailures(&cluster[i], minMinor); failed != "" {
			parts = append(parts, cluster[i].Name+" fails "+failed)
		}
	}
	return strings.Join(parts, "; ")
}

// FloorFailures names a node's failed preflight checks with their evidence ("" when it
// meets the floor).
func FloorFailures(n *corev1.Node, minMinor int) string {
	var failed []string
	for _, it := range Preflight(n, minMinor) {
		if it.Status == kit.CheckFail {
			failed = append(failed, it.Title+": "+it.Evidence)
		}
	}
	return strings.Join(failed, "; ")
}

// SelectedBelowFloor names the selected nodes of a cluster check that fail the floor,
// with their failed checks ("" when every one meets it).
func SelectedBelowFloor(sel []string, found []kit.NodeInfo) string {
	var parts []string
	for _, n := range found {
		if n.BelowFloor != "" && slices.Contains(sel, n.Name) {
			parts = append(parts, n.Name+" fails "+n.BelowFloor)
		}
	}
	return strings.Join(parts, "; ")
}

func hasTaint(n *corev1.Node, t corev1.Taint) bool {
	for _, x := range n.Spec.Taints {
		if x.Key == t.Key && x.Value == t.Value && x.Effect == t.Effect {
			return true
		}
	}
	return false
}

// ClusterReadTimeout bounds the cluster reads a request makes (nodes, capacity).
const ClusterReadTimeout = 15 * time.Second

// WorkersInput is the body of PUT /api/knative-regions/{id}/workers: the node names to
// dedicate ([] clears the selection). A node that fails the preflight floor is dedicated
// only with ConfirmBelowFloor.
type WorkersInput struct {
	Nodes             *[]string `json:"nodes"`
	ConfirmBelowFloor bool      `json:"confirm_below_floor"`
}

// SetWorkers checks a selection of dedicated workers against the cluster's nodes and
// queues the job that labels and taints them (and clears the deselected ones).
func (s *Service) SetWorkers(ctx context.Context, actor kit.Actor, r *store.Region, in WorkersInput) (*store.Job, error) {
	if in.Nodes == nil {
		return nil, &problem.Invalid{Fields: map[string]string{"nodes": "Send nodes, the list of node names to dedicate ([] clears the selection)."}}
	}
	sel := []string{}
	seen := map[string]bool{}
	for _, n := range *in.Nodes {
		n = strings.TrimSpace(n)
		if n != "" && !seen[n] {
			seen[n] = true
			sel = append(sel, n)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, ClusterReadTimeout)
	defer cancel()
	cluster, err := s.clusterNodes(cctx, r)
	if err != nil {
		return nil, &problem.Unreachable{Region: r.Name, Err: err}
	}
	nodes := make([]kit.NodeInfo, len(cluster))
	for i, n := range cluster {
		nodes[i] = kit.NodeInfo{Name: n.Name}
	}
	if m := NodesExist(sel, nodes); m != "" {
		return nil, &problem.Invalid{Fields: map[string]string{"nodes": m}}
	}
	if why := belowFloor(cluster, sel, s.Cfg.MinK8sMinor); why != "" && !in.ConfirmBelowFloor {
		return nil, &problem.Invalid{Summary: "A node you selected fails the preflight floor.",
			Fields: map[string]string{"confirm_below_floor": why + ". Confirm to dedicate it anyway."}}
	}
	title := "Dedicated workers of " + r.Name
	if len(sel) == 0 {
		title = "Clear the dedicated workers of " + r.Name
	}
	j, err := s.Enqueue(ctx, engine.Request{Kind: KindApplyWorkers, Title: title,
		Subject: r.ID, Params: WorkersParams{Nodes: sel}, CreatedBy: actor.Email})
	if err != nil {
		return nil, err
	}
	s.Log.Info("dedicated workers changed", "region", r.Name, "from", []string(r.Nodes), "to", sel, "user", actor.Email)
	return j, nil
}

// RemoveWorker takes one node out of the region's dedicated workers.
func (s *Service) RemoveWorker(ctx context.Context, actor kit.Actor, r *store.Region, node string) (*store.Job, error) {
	keep := []string{}
	found := false
	for _, n := range r.Nodes {
		if n == node {
			found = true
		} else {
			keep = append(keep, n)
		}
	}
	if !found {
		return nil, &problem.Refused{Reason: node + " is not one of the region's dedicated workers."}
	}
	return s.Enqueue(ctx, engine.Request{Kind: KindApplyWorkers, Title: "Remove " + node + " from the dedicated workers of " + r.Name,
		Subject: r.ID, Params: WorkersParams{Nodes: keep}, CreatedBy: actor.Email})
}

// OvercommitInput is the body of PUT /api/knative-regions/{id}/overcommit: only the keys sent change.
type OvercommitInput struct {
	CPU    *float64 `json:"faas_cpu_overcommit"`
	Memory *float64 `json:"faas_memory_overcommit"`
}

// SetOvercommit saves the region's FaaS overcommit factors; the next admission uses them.
func (s *Service) SetOvercommit(ctx context.Context, actor kit.Actor, r *store.Region, in OvercommitInput) error {
	if err := problem.FromFields(validateOvercommit(in)); err != nil {
		return err
	}
	if err := s.Store.SetOvercommit(ctx, r.ID, in.CPU, in.Memory); err != nil {
		return fmt.Errorf("overcommit of %s: %w", r.Name, err)
	}
	s.Log.Info("overcommit changed", "region", r.Name, "cpu", in.CPU, "memory", in.Memory, "user", actor.Email)
	return nil
}

// WorkersParams select a region's dedicated workers.
type WorkersParams struct {
	Nodes []string `json:"nodes"`
}

// KindApplyWorkers labels and taints a region's dedicated workers.
const KindApplyWorkers = "apply-workers"

// registerWorkersKind registers KindApplyWorkers.
func (s *Service) registerWorkersKind() {
	s.Engine.Register(&engine.Kind{Name: KindApplyWorkers, Plan: engine.PlanWith(func(p WorkersParams) []engine.Step {
		return []engine.Step{s.WorkersStep(p)}
	})})
}

// WorkersStep labels and taints the region's dedicated workers p.Nodes and takes the
// labels off the nodes that are no longer among them (a step of KindApplyWorkers and of
// a new region's first job).
func (s *Service) WorkersStep(p WorkersParams) engine.Step {
	return s.RegionStep("workers", "Dedicated workers", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
		exist, err := ApplyWorkers(ctx, c, p.Nodes, r.Nodes)
		if err != nil {
			return err
		}
		if len(p.Nodes) == 0 {
			jc.Note("No dedicated workers: projects run on every schedulable node")
		} else {
			jc.Note("Dedicated workers: %v (label and taint %s=%s:NoSchedule)", exist, DedicatedKey, DedicatedValue)
		}
		return s.Store.SetRegionNodes(ctx, r.ID, exist)
	})
}
