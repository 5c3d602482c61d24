package testcluster_test

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"runr.dev/console/ops"
)

// The contract test: every stand-in chart is rendered with exactly the values the
// console sends (ops.ValuesCases) and checked against the facts of contractFacts, each
// read from the upstream chart at a version and a file it names (also listed in
// charts/CONTRACT.md). A fact that fails means the console sends values the real chart
// does not treat as the console expects; it is never skipped.

// fact is one thing the console relies on, read from an upstream chart.
type fact struct {
	id       string
	chart    string   // the stand-in chart (helm.ChartRef.Name); "*" for every chart
	cases    []string // the ValuesCases it applies to; nil: every case of the chart
	upstream string   // the upstream chart and version read
	source   string   // the upstream file(s) it was read from
	text     string
	check    func(r *rendering) error
}

// rendering is one ValuesCase rendered with the chart the repository serves.
type rendering struct {
	vc     ops.ValuesCase
	cv     *repo.ChartVersion
	chart  *chart.Chart
	values map[string]any // the chart's defaults merged with the case's values
	err    error          // the render error
	m      *manifest
}

// rendered returns the manifest, or an error when the chart refused the values.
func (r *rendering) rendered() (*manifest, error) {
	if r.err != nil {
		return nil, fmt.Errorf("the chart refuses the values: %w", r.err)
	}
	return r.m, nil
}

func TestContract(t *testing.T) {
	s := serve(t)
	covered := map[string]bool{}
	for _, vc := range ops.ValuesCases() {
		t.Run(vc.Name, func(t *testing.T) {
			cv, ch := s.chart(t, vc.Chart.Name, vc.Chart.Version)
			r := &rendering{vc: vc, cv: cv, chart: ch}
			vals := jsonCopy(t, vc.Values)
			merged, err := chartutil.CoalesceValues(ch, vals)
			if err != nil {
				t.Fatalf("merge values: %v", err)
			}
			r.values = merged
			rel, err := render(ch, vc.Release, vc.Namespace, vals)
			if r.err = err; err == nil {
				if r.m, err = parseManifest(rel); err != nil {
					t.Fatal(err)
				}
			}
			for _, f := range contractFacts {
				if (f.chart != "*" && f.chart != vc.Chart.Name) || (f.cases != nil && !slices.Contains(f.cases, vc.Name)) {
					continue
				}
				covered[f.id] = true
				t.Run(f.id, func(t *testing.T) {
					if err := f.check(r); err != nil {
						t.Errorf("%s\n  upstream: %s, %s\n  %v", f.text, f.upstream, f.source, err)
					}
				})
			}
		})
	}
	for _, f := range contractFacts {
		if !covered[f.id] {
			t.Errorf("fact %s applies to no values case of the console", f.id)
		}
	}
}

// TestContractDocumented keeps charts/CONTRACT.md and the table together.
func TestContractDocumented(t *testing.T) {
	doc, err := os.ReadFile("charts/CONTRACT.md")
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, f := range contractFacts {
		if ids[f.id] {
			t.Errorf("fact id %s twice", f.id)
		}
		ids[f.id] = true
		if !strings.Contains(string(doc), "`"+f.id+"`") {
			t.Errorf("charts/CONTRACT.md does not list fact `%s`", f.id)
		}
		if f.upstream == "" || f.source == "" || f.text == "" {
			t.Errorf("fact %s lacks its upstream version, source or text", f.id)
		}
	}
}

func jsonCopy(t *testing.T, v map[string]any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// ignoredKeys lists the values keys the console sets that the chart does not read: a key
// absent from the chart's defaults, below a map the chart defines (an empty map, a null
// or a scalar default accepts anything). The subtrees of verbatim (a container's
// securityContext, the collector's config, ...) are passed as they are by the chart, or
// read by it though its values.yaml leaves them out; a * in them stands for any one key.
func ignoredKeys(set, defaults map[string]any, prefix string, verbatim []string) []string {
	var out []string
	for k, v := range set {
		path := strings.TrimPrefix(prefix+"."+k, ".")
		if slices.ContainsFunc(verbatim, func(p string) bool { return keyPathMatches(p, path) }) {
			continue
		}
		d, known := defaults[k]
		if !known {
			out = append(out, path)
			continue
		}
		dm, dIsMap := d.(map[string]any)
		vm, vIsMap := v.(map[string]any)
		if dIsMap && vIsMap && len(dm) > 0 {
			out = append(out, ignoredKeys(vm, dm, path, verbatim)...)
		}
	}
	slices.Sort(out)
	return out
}

// keyPathMatches reports whether a dotted values path matches a pattern whose * elements
// stand for any one key.
func keyPathMatches(pattern, path string) bool {
	pp, kp := strings.Split(pattern, "."), strings.Split(path, ".")
	if len(pp) != len(kp) {
		return false
	}
	for i := range pp {
		if pp[i] != "*" && pp[i] != kp[i] {
			return false
		}
	}
	return true
}

// chartDefaults is the union of the keys of the chart's values.yaml and of its
// subcharts' under their names, keeping keys whose default is null (Helm's coalescing
// drops them).
func chartDefaults(ch *chart.Chart) (map[string]any, error) {
	out := unionKeys(map[string]any{}, ch.Values)
	for _, d := range ch.Dependencies() {
		sub, err := chartDefaults(d)
		if err != nil {
			return nil, err
		}
		mine, _ := out[d.Name()].(map[string]any)
		out[d.Name()] = unionKeys(unionKeys(map[string]any{}, mine), sub)
	}
	return out, nil
}

// unionKeys adds the keys of b to a, recursively, and returns a.
func unionKeys(a, b map[string]any) map[string]any {
	for k, v := range b {
		bm, bIsMap := v.(map[string]any)
		am, aIsMap := a[k].(map[string]any)
		switch {
		case bIsMap && aIsMap:
			a[k] = unionKeys(am, bm)
		case bIsMap:
			a[k] = unionKeys(map[string]any{}, bm)
		case !aIsMap:
			a[k] = v
		}
	}
	return a
}

// doubleRegistry reports an image reference whose path names a registry host after the
// first element (docker.io/ghcr.io/...): it cannot be pulled.
func doubleRegistry(ref string) bool {
	parts := strings.Split(strings.SplitN(ref, "@", 2)[0], "/")
	if len(parts) < 3 {
		return false
	}
	isHost := func(s string) bool { return strings.ContainsAny(s, ".:") || s == "localhost" }
	return isHost(parts[0]) && isHost(parts[1])
}

// pdbs returns the PodDisruptionBudgets the release renders.
func (m *manifest) pdbs() ([]policyv1.PodDisruptionBudget, error) {
	var out []policyv1.PodDisruptionBudget
	for _, o := range m.objects {
		if o.GetKind() != "PodDisruptionBudget" {
			continue
		}
		var p policyv1.PodDisruptionBudget
		if err := m.typed("PodDisruptionBudget", o.GetName(), &p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// selects reports whether a PDB's selector matches a set of pod labels.
func selects(p policyv1.PodDisruptionBudget, podLabels map[string]string) bool {
	sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
	return err == nil && !sel.Empty() && sel.Matches(labels.Set(podLabels))
}
