package knative

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"runr.dev/console/store"
)

// Compat is the one table of Knative minor versions and the oldest Kubernetes
// minor each needs. The spec's table was lost; 1.16–1.20 are what its text implies (a
// 1.32 cluster is offered 1.20 down to 1.16; design.md). 1.21–1.23 take their minimum
// from knative.dev/pkg's DefaultKubernetesMinVersion as vendored by the operator
// release of that minor (knative/operator knative-v1.21.4: v1.33.0, knative-v1.22.3 and
// knative-v1.23.0: v1.34.0).
var Compat = []struct {
	Knative string
	MinK8s  int
}{
	{"1.23", 34},
	{"1.22", 34},
	{"1.21", 33},
	{"1.20", 32},
	{"1.19", 32},
	{"1.18", 31},
	{"1.17", 30},
	{"1.16", 29},
}

// operatorServing is, for each knative-operator release, the newest Knative Serving
// release of its own minor that it carries (knative/operator at tag knative-v<release>,
// cmd/operator/kodata/knative-serving/). Operator and Serving number their patches
// independently: operator 1.18.3 installs Serving 1.18.2, and there is no Serving 1.18.3.
var operatorServing = map[string]string{
	"1.16.0": "1.16.0", "1.16.1": "1.16.1", "1.16.2": "1.16.2", "1.16.3": "1.16.3", "1.16.4": "1.16.3", "1.16.5": "1.16.3", "1.16.6": "1.16.3",
	"1.17.0": "1.17.0", "1.17.1": "1.17.0", "1.17.2": "1.17.0", "1.17.3": "1.17.0", "1.17.4": "1.17.0", "1.17.5": "1.17.0", "1.17.6": "1.17.0",
	"1.17.7": "1.17.0", "1.17.8": "1.17.1",
	"1.18.0": "1.18.0", "1.18.1": "1.18.0", "1.18.2": "1.18.1", "1.18.3": "1.18.2",
	"1.19.0": "1.19.0", "1.19.1": "1.19.3", "1.19.2": "1.19.4", "1.19.3": "1.19.6", "1.19.4": "1.19.6", "1.19.5": "1.19.7", "1.19.6": "1.19.8",
	"1.20.0": "1.20.0", "1.20.1": "1.20.1", "1.20.2": "1.20.3",
	"1.21.0": "1.21.0", "1.21.1": "1.21.1", "1.21.2": "1.21.2", "1.21.3": "1.21.2", "1.21.4": "1.21.3",
	"1.22.0": "1.22.0", "1.22.1": "1.22.0", "1.22.2": "1.22.0", "1.22.3": "1.22.1",
	"1.23.0": "1.23.0",
}

// ServingRelease returns the Knative Serving release an operator chart version installs
// for its own minor. An operator release newer than the table installs at least the
// minor's first release, whose CRDs every later patch of the minor keeps.
func ServingRelease(operatorChart string) string {
	v := strings.TrimPrefix(operatorChart, "v")
	if s, ok := operatorServing[v]; ok {
		return s
	}
	return MinorOf(v) + ".0"
}

// maxOffered is how many Knative versions a cluster is offered.
const maxOffered = 5

// Version is a Knative minor a cluster may install: the operator chart that
// installs it and the Serving release that operator really ships.
type Version struct {
	// Version is the minor offered and the KnativeServing's spec.version (e.g. "1.20"):
	// the operator then installs its newest patch of that minor.
	Version string `json:"version"`
	Minor   string `json:"minor"`
	// ChartVersion is the newest knative-operator chart of the minor (e.g. "1.20.2").
	ChartVersion string `json:"chart_version"`
	// ServingVersion is the Serving release that operator installs (e.g. "1.20.3").
	ServingVersion string `json:"serving_version"`
	Preselected    bool   `json:"preselected"`
}

// MinorOf returns "1.20" of "1.20.2" (or of "v1.20").
func MinorOf(v string) string {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}

func minorNumber(v string) int {
	parts := strings.SplitN(MinorOf(v), ".", 2)
	if len(parts) < 2 {
		return -1
	}
	n, _ := strconv.Atoi(parts[1])
	return n
}

// CompatibleVersions returns up to five of the newest Knative minors that a cluster of
// Kubernetes minor k8sMinor supports and that the operator chart repository has, newest
// first; the first is preselected.
func (s *Service) CompatibleVersions(ctx context.Context, k8sMinor int) ([]Version, error) {
	charts, err := s.Charts.Versions(ctx, ChartKnativeOperator)
	if err != nil {
		return nil, err
	}
	newestChart := map[string]string{} // minor -> newest chart version (charts are newest first)
	for _, v := range charts {
		m := MinorOf(v)
		if _, ok := newestChart[m]; !ok {
			newestChart[m] = strings.TrimPrefix(v, "v")
		}
	}
	var out []Version
	for _, row := range Compat {
		if row.MinK8s > k8sMinor {
			continue
		}
		cv, ok := newestChart[row.Knative]
		if !ok {
			continue
		}
		out = append(out, Version{Version: row.Knative, Minor: row.Knative, ChartVersion: cv, ServingVersion: ServingRelease(cv)})
		if len(out) == maxOffered {
			break
		}
	}
	if len(out) > 0 {
		out[0].Preselected = true
	}
	return out, nil
}

// NextMinor returns the version one minor above current that the cluster supports, or an
// error that says why there is none.
func (s *Service) NextMinor(ctx context.Context, current string, k8sMinor int) (*Version, error) {
	vs, err := s.CompatibleVersions(ctx, k8sMinor)
	if err != nil {
		return nil, err
	}
	want := minorNumber(current) + 1
	for _, v := range vs {
		if minorNumber(v.Version) == want {
			v := v
			return &v, nil
		}
	}
	return nil, fmt.Errorf("no Knative 1.%d for this cluster: it is not in the operator chart repository, or needs a newer Kubernetes", want)
}

// K8sMinor reads the stored Kubernetes minor of a region ("v1.32.4" → 32).
func K8sMinor(r *store.Region) int {
	parts := strings.Split(strings.TrimPrefix(r.K8sVersion, "v"), ".")
	if len(parts) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(parts[1])
	return n
}

// RegionVersions returns the Knative versions offered to a region's cluster.
func (s *Service) RegionVersions(ctx context.Context, r *store.Region) ([]Version, error) {
	return s.CompatibleVersions(ctx, K8sMinor(r))
}

// RegionNextVersion returns the Knative version a region's Serving upgrades to.
func (s *Service) RegionNextVersion(ctx context.Context, r *store.Region) (*Version, error) {
	return s.NextMinor(ctx, r.KnativeVersion, K8sMinor(r))
}

// resolveVersion maps "1.20" (or a release of it, "1.20.3") to an offered minor; ""
// picks the newest. The string says why none fits.
func resolveVersion(vs []Version, want string) (*Version, string) {
	if len(vs) == 0 {
		return nil, "No Knative version is offered for this cluster (its Kubernetes, or the operator chart repository)."
	}
	if want == "" {
		return &vs[0], ""
	}
	want = MinorOf(want)
	for i, v := range vs {
		if v.Minor == want {
			return &vs[i], ""
		}
	}
	offered := make([]string, len(vs))
	for i, v := range vs {
		offered[i] = v.Version
	}
	return nil, "Knative " + want + " is not offered for this cluster; choose one of " + strings.Join(offered, ", ") + "."
}
