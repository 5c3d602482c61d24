package realnode

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"helm.sh/helm/v3/pkg/release"

	"runr.dev/console/helm"
	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/testcluster"
)

// The Helm baseline of the real data path (make bench only): what install-knative put into
// the cluster for a function to answer, applied by hand on a fresh real cluster as an
// administrator without the console would (the same Knative Serving CRDs, `helm install
// --wait` of the same charts with the same values, the same KnativeServing and Knative
// Service), timed to the function's first 200: the reference for the console's figure.

// realPathBaseline is what the baseline applies, captured from the console's cluster.
type realPathBaseline struct {
	Releases       []baselineRelease `json:"releases"`
	KnativeServing map[string]any    `json:"knative_serving"`
	Function       map[string]any    `json:"function"`
	Host           string            `json:"host"`
}

// baselineRelease is one Helm release install-knative made.
type baselineRelease struct {
	Namespace string         `json:"namespace"`
	Name      string         `json:"name"`
	Chart     string         `json:"chart"`
	Version   string         `json:"version"`
	Values    map[string]any `json:"values"`
}

// helmBaselineFigures are the baseline's times, written beside the console's figures.
type helmBaselineFigures struct {
	// FirstAnswer runs from the first object applied to the function's first 200.
	FirstAnswer time.Duration `json:"first_answer"`
	Releases    []string      `json:"releases"`
}

// baselineFile is where the capture goes, and helmFiguresFile the baseline's times.
func baselineFile(figures string) string    { return figures + ".capture.json" }
func helmFiguresFile(figures string) string { return figures + ".helm.json" }

