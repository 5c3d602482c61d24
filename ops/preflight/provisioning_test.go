package preflight

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestProvisioningEvidence: each StorageClass is judged by what the cluster shows (issue
// 34 item 15: a class that cannot provision was found only after the registry's 60 s
// wait); a claim stuck for a minute outweighs volumes made before.
func TestProvisioningEvidence(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	class := func(name, prov string) storagev1.StorageClass {
		return storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: prov}
	}
	claim := func(class string, age time.Duration, phase corev1.PersistentVolumeClaimPhase) corev1.PersistentVolumeClaim {
		return corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c-" + class, CreationTimestamp: metav1.NewTime(now.Add(-age))},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class}, Status: corev1.PersistentVolumeClaimStatus{Phase: phase}}
	}
	made := corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1", Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": "disk.example.com"}}}
	lazy := class("lazy", "disk.example.com")
	lazy.VolumeBindingMode = &wffc
	cases := []struct {
		name string
		sc   storagev1.StorageClass
		ev   volumeEvidence
		want Provisioning
		says string
	}{
		{"no provisioner", class("local", noProvisioner), volumeEvidence{}, ProvisioningNo, "created beforehand"},
		{"made volumes", class("fast", "disk.example.com"), volumeEvidence{volumes: []corev1.PersistentVolume{made}}, ProvisioningYes, "has made 1 volume"},
		{"stuck claim", class("fast", "disk.example.com"), volumeEvidence{volumes: []corev1.PersistentVolume{made},
			claims: []corev1.PersistentVolumeClaim{claim("fast", 5*time.Minute, corev1.ClaimPending)}}, ProvisioningNo, "oldest ns/c-fast, 5m0s"},
		{"young claim", class("fast", "disk.example.com"), volumeEvidence{claims: []corev1.PersistentVolumeClaim{claim("fast", 10*time.Second, corev1.ClaimPending)}}, ProvisioningUnknown, "no volume"},
		{"waits for its consumer", lazy, volumeEvidence{claims: []corev1.PersistentVolumeClaim{claim("lazy", time.Hour, corev1.ClaimPending)}}, ProvisioningUnknown, "no volume"},
		{"CSI on nodes", class("csi", "csi.example.com"), volumeEvidence{drivers: map[string]bool{"csi.example.com": true}, csiNodes: map[string]int{"csi.example.com": 3}}, ProvisioningYes, "registered on 3 node"},
		{"CSI on no node", class("csi", "csi.example.com"), volumeEvidence{drivers: map[string]bool{"csi.example.com": true}}, ProvisioningUnknown, "on no node"},
		{"nothing known", class("other", "other.example.com"), volumeEvidence{volumes: []corev1.PersistentVolume{made}}, ProvisioningUnknown, "no volume on this cluster yet"},
	}
	for _, tc := range cases {
		got, says := provisioning(tc.sc, tc.ev, now)
		if got != tc.want || !strings.Contains(says, tc.says) {
			t.Errorf("%s: %s %q, want %s saying %q", tc.name, got, says, tc.want, tc.says)
		}
	}
}
