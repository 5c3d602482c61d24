package testcluster_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"helm.sh/helm/v3/pkg/repo"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"runr.dev/console/testcluster"
)

// served is the local chart repository and its index.
type served struct {
	repo *testcluster.ChartRepo
	idx  *repo.IndexFile
}

func serve(t *testing.T) *served {
	t.Helper()
	r, err := testcluster.StartChartRepo("")
	if err != nil {
		t.Fatalf("StartChartRepo: %v", err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	idx := &repo.IndexFile{}
	if err := yaml.Unmarshal(httpGet(t, r.URL+"/index.yaml", http.StatusOK), idx); err != nil {
		t.Fatalf("index.yaml: %v", err)
	}
	idx.SortEntries()
	return &served{repo: r, idx: idx}
}

// chart downloads a chart as the console does (version "" is the newest).
func (s *served) chart(t *testing.T, name, version string) (*repo.ChartVersion, *chart.Chart) {
	t.Helper()
	cv, err := s.idx.Get(name, version)
	if err != nil {
		t.Fatalf("index.yaml has no %s %q: %v", name, version, err)
	}
	if len(cv.URLs) == 0 {
		t.Fatalf("%s %s has no download URL", name, cv.Version)
	}
	ch, err := loader.LoadArchive(bytes.NewReader(httpGet(t, resolve(t, s.repo.URL, cv.URLs[0]), http.StatusOK)))
	if err != nil {
		t.Fatalf("load %s %s: %v", name, cv.Version, err)
	}
	return cv, ch
}

// render renders a chart as `helm install --dry-run` does, for Kubernetes 1.36.
func render(ch *chart.Chart, releaseName, namespace string, vals map[string]any) (*release.Release, error) {
	in := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	in.DryRun, in.ClientOnly = true, true
	in.ReleaseName, in.Namespace = releaseName, namespace
	in.KubeVersion = &chartutil.KubeVersion{Version: "v1.36.0", Major: "1", Minor: "36"}
	return in.Run(ch, vals)
}

// manifest is a rendered release: its objects and its hooks.
type manifest struct {
	objects, hooks []*unstructured.Unstructured
}

func parseManifest(rel *release.Release) (*manifest, error) {
	m := &manifest{}
	for _, doc := range releaseutil.SplitManifests(rel.Manifest) {
		o, err := decodeObject(doc)
		if err != nil {
			return nil, err
		}
		m.objects = append(m.objects, o)
	}
	for _, h := range rel.Hooks {
		o, err := decodeObject(h.Manifest)
		if err != nil {
			return nil, err
		}
		m.hooks = append(m.hooks, o)
	}
	return m, nil
}

func decodeObject(doc string) (*unstructured.Unstructured, error) {
	obj := map[string]any{}
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		return nil, fmt.Errorf("bad manifest: %w\n%s", err, doc)
	}
	return &unstructured.Unstructured{Object: obj}, nil
}

// all returns the objects and the hooks.
func (m *manifest) all() []*unstructured.Unstructured {
	return append(slices.Clone(m.objects), m.hooks...)
}

// find returns the object kind/name (manifest or hook), or nil.
func (m *manifest) find(kind, name string) *unstructured.Unstructured {
	for _, o := range m.all() {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// names lists kind/name of every object and hook.
func (m *manifest) names() []string {
	var out []string
	for _, o := range m.all() {
		out = append(out, o.GetKind()+"/"+o.GetName())
	}
	slices.Sort(out)
	return out
}

// typed decodes the object kind/name into into; an error names what is missing.
func (m *manifest) typed(kind, name string, into any) error {
	o := m.find(kind, name)
	if o == nil {
		return fmt.Errorf("no %s %s rendered (have %v)", kind, name, m.names())
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into)
}

// podTemplate returns the pod template of a Deployment, StatefulSet, DaemonSet or Job.
func (m *manifest) podTemplate(kind, name string) (*corev1.PodTemplateSpec, error) {
	var pt *corev1.PodTemplateSpec
	var err error
	switch kind {
	case "Deployment":
		var d appsv1.Deployment
		err, pt = m.typed(kind, name, &d), &d.Spec.Template
	case "StatefulSet":
		var s appsv1.StatefulSet
		err, pt = m.typed(kind, name, &s), &s.Spec.Template
	case "DaemonSet":
		var d appsv1.DaemonSet
		err, pt = m.typed(kind, name, &d), &d.Spec.Template
	case "Job":
		var j batchv1.Job
		err, pt = m.typed(kind, name, &j), &j.Spec.Template
	default:
		return nil, fmt.Errorf("%s has no pod template", kind)
	}
	return pt, err
}

// pods returns every pod template (and bare Pod) the release renders, keyed kind/name.
func (m *manifest) pods() map[string]*corev1.PodTemplateSpec {
	out := map[string]*corev1.PodTemplateSpec{}
	for _, o := range m.all() {
		switch o.GetKind() {
		case "Deployment", "StatefulSet", "DaemonSet", "Job":
			if pt, err := m.podTemplate(o.GetKind(), o.GetName()); err == nil {
				out[o.GetKind()+"/"+o.GetName()] = pt
			}
		case "Pod":
			var p corev1.Pod
			if runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &p) == nil {
				out["Pod/"+p.Name] = &corev1.PodTemplateSpec{ObjectMeta: p.ObjectMeta, Spec: p.Spec}
			}
		}
	}
	return out
}

// images lists every container image the release names, with where: containers of pod
// templates and Pods, and spec.image of custom resources that run one (Prometheus, Alertmanager).
func (m *manifest) images() map[string]string {
	out := map[string]string{}
	for where, pt := range m.pods() {
		for _, c := range append(slices.Clone(pt.Spec.InitContainers), pt.Spec.Containers...) {
			out[where+" "+c.Name] = c.Image
		}
	}
	for _, o := range m.objects {
		if img, ok, _ := unstructured.NestedString(o.Object, "spec", "image"); ok && strings.Contains(o.GetAPIVersion(), "monitoring.coreos.com") {
			out[o.GetKind()+"/"+o.GetName()] = img
		}
	}
	return out
}

// container returns a pod template's container by name (the first when name is "").
func container(pt *corev1.PodTemplateSpec, name string) (*corev1.Container, error) {
	for i := range pt.Spec.Containers {
		if name == "" || pt.Spec.Containers[i].Name == name {
			return &pt.Spec.Containers[i], nil
		}
	}
	return nil, fmt.Errorf("no container %q in %v", name, pt.Spec.Containers)
}

// hasLabels returns an error naming the labels that are missing or differ.
func hasLabels(what string, got, want map[string]string) error {
	var bad []string
	for k, v := range want {
		if got[k] != v {
			bad = append(bad, fmt.Sprintf("%s=%q (have %q)", k, v, got[k]))
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return fmt.Errorf("%s lacks labels %s", what, strings.Join(bad, ", "))
	}
	return nil
}

func httpGet(t *testing.T, u string, wantStatus int) []byte {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	if resp.StatusCode != wantStatus {
		t.Fatalf("GET %s: %s, want %d", u, resp.Status, wantStatus)
	}
	return body
}

func resolve(t *testing.T, base, ref string) string {
	t.Helper()
	b, err := url.Parse(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	r, err := url.Parse(ref)
	if err != nil {
		t.Fatal(err)
	}
	return b.ResolveReference(r).String()
}

// dig walks nested maps.
func dig(m map[string]any, path ...string) any {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[p]
	}
	return cur
}
