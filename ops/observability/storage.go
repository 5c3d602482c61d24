package observability

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/store"
)

// RunR's defaults for the volumes and retentions of its own Prometheus, Loki and Tempo
// (the spec's table of them was lost: Prometheus keeps the chart's ten days, Loki a week,
// the age beyond which it refuses samples anyway).
const (
	DefaultPrometheusSizeGi        = 20
	DefaultLokiSizeGi              = 10
	DefaultTempoSizeGi             = 10
	DefaultPrometheusRetentionDays = 10
	DefaultLokiRetentionDays       = 7
	// MaxSizeGi and MaxRetentionDays bound what a region may ask for.
	MaxSizeGi        = 10240
	MaxRetentionDays = 3650
)

// Storage is where RunR's Prometheus, Loki and Tempo keep their data on a cluster, and
// for how long.
type Storage struct {
	// Persist: on PersistentVolumeClaims of Class ("" the cluster's default); else in
	// emptyDir volumes, lost when a pod moves (the cluster has no class that would bind).
	Persist bool
	Class   string
	// Sizes in GiB, retentions in days.
	PrometheusSizeGi, LokiSizeGi, TempoSizeGi  int
	PrometheusRetentionDays, LokiRetentionDays int
}

// StorageOf is a region's storage settings with RunR's defaults for those it has not set.
func StorageOf(m store.Monitoring, persist bool) Storage {
	or := func(v, def int) int {
		if v > 0 {
			return v
		}
		return def
	}
	return Storage{Persist: persist, Class: m.StorageClass,
		PrometheusSizeGi: or(m.PrometheusSizeGi, DefaultPrometheusSizeGi), LokiSizeGi: or(m.LokiSizeGi, DefaultLokiSizeGi),
		TempoSizeGi:             or(m.TempoSizeGi, DefaultTempoSizeGi),
		PrometheusRetentionDays: or(m.PrometheusRetentionDays, DefaultPrometheusRetentionDays),
		LokiRetentionDays:       or(m.LokiRetentionDays, DefaultLokiRetentionDays)}
}

// describe says where a release keeps its data, for the job's log.
func (st Storage) describe(release string) string {
	size, keep := st.PrometheusSizeGi, fmt.Sprintf(", kept %d days", st.PrometheusRetentionDays)
	switch release {
	case LokiRelease:
		size, keep = st.LokiSizeGi, fmt.Sprintf(", kept %d days", st.LokiRetentionDays)
	case TempoRelease:
		size, keep = st.TempoSizeGi, ""
	}
	if !st.Persist {
		return "data in an emptyDir volume" + keep
	}
	class := st.Class
	if class == "" {
		class = "the cluster's default class"
	}
	return fmt.Sprintf("data on a %d GiB volume of %s%s", size, class, keep)
}

// ErrNoStorageClass is a named StorageClass the cluster does not have.
type ErrNoStorageClass struct{ Class string }

func (e *ErrNoStorageClass) Error() string {
	return "the cluster has no StorageClass " + e.Class + ": name one it has in the region's Monitoring settings, or none for the cluster's default"
}

// ClusterStorage is a region's storage on its cluster: volumes where a class binds them
// (the one the region names, which must exist, or the cluster's default); without a
// default class the data lives in emptyDir volumes, and warning says so.
func ClusterStorage(ctx context.Context, c *kube.Cluster, m store.Monitoring) (st Storage, warning string, err error) {
	if m.StorageClass != "" {
		if _, err := c.Clientset.StorageV1().StorageClasses().Get(ctx, m.StorageClass, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return Storage{}, "", &ErrNoStorageClass{Class: m.StorageClass}
		} else if err != nil {
			return Storage{}, "", fmt.Errorf("read StorageClass %s: %w", m.StorageClass, err)
		}
		return StorageOf(m, true), "", nil
	}
	scs, err := c.Clientset.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return Storage{}, "", fmt.Errorf("list the StorageClasses: %w", err)
	}
	for _, sc := range scs.Items {
		if kube.IsDefaultStorageClass(&sc) {
			return StorageOf(m, true), "", nil
		}
	}
	return StorageOf(m, false), "the cluster has no default StorageClass: Prometheus, Loki and Tempo keep their data in emptyDir volumes, lost when their pods move; name a class in the region's Monitoring settings", nil
}

// replaceStatefulSetForVolumes deletes a chart's StatefulSet whose volume claims differ
// from those the chart will render, with the claims it made: Kubernetes refuses to change
// volumeClaimTemplates (Helm's upgrade would fail), and a StatefulSet made again would
// take the old claims of its name as they are, at the old size and class. The data on
// them is lost, and the job says so; the upgrade then creates the StatefulSet anew.
func replaceStatefulSetForVolumes(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, name string, want []corev1.PersistentVolumeClaim) error {
	api := c.Clientset.AppsV1().StatefulSets(ObservabilityNamespace)
	sts, err := api.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read StatefulSet %s/%s: %w", ObservabilityNamespace, name, err)
	}
	if sameClaims(sts.Spec.VolumeClaimTemplates, want) {
		return nil
	}
	// In the foreground: the StatefulSet is gone once its pods are, and with them the
	// claims' last users.
	fg := metav1.DeletePropagationForeground
	if err := api.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete StatefulSet %s/%s: %w", ObservabilityNamespace, name, err)
	}
	gone := func(ctx context.Context) (bool, string, error) {
		_, err := api.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, "its pods are stopping", err
	}
	if err := jc.Wait(ctx, "StatefulSet "+ObservabilityNamespace+"/"+name+" to be deleted", engine.WaitOpts{}, gone); err != nil {
		return err
	}
	if err := deleteClaims(ctx, jc, c, name, sts.Spec.VolumeClaimTemplates); err != nil {
		return err
	}
	jc.Logf("Deleted StatefulSet %s/%s to change its volumes (%s → %s): Kubernetes does not change a StatefulSet's volume claims in place; the upgrade creates it again",
		ObservabilityNamespace, name, claimsText(sts.Spec.VolumeClaimTemplates), claimsText(want))
	return nil
}

