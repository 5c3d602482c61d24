package kube

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Cond is a wait condition: done, and a detail of the current state.
type Cond func(ctx context.Context) (bool, string, error)

// Judging waits for the object get reads by name: one not created yet is waited for, one
// found is judged.
func Judging[T any](get func(context.Context, string, metav1.GetOptions) (T, error), name string, judge func(T) (bool, string, error)) Cond {
	return func(ctx context.Context) (bool, string, error) {
		o, err := get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, "not created yet", nil
		}
		if err != nil {
			return false, "", err
		}
		return judge(o)
	}
}

// Infallible is a judgement that cannot fail, as Judging takes it.
func Infallible[T any](judge func(T) (bool, string)) func(T) (bool, string, error) {
	return func(o T) (bool, string, error) {
		ok, detail := judge(o)
		return ok, detail, nil
	}
}

// ResourceJudged waits for a custom resource: one not created yet is waited for, one found
// is judged.
func (c *Cluster) ResourceJudged(gvk schema.GroupVersionKind, ns, name string, judge func(*unstructured.Unstructured) (bool, string, error)) Cond {
	return func(ctx context.Context) (bool, string, error) {
		o, found, err := c.Get(ctx, gvk, ns, name)
		if err != nil || !found {
			return false, "not created yet", err
		}
		return judge(o)
	}
}

// DeploymentAvailable waits for every replica of a Deployment to be updated and available.
func (c *Cluster) DeploymentAvailable(ns, name string) Cond {
	return Judging(c.Clientset.AppsV1().Deployments(ns).Get, name, Infallible(DeploymentReady))
}

// DeploymentReady judges a Deployment from its status.
func DeploymentReady(d *appsv1.Deployment) (bool, string) {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	st := d.Status
	detail := fmt.Sprintf("%d of %d replicas available", min(st.AvailableReplicas, want), want)
	if old := st.Replicas - st.UpdatedReplicas; st.Replicas > want && old > 0 {
		// A rollout: old replicas still run beside the new ones.
		detail += fmt.Sprintf(" (rollout: %d old replica(s) still stopping)", old)
	}
	if st.ObservedGeneration < d.Generation {
		return false, "rollout not observed yet"
	}
	return st.UpdatedReplicas >= want && st.AvailableReplicas >= want && st.Replicas <= want+st.UnavailableReplicas, detail
}

// DaemonSetReady waits for a DaemonSet to run ready on every node it targets.
func (c *Cluster) DaemonSetReady(ns, name string) Cond {
	return Judging(c.Clientset.AppsV1().DaemonSets(ns).Get, name, Infallible(DaemonSetIsReady))
}

// DaemonSetIsReady judges a DaemonSet from its status.
func DaemonSetIsReady(d *appsv1.DaemonSet) (bool, string) {
	st := d.Status
	detail := fmt.Sprintf("%d/%d nodes ready", st.NumberReady, st.DesiredNumberScheduled)
	if st.ObservedGeneration < d.Generation {
		return false, "rollout not observed yet"
	}
	return st.NumberReady >= st.DesiredNumberScheduled && st.UpdatedNumberScheduled >= st.DesiredNumberScheduled, detail
}

// StatefulSetReady waits for a StatefulSet's replicas to be ready.
func (c *Cluster) StatefulSetReady(ns, name string) Cond {
	return Judging(c.Clientset.AppsV1().StatefulSets(ns).Get, name, Infallible(StatefulSetIsReady))
}

// PVCBound waits for a PersistentVolumeClaim to bind.
func (c *Cluster) PVCBound(ns, name string) Cond {
	return Judging(c.Clientset.CoreV1().PersistentVolumeClaims(ns).Get, name, func(p *corev1.PersistentVolumeClaim) (bool, string, error) {
		return p.Status.Phase == corev1.ClaimBound, "phase " + string(p.Status.Phase), nil
	})
}

