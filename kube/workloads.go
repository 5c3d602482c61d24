package kube

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Workload is a workload a Helm release contains (Deployment, StatefulSet, DaemonSet),
// or a custom resource an operator turns into workloads (a Prometheus or an
// Alertmanager of the Prometheus operator). Status is judged from these, read from the
// release's own manifest, never from guessed names.
type Workload struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func (w Workload) String() string { return w.Kind + " " + objName(w.Namespace, w.Name) }

// OperatorKinds are the custom resources whose workloads an operator creates: they are
// judged by the resource's Available condition, as the operator reports it.
var OperatorKinds = map[string]schema.GroupVersionKind{
	"Prometheus":   {Group: "monitoring.coreos.com", Version: "v1", Kind: "Prometheus"},
	"Alertmanager": {Group: "monitoring.coreos.com", Version: "v1", Kind: "Alertmanager"},
}

// ReleaseWorkloads lists the workloads of a release's manifest, in manifest order. An
// object without a namespace is in the release's.
func ReleaseWorkloads(manifest, releaseNS string) ([]Workload, error) {
	objs, err := DecodeYAML([]byte(manifest))
	if err != nil {
		return nil, fmt.Errorf("read the release manifest: %w", err)
	}
	var out []Workload
	for _, o := range objs {
		switch k := o.GetKind(); k {
		case "Deployment", "StatefulSet", "DaemonSet", "Prometheus", "Alertmanager":
			ns := o.GetNamespace()
			if ns == "" {
				ns = releaseNS
			}
			out = append(out, Workload{Kind: k, Namespace: ns, Name: o.GetName()})
		}
	}
	return out, nil
}

// WorkloadReady waits for one workload to be ready.
func (c *Cluster) WorkloadReady(w Workload) Cond {
	switch w.Kind {
	case "Deployment":
		return c.DeploymentAvailable(w.Namespace, w.Name)
	case "StatefulSet":
		return c.StatefulSetReady(w.Namespace, w.Name)
	case "DaemonSet":
		return c.DaemonSetReady(w.Namespace, w.Name)
	}
	gvk, ok := OperatorKinds[w.Kind]
	if !ok {
		return func(context.Context) (bool, string, error) {
			return false, "", fmt.Errorf("no readiness check for %s", w)
		}
	}
	return c.ResourceJudged(gvk, w.Namespace, w.Name, Infallible(OperatorResourceAvailable))
}

// OperatorResourceAvailable judges a Prometheus or Alertmanager from the Available
// condition its operator reports.
func OperatorResourceAvailable(o *unstructured.Unstructured) (bool, string) {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != "Available" {
			continue
		}
		msg, _ := m["message"].(string)
		if msg == "" {
			msg, _ = m["reason"].(string)
		}
		if m["status"] == "True" {
			return true, "available"
		}
		return false, "not available: " + msg
	}
	return false, "its operator has reported no Available condition yet"
}

// StatefulSetIsReady judges a StatefulSet from its status.
func StatefulSetIsReady(s *appsv1.StatefulSet) (bool, string) {
	want := int32(1)
	if s.Spec.Replicas != nil {
		want = *s.Spec.Replicas
	}
	if s.Status.ObservedGeneration < s.Generation {
		return false, "rollout not observed yet"
	}
	return s.Status.ReadyReplicas >= want, fmt.Sprintf("%d/%d replicas ready", s.Status.ReadyReplicas, want)
}