// kubeCluster is the cluster as the console reaches it.
func kubeCluster(t *testing.T, c *testcluster.Cluster) *kube.Cluster {
	t.Helper()
	kc, err := kube.ParseKubeconfig(c.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	kc.AllowLoopback = true
	cl, err := kube.NewCluster(kc)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// captureBaseline records, once the function answered, what install-knative made: its Helm
// releases (those first deployed since the POST, in order), the KnativeServing and the
// function's Knative Service. It does nothing unless the figures are wanted.
func (d *dataPath) captureBaseline(t *testing.T, host string) {
	file := os.Getenv("RUNR_REALPATH_FIGURES")
	if file == "" {
		return
	}
	ctx := context.Background()
	kc := kubeCluster(t, d.c)
	l, err := d.c.Client.CoreV1().Secrets("").List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,status=deployed"})
	if err != nil {
		t.Fatal(err)
	}
	var rels []*release.Release
	for _, s := range l.Items {
		r, err := helm.Status(kc, s.Namespace, s.Labels["name"])
		if err != nil || r == nil {
			t.Fatalf("release %s/%s: %v", s.Namespace, s.Labels["name"], err)
		}
		if !r.Info.FirstDeployed.Time.Before(d.servingPost) {
			rels = append(rels, r)
		}
	}
	slices.SortFunc(rels, func(a, b *release.Release) int { return a.Info.FirstDeployed.Time.Compare(b.Info.FirstDeployed.Time) })
	b := realPathBaseline{Host: host}
	for _, r := range rels {
		b.Releases = append(b.Releases, baselineRelease{r.Namespace, r.Name, r.Chart.Metadata.Name, r.Chart.Metadata.Version, r.Config})
	}
	ks, found, err := kc.Get(ctx, kube.GVKKnativeServing, d.r.ServingNamespace, kit.KnativeServingName)
	if err != nil || !found {
		t.Fatalf("the KnativeServing: %v (found %v)", err, found)
	}
	fn, found, err := kc.Get(ctx, knativeService, d.r.Name, strings.SplitN(host, ".", 2)[0])
	if err != nil || !found {
		t.Fatalf("the function's Knative Service: %v (found %v)", err, found)
	}
	b.KnativeServing, b.Function = asApplied(ks), asApplied(fn)
	raw, _ := json.MarshalIndent(b, "", "  ")
	if err := os.WriteFile(baselineFile(file), raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// knativeService is a Knative Service's kind.
var knativeService = schema.GroupVersionKind{Group: "serving.knative.dev", Version: "v1", Kind: "Service"}

// asApplied is an object as one would apply it again: its kind, name, namespace, labels,
// its own annotations (not those Knative's webhook writes) and spec.
func asApplied(o *unstructured.Unstructured) map[string]any {
	out := &unstructured.Unstructured{Object: map[string]any{"apiVersion": o.GetAPIVersion(), "kind": o.GetKind(), "spec": o.Object["spec"]}}
	out.SetName(o.GetName())
	out.SetNamespace(o.GetNamespace())
	out.SetLabels(o.GetLabels())
	ann := map[string]string{}
	for k, v := range o.GetAnnotations() {
		if !strings.HasPrefix(k, "serving.knative.dev/") && k != "kubectl.kubernetes.io/last-applied-configuration" {
			ann[k] = v
		}
	}
	out.SetAnnotations(ann)
	return out.Object
}

// TestHelmBaselineOfTheRealPath applies what TestFunctionThroughTheRegionsIngress captured
// on a fresh real cluster without the console, and measures the time to the function's
// first 200 (make bench runs the two in one go).
func TestHelmBaselineOfTheRealPath(t *testing.T) {
	file := os.Getenv("RUNR_REALPATH_FIGURES")
	if file == "" {
		t.Skip("make bench's reference for the real data path: it runs when RUNR_REALPATH_FIGURES names the figures")
	}
	raw, err := os.ReadFile(baselineFile(file))
	if err != nil {
		t.Fatalf("no capture of the console's run (TestFunctionThroughTheRegionsIngress runs first, in the same go test): %v", err)
	}
	var b realPathBaseline
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	krepo, err := testcluster.StartUpstreamKnativeChartRepo("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { krepo.Close() })
	c := realCluster(t, testcluster.Options{InsideLoadBalancer: true, Nodes: []testcluster.NodeSpec{}})
	if err := c.PushTraefik(ctx, os.Stderr); err != nil {
		t.Fatal(err)
	}
	if err := c.PushKnative(ctx, os.Stderr); err != nil {
		t.Fatal(err)
	}
	// The console's function came from the region's registry through the node mirror; here
	// the node pulls the same program from the cluster's registry, by digest (Knative
	// resolves no digest).
	img, err := c.Registry.Image(testcluster.EchoImage)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	fn := &unstructured.Unstructured{Object: b.Function}
	containers, _, _ := unstructured.NestedSlice(fn.Object, "spec", "template", "spec", "containers")
	containers[0].(map[string]any)["image"] = testcluster.ImageMirror + "/" + strings.Split(testcluster.EchoImage, ":")[0] + "@" + digest.String()
	if err := unstructured.SetNestedSlice(fn.Object, containers, "spec", "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
	kc := kubeCluster(t, c)
	charts := helm.NewChartSource(krepo.URL, "")
	fig := helmBaselineFigures{}

	start := time.Now()
	crds, err := charts.ServingCRDs(ctx, testcluster.KnativeRelease)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kc.ApplyYAML(ctx, crds); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the Knative Serving CRDs", kc.CRDEstablished("services.serving.knative.dev"))
	for _, r := range b.Releases {
		ch, err := charts.Load(ctx, helm.ChartRef{Name: r.Chart, Version: r.Version})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := helm.Apply(ctx, kc, helm.Release{Namespace: r.Namespace, Name: r.Name, Chart: ch, Values: r.Values}, helm.Options{Timeout: 5 * time.Minute, Wait: true}); err != nil {
			t.Fatalf("helm install --wait %s/%s: %v\n%s", r.Namespace, r.Name, err, c.PodReport(r.Namespace, ""))
		}
		fig.Releases = append(fig.Releases, fmt.Sprintf("%s/%s (%s %s)", r.Namespace, r.Name, r.Chart, r.Version))
	}
	ks := &unstructured.Unstructured{Object: b.KnativeServing}
	if _, err := kc.Apply(ctx, ks); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the KnativeServing to be Ready", func(ctx context.Context) (bool, string, error) {
		o, _, err := kc.Get(ctx, kube.GVKKnativeServing, ks.GetNamespace(), ks.GetName())
		if err != nil || o == nil {
			return false, "", err
		}
		conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
		for _, cd := range conds {
			if m, _ := cd.(map[string]any); m["type"] == "Ready" {
				return m["status"] == "True", fmt.Sprint(m["message"]), nil
			}
		}
		return false, "no Ready condition yet", nil
	})
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fn.GetNamespace()}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kc.Apply(ctx, fn); err != nil {
		t.Fatal(err)
	}
	client := c.InClusterHTTP()
	client.Timeout = 15 * time.Second
	waitFor(t, "the function's first 200", func(ctx context.Context) (bool, string, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+testcluster.InsideLBAddress+"/orders?id=7", nil)
		req.Host = b.Host
		resp, err := client.Do(req)
		if err != nil {
			return false, err.Error(), nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status, nil
	})
	fig.FirstAnswer = time.Since(start)
	t.Logf("without the console: the function's first 200 %s after the first object applied (%s)", fig.FirstAnswer.Round(time.Millisecond), strings.Join(fig.Releases, ", "))
	out, _ := json.MarshalIndent(fig, "", "  ")
	if err := os.WriteFile(helmFiguresFile(file), out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond every 250 ms for up to ten minutes and fails the test with its last
// detail when it never holds.
func waitFor(t *testing.T, what string, cond kube.Cond) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var detail string
	for {
		ok, d, err := cond(ctx)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if ok {
			return
		}
		detail = d
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not after 10 minutes (%s)", what, detail)
		case <-time.After(250 * time.Millisecond):
		}
	}
}
