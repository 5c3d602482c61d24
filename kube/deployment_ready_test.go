package kube

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// A Deployment's detail counts what a person expects: never more available replicas than
// wanted ("2/1" during a rollout), and the old ones a rollout still stops.
func TestDeploymentReadyDetail(t *testing.T) {
	one := int32(1)
	for _, tc := range []struct {
		name   string
		st     appsv1.DeploymentStatus
		ready  bool
		detail string
	}{
		{"ready", appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1}, true, "1 of 1 replicas available"},
		{"starting", appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1}, false, "0 of 1 replicas available"},
		{"rollout", appsv1.DeploymentStatus{Replicas: 2, UpdatedReplicas: 1, AvailableReplicas: 2}, false, "1 of 1 replicas available (rollout: 1 old replica(s) still stopping)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: &one}, Status: tc.st}
			if ready, detail := DeploymentReady(d); ready != tc.ready || detail != tc.detail {
				t.Fatalf("DeploymentReady = %v, %q; want %v, %q", ready, detail, tc.ready, tc.detail)
			}
		})
	}
}