// LoadBalancerAddress waits for a Service to get an external address and stores it in addr.
func (c *Cluster) LoadBalancerAddress(ns, name string, addr *string) Cond {
	return Judging(c.Clientset.CoreV1().Services(ns).Get, name, func(s *corev1.Service) (bool, string, error) {
		if a := ServiceAddress(s); a != "" {
			*addr = a
			return true, a, nil
		}
		return false, "no address assigned yet: does the cluster have a load-balancer implementation?", nil
	})
}

// NodeAddress is a node's external IP address, else its internal one.
func NodeAddress(n *corev1.Node) string {
	for _, t := range []corev1.NodeAddressType{corev1.NodeExternalIP, corev1.NodeInternalIP} {
		for _, a := range n.Status.Addresses {
			if a.Type == t && a.Address != "" {
				return a.Address
			}
		}
	}
	return ""
}

// PodReady reports a pod's Ready condition.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// NodeReady waits for a node to report Ready with a fresh heartbeat.
func (c *Cluster) NodeReady(name string) Cond {
	return func(ctx context.Context) (bool, string, error) {
		n, err := c.Clientset.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", fmt.Errorf("read node %s: %w", name, err)
		}
		state, _ := NodeHeartbeat(n, c.NodeLeaseRenewal(ctx, name), time.Now())
		return state == NodeReadyState, string(state), nil
	}
}

// NamespaceGone waits for a namespace to be deleted; the detail says what phase it is in.
func (c *Cluster) NamespaceGone(name string) Cond {
	return func(ctx context.Context) (bool, string, error) {
		ns, err := c.Clientset.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		if err != nil {
			return false, "", err
		}
		detail := "phase " + string(ns.Status.Phase)
		for _, cd := range ns.Status.Conditions {
			if cd.Status == corev1.ConditionTrue && cd.Message != "" {
				detail += "; " + cd.Message
			}
		}
		return false, detail, nil
	}
}

// ServiceAddress returns the first external IP or host name of a LoadBalancer Service.
func ServiceAddress(s *corev1.Service) string {
	for _, in := range s.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			return in.IP
		}
		if in.Hostname != "" {
			return in.Hostname
		}
	}
	return ""
}

// JobComplete waits for a Job to succeed; a failed Job is an error with its reason.
func (c *Cluster) JobComplete(ns, name string) Cond {
	return Judging(c.Clientset.BatchV1().Jobs(ns).Get, name, func(j *batchv1.Job) (bool, string, error) {
		for _, cd := range j.Status.Conditions {
			if cd.Type == batchv1.JobFailed && cd.Status == corev1.ConditionTrue {
				return false, "", fmt.Errorf("Job %s/%s failed: %s", ns, name, cd.Message)
			}
		}
		return j.Status.Succeeded > 0, fmt.Sprintf("%d active, %d succeeded", j.Status.Active, j.Status.Succeeded), nil
	})
}

// CRDEstablished waits for a CustomResourceDefinition to be established.
func (c *Cluster) CRDEstablished(name string) Cond {
	return Judging(c.APIExt.ApiextensionsV1().CustomResourceDefinitions().Get, name, func(crd *apiextv1.CustomResourceDefinition) (bool, string, error) {
		for _, cd := range crd.Status.Conditions {
			if cd.Type == apiextv1.Established && cd.Status == apiextv1.ConditionTrue {
				return true, "established", nil
			}
		}
		return false, "not established yet", nil
	})
}

// CRDsEstablished waits for CustomResourceDefinitions to be established; its detail
// names the first one that is not.
func (c *Cluster) CRDsEstablished(names []string) Cond {
	return func(ctx context.Context) (bool, string, error) {
		for _, n := range names {
			done, detail, err := c.CRDEstablished(n)(ctx)
			if err != nil || !done {
				return false, n + ": " + detail, err
			}
		}
		return true, "established", nil
	}
}

// ReadyCondition reads the Ready condition of a custom resource: status and message.
func ReadyCondition(o *unstructured.Unstructured) (bool, string) {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != "Ready" {
			continue
		}
		msg, _ := m["message"].(string)
		return m["status"] == "True", msg
	}
	return false, "no Ready condition reported yet"
}
