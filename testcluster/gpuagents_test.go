package testcluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/ops/gpu"
	"runr.dev/console/testcluster"
)

// The device plugin stand-in on a simulated cluster: nfd-master labels the GPU node (with
// GFD's labels) and records them in its annotation, the device plugin advertises the GPUs
// (the MPS control daemon, whose pods carry the same labels, runs nowhere), and helm
// uninstall's post-delete hook Job nfd-master -prune removes every label nfd-master wrote.
func TestSimulatedGPUAgentsPrune(t *testing.T) {
	s := serve(t)
	c := testcluster.New(t, testcluster.Options{Nodes: append(testcluster.DefaultNodes()[:2],
		testcluster.NodeSpec{Name: "gpu-1", CPU: "8", Memory: "32Gi", Worker: true, GPUs: 2, GPUProduct: "Tesla-T4", GPUMemoryMiB: 15360})})
	ctx := context.Background()
	_, ch := s.chart(t, gpu.ChartDevicePlugin.Name, gpu.ChartDevicePlugin.Version)
	helmInstall(t, c, ch, gpu.DevicePluginRelease, gpu.GPUNamespace, gpu.DevicePluginValues())

	nfdLabels := func(ctx context.Context, node string) ([]string, string, int64, error) {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return nil, "", 0, err
		}
		var out []string
		for k, v := range n.Labels {
			if strings.HasPrefix(k, "feature.node.kubernetes.io/") || strings.HasPrefix(k, "nvidia.com/gpu.") {
				out = append(out, k+"="+v)
			}
		}
		q := n.Status.Allocatable[gpu.GPUResource]
		return out, n.Annotations[testcluster.NFDFeatureLabelsAnnotation], q.Value(), nil
	}
	eventually(t, "nfd-master's labels and the GPUs on gpu-1", func(ctx context.Context) (bool, string) {
		l, ann, gpus, err := nfdLabels(ctx, "gpu-1")
		if err != nil {
			return false, err.Error()
		}
		want := []string{testcluster.NFDNvidiaLabel + "=true", testcluster.GPUProductLabel + "=Tesla-T4", testcluster.GPUCountLabel + "=2"}
		for _, w := range want {
			if !strings.Contains(strings.Join(l, ","), w) {
				return false, fmt.Sprintf("labels %v, annotation %q", l, ann)
			}
		}
		return gpus == 2 && strings.Contains(ann, "pci-10de.present") && strings.Contains(ann, testcluster.GPUProductLabel), fmt.Sprintf("%d GPUs, annotation %q", gpus, ann)
	})
	mps, err := c.Client.AppsV1().DaemonSets(gpu.GPUNamespace).Get(ctx, gpu.DevicePluginRelease+"-mps-control-daemon", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if mps.Status.DesiredNumberScheduled != 0 {
		t.Fatalf("the MPS control daemon runs only on nodes labelled nvidia.com/mps.capable=true: %+v", mps.Status)
	}

	helmUninstall(t, c, gpu.DevicePluginRelease, gpu.GPUNamespace)
	eventually(t, "the prune Job to remove nfd-master's labels", func(ctx context.Context) (bool, string) {
		for _, node := range []string{"worker-1", "gpu-1"} {
			l, ann, gpus, err := nfdLabels(ctx, node)
			if err != nil {
				return false, err.Error()
			}
			if len(l) > 0 || ann != "" || gpus != 0 {
				return false, fmt.Sprintf("%s: labels %v, annotation %q, %d GPUs", node, l, ann, gpus)
			}
		}
		return true, ""
	})
}
