package testcluster_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/testcluster"
)

func TestStopHeartbeat(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: []testcluster.NodeSpec{{Name: "solo", CPU: "2", Memory: "4Gi", ControlPlane: true, Worker: true}}})
	ctx := context.Background()
	beat := func() time.Time {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, "solo", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, cd := range n.Status.Conditions {
			if cd.Type == corev1.NodeReady {
				return cd.LastHeartbeatTime.Time
			}
		}
		return time.Time{}
	}
	if err := c.StopHeartbeat(ctx, "solo"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(8 * time.Second) // a heartbeat kwok scheduled before (5-7 s ahead) may still land
	stopped := beat()
	time.Sleep(12 * time.Second)
	if got := beat(); !got.Equal(stopped) {
		t.Fatalf("the heartbeat went on after StopHeartbeat: %v then %v", stopped, got)
	}
	if err := c.ResumeHeartbeat(ctx, "solo"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !beat().After(stopped) {
		if time.Now().After(deadline) {
			t.Fatal("the heartbeat did not resume")
		}
		time.Sleep(500 * time.Millisecond)
	}
}
