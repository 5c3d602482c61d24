package helm

import (
	"context"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"

	"runr.dev/console/testcluster"
)

// Every Load gives a chart of its own: Helm dropping the subcharts one release's values
// disable (as its install does) leaves the next Load of the same chart whole.
func TestLoadGivesAChartOfItsOwn(t *testing.T) {
	repo, err := testcluster.StartChartRepo("")
	if err != nil {
		t.Fatal(err)
	}
	defer repo.Close()
	cs := NewChartSource(repo.URL, "")
	ref := ChartRef{Name: "loki-stack", Version: "2.10.2"}
	first, err := cs.Load(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := chartutil.ProcessDependenciesWithMerge(first, map[string]any{"promtail": map[string]any{"enabled": false}}); err != nil {
		t.Fatal(err)
	}
	if n := len(first.Dependencies()); n != 1 {
		t.Fatalf("promtail disabled: %d subcharts left, want 1", n)
	}
	second, err := cs.Load(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(second.Dependencies()); n != 2 {
		t.Errorf("the next Load has %d subcharts, want loki and promtail", n)
	}
}
