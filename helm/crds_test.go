package helm

import (
	"context"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// widgetCRD is a CRD of kind Widget; its description says which chart version shipped it.
func widgetCRD(description string) []byte {
	return []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.runr.dev
spec:
  group: example.runr.dev
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          description: ` + description + `
          x-kubernetes-preserve-unknown-fields: true
`)
}

// widgetChart ships the Widget CRD in crds/ and a Widget in its templates, and a subchart
// "gadgets", off by default, with a CRD of its own.
func widgetChart(version string) *chart.Chart {
	gadgets := &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "gadgets", Version: "1.0.0"},
		Files: []*chart.File{{Name: "crds/gadgets.yaml", Data: []byte(strings.NewReplacer("widgets", "gadgets", "Widget", "Gadget", "widget", "gadget").
			Replace(string(widgetCRD("gadgets"))))}},
	}
	ch := &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "widgets", Version: version,
			Dependencies: []*chart.Dependency{{Name: "gadgets", Version: "1.0.0", Condition: "gadgets.enabled"}}},
		Values: map[string]any{"gadgets": map[string]any{"enabled": false}},
		Files:  []*chart.File{{Name: "crds/widgets.yaml", Data: widgetCRD("widgets " + version)}},
		Templates: []*chart.File{{Name: "templates/widget.yaml", Data: []byte(`apiVersion: example.runr.dev/v1
kind: Widget
metadata:
  name: {{ .Release.Name }}
spec: {size: 3}
`)}},
	}
	ch.AddDependency(gadgets)
	return ch
}

// With a waiter (Options.WaitFor), Apply creates a chart's CRDs itself and waits with it
// until they are established before Helm renders the templates that use them; as with
// Helm, a CRD that exists is left as it is, and a disabled subchart's CRDs are not made.
func TestApplyInstallsTheChartsCRDs(t *testing.T) {
	c := simulatedCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var waits []string
	o := Options{Timeout: time.Minute, WaitFor: func(ctx context.Context, what string, cond func(context.Context) (bool, string, error)) error {
		waits = append(waits, what)
		for {
			done, _, err := cond(ctx)
			if err != nil || done {
				return err
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
	}}
	for _, version := range []string{"0.1.0", "0.2.0"} {
		if _, err := Apply(ctx, c, Release{Namespace: "widgets", Name: "w", Chart: widgetChart(version)}, o); err != nil {
			t.Fatalf("%s: %v", version, err)
		}
		crd, err := c.APIExt.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "widgets.example.runr.dev", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Description; got != "widgets 0.1.0" {
			t.Errorf("after %s the CRD is %q, want the one 0.1.0 created (an existing CRD is left alone)", version, got)
		}
	}
	if want := "the CRDs of widgets 0.1.0 (1) to be established"; len(waits) != 2 || waits[0] != want || !strings.Contains(waits[1], "0.2.0") {
		t.Errorf("waits %q, want %q and the same for 0.2.0", waits, want)
	}
	if _, err := c.APIExt.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "gadgets.example.runr.dev", metav1.GetOptions{}); err == nil {
		t.Error("the CRD of a subchart the values disable was applied")
	}
	gvr := schema.GroupVersionResource{Group: "example.runr.dev", Version: "v1", Resource: "widgets"}
	if _, err := c.Dynamic.Resource(gvr).Namespace("widgets").Get(ctx, "w", metav1.GetOptions{}); err != nil {
		t.Errorf("the chart's Widget: %v", err)
	}
}

// TestCRDsCreatedSaysWhatHappened: an install that created none of a chart's CRDs says they
// existed, never "Created 0 of the 6 CRDs".
func TestCRDsCreatedSaysWhatHappened(t *testing.T) {
	for _, tc := range []struct {
		created, total int
		want           string
	}{
		{0, 6, "The 6 CRDs of knative-operator v1.17.1 exist already"},
		{6, 6, "Created the 6 CRDs of knative-operator v1.17.1"},
		{2, 6, "Created 2 of the 6 CRDs of knative-operator v1.17.1 (the others exist already)"},
	} {
		if got := crdsCreated(tc.created, tc.total, "knative-operator v1.17.1"); got != tc.want {
			t.Errorf("%d of %d: %q, want %q", tc.created, tc.total, got, tc.want)
		}
	}
}
