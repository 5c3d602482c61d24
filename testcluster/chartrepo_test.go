package testcluster_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"runr.dev/console/testcluster"
)

// servingCRDNames are the 12 CRDs of a Serving release (serving-crds.yaml).
var servingCRDNames = []string{"certificates.networking.internal.knative.dev", "clusterdomainclaims.networking.internal.knative.dev",
	"configurations.serving.knative.dev", "domainmappings.serving.knative.dev", "images.caching.internal.knative.dev",
	"ingresses.networking.internal.knative.dev", "metrics.autoscaling.internal.knative.dev", "podautoscalers.autoscaling.internal.knative.dev",
	"revisions.serving.knative.dev", "routes.serving.knative.dev", "serverlessservices.networking.internal.knative.dev", "services.serving.knative.dev"}

func TestChartRepo(t *testing.T) {
	s := serve(t)
	if !strings.HasPrefix(s.repo.URL, "http://127.0.0.1:") || strings.HasSuffix(s.repo.URL, "/") {
		t.Fatalf("URL = %q, want http://127.0.0.1:PORT", s.repo.URL)
	}
	versions := map[string][]string{}
	for name, cvs := range s.idx.Entries {
		for _, cv := range cvs {
			versions[name] = append(versions[name], cv.Version)
		}
	}
	var operator []string
	for _, v := range testcluster.KnativeOperatorVersions {
		operator = append(operator, "v"+v)
	}
	want := map[string][]string{"traefik": {"40.3.0"}, "zot": {"0.1.125"}, "kube-prometheus-stack": {"79.5.0"}, "loki-stack": {"2.10.2"},
		"tempo": {"3.2.0"}, "opentelemetry-collector": {"0.176.0"}, "knative-operator": operator,
		"kata-deploy": {"3.32.0"}, "runtime-class-manager": {"0.2.0"},
		"policy-controller": {"0.10.6"}, "gpu-operator": {"v26.7.0"}, "nvidia-device-plugin": {"0.20.0"}, "cloudnative-pg": {"0.29.0"}, "seaweedfs": {"4.44.0"},
		"system-upgrade-controller": {"105.0.0"}}
	if fmt.Sprint(versions) != fmt.Sprint(want) {
		t.Errorf("index.yaml versions\n  got  %v\n  want %v", versions, want)
	}

	t.Run("operator-releases-exist", func(t *testing.T) {
		newest := map[string]string{}
		perMinor := map[string]int{}
		for _, v := range testcluster.KnativeOperatorVersions {
			if !slices.Contains(testcluster.OperatorReleases(), v) {
				t.Errorf("operator release %s does not exist upstream", v)
			}
			minor := v[:strings.LastIndex(v, ".")]
			perMinor[minor]++
			if n, ok := newest[minor]; !ok || semver.MustParse(v).GreaterThan(semver.MustParse(n)) {
				newest[minor] = v
			}
		}
		for _, r := range testcluster.OperatorReleases() {
			minor := r[:strings.LastIndex(r, ".")]
			if n, ok := newest[minor]; ok && semver.MustParse(r).GreaterThan(semver.MustParse(n)) {
				t.Errorf("minor %s: the repository lacks its newest patch %s", minor, r)
			}
		}
		for m := 16; m <= 23; m++ {
			if _, ok := newest[fmt.Sprintf("1.%d", m)]; !ok {
				t.Errorf("no operator chart of 1.%d", m)
			}
		}
		older := 0
		for _, n := range perMinor {
			if n > 1 {
				older++
			}
		}
		if older == 0 {
			t.Error("no minor has an older patch than its newest")
		}
	})

	t.Run("serving-releases", func(t *testing.T) {
		want := map[string]string{"1.16": "0-3", "1.17": "0-2", "1.18": "0-2", "1.19": "0-9", "1.20": "0-3", "1.21": "0-3", "1.22": "0-1", "1.23": "0-0"}
		got := map[string][]int{}
		for _, v := range testcluster.ServingReleases() {
			sv := semver.MustParse(v)
			got[fmt.Sprintf("%d.%d", sv.Major(), sv.Minor())] = append(got[fmt.Sprintf("%d.%d", sv.Major(), sv.Minor())], int(sv.Patch()))
		}
		for minor, span := range want {
			p := got[minor]
			slices.Sort(p)
			if span != fmt.Sprintf("%d-%d", p[0], p[len(p)-1]) || len(p) != p[len(p)-1]+1 {
				t.Errorf("Serving %s patches %v, want %s", minor, p, span)
			}
		}
		// Operator and Serving patch numbers are independent.
		for op, spec := range map[string]string{"1.18.3": "1.18", "1.17.8": "1.17", "1.20.2": "1.20", "1.23.0": ""} {
			v, ok := testcluster.ResolveServingVersion(op, spec)
			wantV := map[string]string{"1.18.3": "1.18.2", "1.17.8": "1.17.1", "1.20.2": "1.20.3", "1.23.0": "1.23.0"}[op]
			if !ok || v != wantV {
				t.Errorf("operator %s resolves %q to %s %v, want %s", op, spec, v, ok, wantV)
			}
		}
		if v, ok := testcluster.ResolveServingVersion("1.18.3", "1.18.3"); ok {
			t.Errorf("operator 1.18.3 carries Serving 1.18.3 (%s)", v)
		}
		if _, ok := testcluster.ResolveServingVersion("1.20.2", "1.16"); ok {
			t.Error("operator 1.20.2 carries Serving 1.16")
		}
	})

	t.Run("serving-crds", func(t *testing.T) {
		for _, v := range testcluster.ServingReleases() {
			raw := httpGet(t, fmt.Sprintf("%s/knative-serving/v%s/serving-crds.yaml", s.repo.URL, v), http.StatusOK)
			var names []string
			for _, doc := range strings.Split(string(raw), "\n---") {
				crd := &apiextensionsv1.CustomResourceDefinition{}
				if err := yaml.UnmarshalStrict([]byte(doc), crd); err != nil {
					t.Fatalf("v%s: bad CRD: %v\n%s", v, err, doc)
				}
				if crd.Name == "" {
					continue
				}
				names = append(names, crd.Name)
				if crd.Labels["app.kubernetes.io/version"] != v || crd.Name != crd.Spec.Names.Plural+"."+crd.Spec.Group || len(crd.Spec.Versions) != 1 {
					t.Errorf("v%s: CRD %s: labels %v, versions %d", v, crd.Name, crd.Labels, len(crd.Spec.Versions))
				}
			}
			slices.Sort(names)
			if !slices.Equal(names, servingCRDNames) {
				t.Errorf("v%s: CRDs %v, want %v", v, names, servingCRDNames)
			}
		}
		for _, v := range []string{"v1.18.3", "v1.17.8", "v1.16.6", "v1.21.4", "v1.22.3", "1.20.2", "v1.12.0"} {
			httpGet(t, s.repo.URL+"/knative-serving/"+v+"/serving-crds.yaml", http.StatusNotFound)
		}
		httpGet(t, s.repo.URL+"/no-such-chart-1.0.0.tgz", http.StatusNotFound)
	})
}
