package kit

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"runr.dev/console/engine"
	"runr.dev/console/kube"
)

// ManagedLabels mark what the console created.
func ManagedLabels(extra map[string]string) map[string]string {
	l := map[string]string{"app.kubernetes.io/managed-by": "runr"}
	for k, v := range extra {
		l[k] = v
	}
	return l
}

// EnsureNamespace creates a namespace the console owns (labels merged into an existing
// one). A namespace still being deleted (a removal just before) is waited for, then
// created again.
func EnsureNamespace(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, name string, labels map[string]string) (created bool, err error) {
	ns, err := c.Clientset.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if err == nil && ns.DeletionTimestamp != nil {
		jc.Logf("Namespace %s is being deleted: it is created again once it is gone", name)
		if err := jc.Wait(ctx, "namespace "+name+" to finish terminating", engine.WaitOpts{Hint: "something in the namespace holds a finalizer: look at what is left in it"}, c.NamespaceGone(name)); err != nil {
			return false, err
		}
		err = apierrors.NewNotFound(corev1.Resource("namespaces"), name)
	}
	if err == nil {
		if len(labels) > 0 {
			_, err = c.ApplyObject(ctx, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name, "labels": ToAnyMap(labels)}})
		}
		return false, err
	}
	if !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("read namespace %s: %w", name, err)
	}
	_, err = c.ApplyObject(ctx, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name, "labels": ToAnyMap(ManagedLabels(labels))}})
	return err == nil, err
}

// DeleteNamespace deletes a namespace and waits, a named wait, until it is gone: the
// next install into it would otherwise meet a terminating namespace.
func DeleteNamespace(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, name string) error {
	if err := c.Clientset.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete namespace %s: %w", name, err)
	}
	return jc.Wait(ctx, "namespace "+name+" to be deleted", engine.WaitOpts{Hint: "something in the namespace holds a finalizer: look at what is left in it, then Retry"}, c.NamespaceGone(name))
}

func ToAnyMap(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// WaitRelease waits, one named wait each, for the workloads a Helm release contains and
// the custom resources its operator turns into workloads.
func WaitRelease(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, rel *release.Release, o engine.WaitOpts) error {
	ws, err := kube.ReleaseWorkloads(rel.Manifest, rel.Namespace)
	if err != nil {
		return err
	}
	for _, w := range ws {
		what := w.String() + " to be ready"
		if _, ok := kube.OperatorKinds[w.Kind]; ok {
			what = w.String() + " to be available (its operator creates the workload)"
		}
		if err := jc.Wait(ctx, what, o, c.WorkloadReady(w)); err != nil {
			return err
		}
	}
	return nil
}

// runSteps runs another job's steps inside this one (idempotent, they adopt what exists).
func RunInline(ctx context.Context, jc *engine.JobContext, steps []engine.Step) error {
	for _, st := range steps {
		jc.Logf("— %s", st.Title)
		if err := st.Run(ctx, jc); err != nil && !errors.Is(err, engine.ErrSkip) {
			return fmt.Errorf("%s: %w", st.Title, err)
		}
	}
	return nil
}

// OrNoneList joins a list with commas, or says "none".
func OrNoneList(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

// OrV is s, or def when s is empty.
func OrV(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// DeleteSecret deletes a Secret; a missing one is not an error.
func DeleteSecret(ctx context.Context, c *kube.Cluster, ns, name string) error {
	if err := c.Clientset.CoreV1().Secrets(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Secret %s/%s: %w", ns, name, err)
	}
	return nil
}

func SortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func OrDefault[T ~string](s, def T) T {
	if s == "" {
		return def
	}
	return s
}

// UnprivilegedPod and UnprivilegedContainer are the security contexts of the console's
// Deployments in a region (the agent, the status responder, the domain alias proxy): the
// agent image runs as root for the node helpers, these need nothing of the kind.
func UnprivilegedPod() map[string]any {
	return map[string]any{"runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532, "seccompProfile": map[string]any{"type": "RuntimeDefault"}}
}

func UnprivilegedContainer() map[string]any {
	return map[string]any{"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true, "capabilities": map[string]any{"drop": []any{"ALL"}}}
}
