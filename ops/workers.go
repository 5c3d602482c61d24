package ops

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"runr.dev/console/kube"
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

func hasTaint(n *corev1.Node, t corev1.Taint) bool {
	for _, x := range n.Spec.Taints {
		if x.Key == t.Key && x.Value == t.Value && x.Effect == t.Effect {
			return true
		}
	}
	return false
}
