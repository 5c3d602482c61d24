package apitest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"runr.dev/console/ops/gpu"
	"runr.dev/console/store"
	"runr.dev/console/testcluster"
)

// gpuNodes are a control plane, a worker without GPUs and two GPU workers of different
// models.
func gpuNodes() []testcluster.NodeSpec {
	return append(testcluster.DefaultNodes()[:2],
		testcluster.NodeSpec{Name: "gpu-a100", CPU: "16", Memory: "64Gi", Worker: true, GPUs: 2, GPUProduct: "NVIDIA-A100-SXM4-80GB", GPUMemoryMiB: 81920},
		testcluster.NodeSpec{Name: "gpu-t4", CPU: "8", Memory: "32Gi", Worker: true, GPUs: 1, GPUProduct: "Tesla-T4", GPUMemoryMiB: 15360})
}

var clusterPolicyGVR = schema.GroupVersionResource{Group: "nvidia.com", Version: "v1", Resource: "clusterpolicies"}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

type gpuState struct {
	Nodes  []gpu.GPUNode
	Total  int
	Free   int
	Models map[string]int
	Status store.ComponentStatus
	Mode   string
}

func TestGPUDetectInstallAdmitRemove(t *testing.T) {
	c, e, tok, r := readyRegionOn(t, "gpus", testcluster.Options{Nodes: gpuNodes()})
	ctx := context.Background()

	// Before GPU support nothing advertises a GPU.
	var st gpuState
	if code := e.JSON("GET", "/api/knative-regions/"+r.ID+"/gpu", tok, nil, &st); code != 200 || st.Total != 0 || st.Status != store.ComponentNotInstalled {
		t.Fatalf("before the install: %d %+v", code, st)
	}
	var bad struct{ Fields map[string]string }
	if code := e.JSON("POST", "/api/knative-regions/"+r.ID+"/gpu/install", tok, map[string]string{"mode": "cuda"}, &bad); code != 422 || bad.Fields["mode"] == "" {
		t.Fatalf("an unknown mode: %d %+v", code, bad)
	}

	// A GPU project is refused while the region has no GPU support.
	proj := createProject(t, e, tok, r.ID, "infer", false)
	if code := e.JSON("PUT", "/api/projects/"+proj, tok, map[string]any{"gpu": map[string]any{"count": 2, "model": "NVIDIA-A100-SXM4-80GB"}}, nil); code != 200 {
		t.Fatalf("GPU request: %d", code)
	}
	var refused struct{ Error string }
	if code := e.JSON("POST", "/api/projects/"+proj+"/deploy", tok, nil, &refused); code != 422 || !strings.Contains(refused.Error, "no GPU support") {
		t.Fatalf("deploy without GPU support: %d %q", code, refused.Error)
	}

	// The device plugin with GPU feature discovery: NFD finds the two GPU nodes, the
	// plugin advertises their GPUs, GFD labels their models.
	mustSucceed(t, action(t, e, tok, r.ID, "gpu/install", map[string]string{"mode": "device-plugin"}))
	// GFD labels a node's model on its own schedule, after the GPUs are advertised (nfd-master
	// writes the labels): the GPU tab shows it once it is there.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		e.JSON("GET", "/api/knative-regions/"+r.ID+"/gpu", tok, nil, &st)
		if st.Models["Tesla-T4"] == 1 && st.Models["NVIDIA-A100-SXM4-80GB"] == 2 || time.Now().After(deadline) {
			break
		}
	}
	if st.Status != store.ComponentReady || st.Total != 3 || st.Models["NVIDIA-A100-SXM4-80GB"] != 2 || st.Models["Tesla-T4"] != 1 || len(st.Nodes) != 2 {
		t.Fatalf("after the install: %+v", st)
	}
	for _, n := range st.Nodes {
		if !n.Hardware || n.Allocatable == 0 || n.Product == "" {
			t.Fatalf("evidence of %s: %+v", n.Name, n)
		}
	}
	// The region list carries the summary.
	var list struct {
		Data []struct {
			Name string
			GPU  struct{ Total int }
		}
	}
	e.JSON("GET", "/api/knative-regions", tok, nil, &list)
	if len(list.Data) != 1 || list.Data[0].GPU.Total != 3 {
		t.Fatalf("region list: %+v", list.Data)
	}

	// Admitted: two A100s. The Knative Service has the limit, the toleration and the
	// model's node selector.
	projectAction(t, e, tok, proj, "deploy")
	ks, err := c.DynamicGet(ctx, ksvcGVR, "gpus", "infer")
	if err != nil {
		t.Fatal(err)
	}
	spec, _, _ := unstructured.NestedMap(ks.Object, "spec", "template", "spec")
	containers := spec["containers"].([]any)
	limits, _, _ := unstructured.NestedString(containers[0].(map[string]any), "resources", "limits", "nvidia.com/gpu")
	sel, _, _ := unstructured.NestedString(spec, "nodeSelector", "nvidia.com/gpu.product")
	if limits != "2" || sel != "NVIDIA-A100-SXM4-80GB" || !strings.Contains(strings.ReplaceAll(toJSON(spec["tolerations"]), " ", ""), `"key":"nvidia.com/gpu"`) {
		t.Fatalf("the Knative Service's pod spec: %s", toJSON(spec))
	}

	// The revision's pod holds both A100s: a second project asking for one is refused,
	// naming the shortfall; one asking for the T4 is admitted.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "infer-00001-deployment-x", Namespace: "gpus", Labels: map[string]string{"runr.dev/project": proj}},
		Spec: corev1.PodSpec{NodeName: "gpu-a100", Tolerations: []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "user-container", Image: "ghcr.io/acme/infer:1",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")}}}}}}
	if _, err := c.Client.CoreV1().Pods("gpus").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	more := createProject(t, e, tok, r.ID, "more", false)
	e.JSON("PUT", "/api/projects/"+more, tok, map[string]any{"gpu": map[string]any{"count": 1, "model": "NVIDIA-A100-SXM4-80GB"}}, nil)
	if code := e.JSON("POST", "/api/projects/"+more+"/deploy", tok, nil, &refused); code != 202 {
		t.Fatalf("the deploy is queued, then refused by its checks: %d", code)
	}
	wkEventually(t, time.Minute, "the refused deploy", func() bool {
		p, _ := e.Store.ProjectByID(ctx, more)
		return strings.Contains(p.Message, "0 free: 1 short")
	})
	// A redeploy of the project that holds them is admitted (its own pods' GPUs count).
	projectAction(t, e, tok, proj, "deploy")
	t4 := createProject(t, e, tok, r.ID, "t4", false)
	e.JSON("PUT", "/api/projects/"+t4, tok, map[string]any{"gpu": map[string]any{"count": 1, "model": "Tesla-T4"}}, nil)
	projectAction(t, e, tok, t4, "deploy")

	// Removal is refused while a pod requests GPUs, naming it; nothing changes.
	if code := e.JSON("POST", "/api/knative-regions/"+r.ID+"/gpu/uninstall", tok, nil, &refused); code != 422 || !strings.Contains(refused.Error, "gpus/infer-00001-deployment-x") {
		t.Fatalf("removal while used: %d %q", code, refused.Error)
	}
	if rr, _ := e.Store.RegionByID(ctx, r.ID); rr.GPU.V.Status != store.ComponentReady {
		t.Fatal("a refused removal changes nothing")
	}
	if err := c.Client.CoreV1().Pods("gpus").Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptrTo(int64(0))}); err != nil {
		t.Fatal(err)
	}
	wkEventually(t, time.Minute, "the pod to be gone", func() bool {
		_, err := c.Client.CoreV1().Pods("gpus").Get(ctx, pod.Name, metav1.GetOptions{})
		return err != nil
	})
	mustSucceed(t, action(t, e, tok, r.ID, "gpu/uninstall", nil))
	if rr, _ := e.Store.RegionByID(ctx, r.ID); rr.GPU.V.State() != store.ComponentNotInstalled || rr.GPU.V.Total != 0 {
		t.Fatalf("after the removal: %+v", rr.GPU.V)
	}
	wkEventually(t, time.Minute, "the GPUs to stop being advertised", func() bool {
		n, _ := c.Client.CoreV1().Nodes().Get(ctx, "gpu-a100", metav1.GetOptions{})
		q := n.Status.Allocatable["nvidia.com/gpu"]
		return q.Value() == 0
	})
	// nfd-master's labels (NFD's and GFD's) went with the chart's post-delete Job
	// nfd-master -prune: the GPU tab shows no GPU node any more.
	for _, name := range []string{"gpu-a100", "gpu-t4", "worker-1"} {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for k := range n.Labels {
			if strings.HasPrefix(k, "feature.node.kubernetes.io/") || strings.HasPrefix(k, "nvidia.com/gpu.") {
				t.Fatalf("%s keeps label %s after the removal: %v", name, k, n.Labels)
			}
		}
	}
	if code := e.JSON("GET", "/api/knative-regions/"+r.ID+"/gpu", tok, nil, &st); code != 200 || len(st.Nodes) != 0 || st.Total != 0 {
		t.Fatalf("the GPU tab after the removal: %d %+v", code, st)
	}
}

