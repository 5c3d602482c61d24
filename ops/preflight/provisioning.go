package preflight

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/kube"
)

// Provisioning says whether a StorageClass's provisioner makes volumes, as far as the
// cluster shows it without creating anything.
type Provisioning string

// Provisioning states: it makes volumes, it does not, or the cluster does not tell.
const (
	ProvisioningYes     Provisioning = "yes"
	ProvisioningNo      Provisioning = "no"
	ProvisioningUnknown Provisioning = "unknown"
)

// noProvisioner is the provisioner of classes whose volumes are created beforehand.
const noProvisioner = "kubernetes.io/no-provisioner"

// stuckAfter is how long an unbound claim of a class that binds at once waits before
// its provisioner counts as not running.
const stuckAfter = time.Minute

// volumeEvidence is what the cluster shows of its provisioners: the volumes they made,
// the claims that wait, and the CSI drivers with the nodes they are registered on.
type volumeEvidence struct {
	volumes  []corev1.PersistentVolume
	claims   []corev1.PersistentVolumeClaim
	drivers  map[string]bool
	csiNodes map[string]int
}

// readVolumeEvidence lists what provisioning shows (a sample of at most 1,000 of each).
func readVolumeEvidence(ctx context.Context, c *kube.Cluster) (volumeEvidence, error) {
	ev := volumeEvidence{drivers: map[string]bool{}, csiNodes: map[string]int{}}
	sample := metav1.ListOptions{Limit: 1000}
	pvs, err := c.Clientset.CoreV1().PersistentVolumes().List(ctx, sample)
	if err != nil {
		return ev, fmt.Errorf("list PersistentVolumes: %w", err)
	}
	pvcs, err := c.Clientset.CoreV1().PersistentVolumeClaims("").List(ctx, sample)
	if err != nil {
		return ev, fmt.Errorf("list PersistentVolumeClaims: %w", err)
	}
	drivers, err := c.Clientset.StorageV1().CSIDrivers().List(ctx, sample)
	if err != nil {
		return ev, fmt.Errorf("list CSIDrivers: %w", err)
	}
	nodes, err := c.Clientset.StorageV1().CSINodes().List(ctx, sample)
	if err != nil {
		return ev, fmt.Errorf("list CSINodes: %w", err)
	}
	ev.volumes, ev.claims = pvs.Items, pvcs.Items
	for _, d := range drivers.Items {
		ev.drivers[d.Name] = true
	}
	for _, n := range nodes.Items {
		for _, d := range n.Spec.Drivers {
			ev.csiNodes[d.Name]++
		}
	}
	return ev, nil
}

// provisioning judges a StorageClass by the evidence, with a sentence that says why.
// A claim stuck for a minute outweighs volumes made before (the provisioner may have
// stopped since).
func provisioning(sc storagev1.StorageClass, ev volumeEvidence, now time.Time) (Provisioning, string) {
	p := sc.Provisioner
	if p == noProvisioner {
		return ProvisioningNo, "no dynamic provisioning (" + noProvisioner + "): its volumes must be created beforehand"
	}
	immediate := sc.VolumeBindingMode == nil || *sc.VolumeBindingMode == storagev1.VolumeBindingImmediate
	stuck, oldest := 0, ""
	var oldestAge time.Duration
	for _, pvc := range ev.claims {
		if pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != sc.Name || pvc.Status.Phase != corev1.ClaimPending || !immediate {
			continue
		}
		if age := now.Sub(pvc.CreationTimestamp.Time); age >= stuckAfter {
			stuck++
			if age > oldestAge {
				oldestAge, oldest = age, pvc.Namespace+"/"+pvc.Name
			}
		}
	}
	if stuck > 0 {
		return ProvisioningNo, fmt.Sprintf("%d claim(s) of this class have waited over a minute for a volume (oldest %s, %s): its provisioner %s does not seem to run",
			stuck, oldest, oldestAge.Round(time.Second), p)
	}
	made := 0
	for _, pv := range ev.volumes {
		if pv.Annotations["pv.kubernetes.io/provisioned-by"] == p {
			made++
		}
	}
	switch {
	case made > 0:
		return ProvisioningYes, fmt.Sprintf("its provisioner %s has made %d volume(s) on this cluster", p, made)
	case ev.drivers[p] && ev.csiNodes[p] > 0:
		return ProvisioningYes, fmt.Sprintf("CSI driver %s is registered on %d node(s)", p, ev.csiNodes[p])
	case ev.drivers[p]:
		return ProvisioningUnknown, fmt.Sprintf("CSI driver %s is registered on no node: its node plugin may not run", p)
	}
	return ProvisioningUnknown, fmt.Sprintf("its provisioner %s has made no volume on this cluster yet: the registry's install tries a small volume first (up to 60 s)", p)
}
