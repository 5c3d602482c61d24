package observability

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
// from those the chart will render (Kubernetes refuses to change volumeClaimTemplates, so
// Helm's upgrade would fail); the upgrade then creates it again. Claims made before stay,
// and a StatefulSet of the same claim name and size binds them again.
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
	if err := api.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete StatefulSet %s/%s: %w", ObservabilityNamespace, name, err)
	}
	gone := func(ctx context.Context) (bool, string, error) {
		_, err := api.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, "still there", err
	}
	if err := jc.Wait(ctx, "StatefulSet "+ObservabilityNamespace+"/"+name+" to be deleted", engine.WaitOpts{}, gone); err != nil {
		return err
	}
	jc.Logf("Deleted StatefulSet %s/%s to change its volumes (%s → %s): Kubernetes does not change a StatefulSet's volume claims in place; the upgrade creates it again",
		ObservabilityNamespace, name, claimsText(sts.Spec.VolumeClaimTemplates), claimsText(want))
	return nil
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
