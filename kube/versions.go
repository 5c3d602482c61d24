package kube

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// KnativeCompat is the one table of Knative minor versions and the oldest Kubernetes
// minor each needs. The spec's table was lost; these rows are what its text implies (a
// 1.32 cluster is offered 1.20, 1.19, 1.18, 1.17 and 1.16; see design.md).
var KnativeCompat = []struct {
	Knative string
	MinK8s  int
}{
	{"1.20", 32},
	{"1.19", 32},
	{"1.18", 31},
	{"1.17", 30},
	{"1.16", 29},
}

// maxOffered is how many Knative versions a cluster is offered.
const maxOffered = 5

// KnativeVersion is a Knative version a cluster may install, with its operator chart.
type KnativeVersion struct {
	Version      string `json:"version"`       // e.g. 1.20.2
	Minor        string `json:"minor"`         // e.g. 1.20
	ChartVersion string `json:"chart_version"` // the knative-operator chart of that minor
	Preselected  bool   `json:"preselected"`
}

// minorOf returns "1.20" of "1.20.2" (or of "v1.20").
func minorOf(v string) string {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}

func minorNumber(v string) int {
	parts := strings.SplitN(minorOf(v), ".", 2)
	if len(parts) < 2 {
		return -1
	}
	n, _ := strconv.Atoi(parts[1])
	return n
}

// CompatibleVersions returns up to five of the newest Knative versions that a cluster of
// Kubernetes minor k8sMinor supports and that the operator chart repository has, newest
// first; the first is preselected.
func (s *Service) CompatibleVersions(ctx context.Context, k8sMinor int) ([]KnativeVersion, error) {
	charts, err := s.Charts.Versions(ctx, ChartKnativeOperator)
	if err != nil {
		return nil, err
	}
	newestChart := map[string]string{} // minor -> newest chart version (charts are newest first)
	for _, v := range charts {
		m := minorOf(v)
		if _, ok := newestChart[m]; !ok {
			newestChart[m] = strings.TrimPrefix(v, "v")
		}
	}
	var out []KnativeVersion
	for _, row := range KnativeCompat {
		if row.MinK8s > k8sMinor {
			continue
		}
		cv, ok := newestChart[row.Knative]
		if !ok {
			continue
		}
		out = append(out, KnativeVersion{Version: cv, Minor: row.Knative, ChartVersion: cv})
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
func (s *Service) NextMinor(ctx context.Context, current string, k8sMinor int) (*KnativeVersion, error) {
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
