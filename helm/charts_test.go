package helm

import (
	"context"
	"strings"
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

// A mirror that does not answer is named as the mirror the console is set to, not with
// the advice to set one (issue 34: a restarted sandbox's old mirror).
func TestUnreachableMirrorSaysItIsTheMirror(t *testing.T) {
	repo, err := testcluster.StartChartRepo("")
	if err != nil {
		t.Fatal(err)
	}
	url := repo.URL
	repo.Close()
	_, err = NewChartSource(url, "").Index(context.Background(), url)
	if err == nil || !strings.Contains(err.Error(), "it is RUNR_CHART_MIRROR") || strings.Contains(err.Error(), "set RUNR_CHART_MIRROR") {
		t.Fatalf("a mirror that is gone: %v", err)
	}
	_, err = NewChartSource("", "").Index(context.Background(), url)
	if err == nil || !strings.Contains(err.Error(), "set RUNR_CHART_MIRROR") {
		t.Fatalf("an upstream repository that does not answer: %v", err)
	}
}