func TestGPUOperatorModelStorageAndMove(t *testing.T) {
	a, e, tok, r := readyRegionOn(t, "ops", testcluster.Options{Nodes: gpuNodes()})
	ctx := context.Background()
	mustSucceed(t, action(t, e, tok, r.ID, "gpu/install", map[string]string{"mode": "operator"}))
	policy, err := a.DynamicGet(ctx, clusterPolicyGVR, "", gpu.ClusterPolicyName)
	if err != nil {
		t.Fatal(err)
	}
	if state, _, _ := unstructured.NestedString(policy.Object, "status", "state"); state != "ready" {
		t.Fatalf("ClusterPolicy state %q", state)
	}

	// Model storage: a class the cluster lacks is a field error; the volume binds.
	var bad struct{ Fields map[string]string }
	if code := e.JSON("PUT", "/api/knative-regions/"+r.ID+"/gpu/model-storage", tok, map[string]any{"storage_class": "gold", "size_gi": 0}, &bad); code != 422 || bad.Fields["storage_class"] == "" || bad.Fields["size_gi"] == "" {
		t.Fatalf("bad model storage: %d %+v", code, bad)
	}
	var ans struct {
		JobID string `json:"job_id"`
	}
	if code := e.JSON("PUT", "/api/knative-regions/"+r.ID+"/gpu/model-storage", tok, map[string]any{"storage_class": "standard", "size_gi": 100}, &ans); code != 202 {
		t.Fatalf("model storage: %d", code)
	}
	mustSucceed(t, e.WaitJob(ans.JobID, 2*time.Minute))
	proj := createProject(t, e, tok, r.ID, "llm", false)
	e.JSON("PUT", "/api/projects/"+proj, tok, map[string]any{"gpu": map[string]any{"count": 1, "model_storage": true}}, nil)
	projectAction(t, e, tok, proj, "deploy")
	ks, _ := a.DynamicGet(ctx, ksvcGVR, "ops", "llm")
	if raw := toJSON(ks.Object); !strings.Contains(raw, `"claimName":"runr-models"`) || !strings.Contains(raw, `"mountPath":"/models"`) {
		t.Fatalf("the model storage must be mounted: %s", raw)
	}

	// A move installs GPU support with its mode on the new cluster.
	b := testcluster.New(t, testcluster.Options{Nodes: append(testcluster.DefaultNodes()[:1],
		testcluster.NodeSpec{Name: "gpu-h100", CPU: "32", Memory: "128Gi", Worker: true, GPUs: 4, GPUProduct: "NVIDIA-H100-80GB-HBM3", GPUMemoryMiB: 81559})})
	mustSucceed(t, migrate(t, e, tok, r.ID, b.Kubeconfig(), nil))
	rr, _ := e.Store.RegionByID(ctx, r.ID)
	if rr.GPU.V.Status != store.ComponentReady || rr.GPU.V.Mode != store.GPUModeOperator || rr.GPU.V.Total != 4 || rr.GPU.V.Storage.Status != store.ComponentReady {
		t.Fatalf("GPU support after the move: %+v", rr.GPU.V)
	}
	if _, err := b.DynamicGet(ctx, clusterPolicyGVR, "", gpu.ClusterPolicyName); err != nil {
		t.Fatalf("the operator's ClusterPolicy on the new cluster: %v", err)
	}
}
