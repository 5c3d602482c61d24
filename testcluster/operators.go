package testcluster

import (
	"context"
	"fmt"
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

// kwok runs no controllers for custom resources, so the harness simulates the two
// operators whose workloads the console meets: the Knative Operator (knativeop.go) and
// the Prometheus operator (promop.go). Each runs a reconcile loop every 500 ms for the
// life of the cluster, and acts only while its operator's Deployment is available on the
// cluster, as the real operators do.
const operatorPeriod = 500 * time.Millisecond

// runOperator calls reconcile every operatorPeriod until the cluster stops, logging an
// error once until it changes.
func (c *Cluster) runOperator(name string, reconcile func(ctx context.Context, dyn dynamic.Interface) error) {
	defer c.wg.Done()
	dyn, err := dynamic.NewForConfig(c.REST)
	if err != nil {
		c.log("testcluster: %s: %v", name, err)
		return
	}
	t := time.NewTicker(operatorPeriod)
	defer t.Stop()
	last := ""
	for {
		select {
		case <-c.stopCh:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := reconcile(ctx, dyn)
		cancel()
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if msg != last && msg != "" {
			select {
			case <-c.stopCh:
				return
			default:
				c.log("testcluster: simulated %s: %s", name, msg)
			}
		}
		last = msg
	}
}

// availableDeployment returns an available Deployment matching a label selector (and a
// name when name is not ""), in any namespace.
func (c *Cluster) availableDeployment(ctx context.Context, selector, name string) (*appsv1.Deployment, error) {
	ds, err := c.Client.AppsV1().Deployments("").List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("list Deployments %s: %w", selector, err)
	}
	for i := range ds.Items {
		d := &ds.Items[i]
		if (name == "" || d.Name == name) && d.DeletionTimestamp == nil && deploymentAvailable(d) {
			return d, nil
		}
	}
	return nil, nil
}

// deploymentAvailable reports the Deployment's Available condition, as both operators read it.
func deploymentAvailable(d *appsv1.Deployment) bool {
	for _, cd := range d.Status.Conditions {
		if cd.Type == appsv1.DeploymentAvailable && cd.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// condition is one entry of a custom resource's status.conditions.
type condition struct {
	Type, Status, Reason, Message string
	ObservedGeneration            int64 // written only when not 0
}

// setConditions writes conditions into status, keeping the lastTransitionTime of a
// condition whose status did not change.
func setConditions(status map[string]any, conds []condition) {
	old := map[string]map[string]any{}
	prev, _, _ := unstructured.NestedSlice(status, "conditions")
	for _, p := range prev {
		if m, ok := p.(map[string]any); ok {
			old[fmt.Sprint(m["type"])] = m
		}
	}
	now := time.Now().UTC().Format(time.RFC3339)
	out := make([]any, 0, len(conds))
	for _, cd := range conds {
		m := map[string]any{"type": cd.Type, "status": cd.Status, "lastTransitionTime": now}
		if cd.Reason != "" {
			m["reason"] = cd.Reason
		}
		if cd.Message != "" {
			m["message"] = cd.Message
		}
		if cd.ObservedGeneration != 0 {
			m["observedGeneration"] = cd.ObservedGeneration
		}
		if o, ok := old[cd.Type]; ok && o["status"] == cd.Status {
			m["lastTransitionTime"] = o["lastTransitionTime"]
		}
		out = append(out, m)
	}
	status["conditions"] = out
}

// updateStatus writes a custom resource's status when it differs from the stored one.
func updateStatus(ctx context.Context, ri dynamic.ResourceInterface, o *unstructured.Unstructured, status map[string]any) error {
	old, _, _ := unstructured.NestedMap(o.Object, "status")
	if reflect.DeepEqual(normalize(old), normalize(status)) {
		return nil
	}
	o = o.DeepCopy()
	o.Object["status"] = status
	if _, err := ri.UpdateStatus(ctx, o, metav1.UpdateOptions{FieldManager: "runr-testcluster"}); err != nil {
		return fmt.Errorf("update status of %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
	}
	return nil
}

// normalize makes numbers comparable across JSON round trips (int64 vs float64).
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	case int:
		return float64(x)
	case int32:
		return float64(x)
	case int64:
		return float64(x)
	default:
		return v
	}
}

// runsOnRealNode reports whether a Deployment's pods run on the real node: a real program
// then does what a simulated operator would.
func (c *Cluster) runsOnRealNode(ctx context.Context, d *appsv1.Deployment) (bool, error) {
	if c.real == nil || d.Spec.Selector == nil {
		return false, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return false, err
	}
	pods, err := c.Client.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return false, fmt.Errorf("list the pods of %s/%s: %w", d.Namespace, d.Name, err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == RealNodeName {
			return true, nil
		}
	}
	return false, nil
}
