package testcluster_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"runr.dev/console/testcluster"
)

// A kept cluster (the sandbox's) comes back after a stop on the same address, with the
// same credentials and its data: a kubeconfig taken before the stop still works (issue 34
// item 9: each start was a new cluster, so a registered region pointed at nothing).
func TestKeptClusterComesBack(t *testing.T) {
	ctx := context.Background()
	opts := testcluster.Options{StateDir: t.TempDir(), Nodes: []testcluster.NodeSpec{{Name: "solo", CPU: "4", Memory: "8Gi", ControlPlane: true, Worker: true}},
		Log: t.Logf}
	first, err := testcluster.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := first.Kubeconfig()
	if _, err := first.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept"},
		Data: map[string]string{"a": "b"}}, metav1.CreateOptions{}); err != nil {
		first.Stop()
		t.Fatal(err)
	}
	first.Stop()

	again, err := testcluster.Start(opts)
	if err != nil {
		t.Fatalf("the kept cluster did not start again: %v", err)
	}
	defer again.Stop()
	if again.Server != first.Server {
		t.Fatalf("the kept cluster moved from %s to %s", first.Server, again.Server)
	}
	rest, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	old, err := kubernetes.NewForConfig(rest)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := old.CoreV1().ConfigMaps("default").Get(ctx, "kept", metav1.GetOptions{})
	if err != nil || cm.Data["a"] != "b" {
		t.Fatalf("the kubeconfig of before the stop reads the kept ConfigMap: %v %v", err, cm)
	}
	if err := again.WaitNodeReady(ctx, "solo", true); err != nil {
		t.Fatalf("the kept node: %v", err)
	}
}