// deleteClaims deletes the claims a StatefulSet made from its templates
// (<template>-<statefulset>-<ordinal>) and waits until they are gone.
func deleteClaims(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, sts string, templates []corev1.PersistentVolumeClaim) error {
	api := c.Clientset.CoreV1().PersistentVolumeClaims(ObservabilityNamespace)
	list, err := api.List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list PersistentVolumeClaims of %s: %w", ObservabilityNamespace, err)
	}
	var names []string
	for _, pvc := range list.Items {
		for _, t := range templates {
			ordinal, ok := strings.CutPrefix(pvc.Name, t.Name+"-"+sts+"-")
			if _, err := strconv.Atoi(ordinal); ok && err == nil {
				names = append(names, pvc.Name)
			}
		}
	}
	for _, n := range names {
		if err := api.Delete(ctx, n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete PersistentVolumeClaim %s/%s: %w", ObservabilityNamespace, n, err)
		}
		gone := func(ctx context.Context) (bool, string, error) {
			_, err := api.Get(ctx, n, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, "", nil
			}
			return false, "still in use", err
		}
		if err := jc.Wait(ctx, "PersistentVolumeClaim "+ObservabilityNamespace+"/"+n+" to be deleted", engine.WaitOpts{}, gone); err != nil {
			return err
		}
		jc.Warnf("Deleted PersistentVolumeClaim %s/%s with the data on it: the new volumes start empty (Kubernetes moves no data between volumes)", ObservabilityNamespace, n)
	}
	return nil
}

// PrometheusStatefulSet is the StatefulSet the Prometheus operator makes for RunR's
// Prometheus (prometheus-<resource name>), and prometheusClaim its claim template's name
// (the operator's default, <statefulset>-db).
const (
	PrometheusStatefulSet = "prometheus-" + PrometheusRelease + "-kube-prometheus-st-prometheus"
	prometheusClaim       = PrometheusStatefulSet + "-db"
)

// dropPrometheusVolume makes way for a Prometheus volume of another size or class: the
// operator would make its StatefulSet again with the old claim. It scales the Prometheus
// to none (its resource's replicas) and deletes the claim once no pod uses it; restore
// sets the replicas back after the upgrade (Helm's patch of a custom resource leaves a
// field its chart did not change alone), and the operator then makes the new claim.
// Nothing to do (restore does nothing) when the volume stays or there was none.
func dropPrometheusVolume(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, st Storage) (restore func(context.Context) error, err error) {
	restore = func(context.Context) error { return nil }
	sts, err := c.Clientset.AppsV1().StatefulSets(ObservabilityNamespace).Get(ctx, PrometheusStatefulSet, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return restore, nil
	}
	if err != nil {
		return restore, fmt.Errorf("read StatefulSet %s/%s: %w", ObservabilityNamespace, PrometheusStatefulSet, err)
	}
	want := chartClaims(st.Persist, st.Class, st.PrometheusSizeGi)
	if len(want) == 1 {
		want[0].Name = prometheusClaim
	}
	if len(sts.Spec.VolumeClaimTemplates) == 0 || sameClaims(sts.Spec.VolumeClaimTemplates, want) {
		return restore, nil
	}
	name := PrometheusRelease + "-kube-prometheus-st-prometheus"
	scale := func(ctx context.Context, n int64) error {
		_, err := c.Apply(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
			"metadata": map[string]any{"name": name, "namespace": ObservabilityNamespace}, "spec": map[string]any{"replicas": n}}})
		if err != nil {
			return fmt.Errorf("scale Prometheus %s/%s to %d: %w", ObservabilityNamespace, name, n, err)
		}
		return nil
	}
	replicas := int64(1)
	if sts.Spec.Replicas != nil && *sts.Spec.Replicas > 0 {
		replicas = int64(*sts.Spec.Replicas)
	}
	if err := scale(ctx, 0); err != nil {
		return restore, err
	}
	restore = func(ctx context.Context) error { return scale(ctx, replicas) }
	stopped := func(ctx context.Context) (bool, string, error) {
		pods, err := c.Clientset.CoreV1().Pods(ObservabilityNamespace).List(ctx, metav1.ListOptions{LabelSelector: "operator.prometheus.io/name=" + name})
		if err != nil {
			return false, "", err
		}
		return len(pods.Items) == 0, fmt.Sprintf("%d pod(s) left", len(pods.Items)), nil
	}
	if err := jc.Wait(ctx, "Prometheus's pods to stop (its volume changes)", engine.WaitOpts{}, stopped); err != nil {
		return restore, err
	}
	return restore, deleteClaims(ctx, jc, c, PrometheusStatefulSet, sts.Spec.VolumeClaimTemplates)
}

// sameClaims compares volume claims by name, size and class.
func sameClaims(got, want []corev1.PersistentVolumeClaim) bool {
	return slices.Equal(claimKeys(got), claimKeys(want))
}

func claimKeys(cs []corev1.PersistentVolumeClaim) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		class := ""
		if c.Spec.StorageClassName != nil {
			class = *c.Spec.StorageClassName
		}
		size := c.Spec.Resources.Requests[corev1.ResourceStorage]
		out[i] = c.Name + "/" + size.String() + "/" + class
	}
	return out
}

func claimsText(cs []corev1.PersistentVolumeClaim) string {
	if len(cs) == 0 {
		return "emptyDir"
	}
	return fmt.Sprint(claimKeys(cs))
}
