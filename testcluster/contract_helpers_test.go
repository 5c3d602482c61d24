package testcluster_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// jsonMap copies values through JSON, as Helm sees them.
func jsonMap(v map[string]any) map[string]any {
	raw, _ := json.Marshal(v)
	out := map[string]any{}
	_ = json.Unmarshal(raw, &out)
	return out
}

// normalizeJSON makes a value comparable after JSON and YAML round trips.
func normalizeJSON(v any) any {
	raw, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(raw, &out)
	return out
}

func toStrings(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, e := range list {
		out = append(out, fmt.Sprint(e))
	}
	if ss, ok := v.([]string); ok {
		out = append(out, ss...)
	}
	return out
}

func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

// grants reports whether rules allow verbs on a resource of an API group.
func grants(rules []rbacv1.PolicyRule, group, resource string, verbs []string) bool {
	for _, verb := range verbs {
		ok := slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool {
			return (slices.Contains(r.APIGroups, group) || slices.Contains(r.APIGroups, "*")) &&
				(slices.Contains(r.Resources, resource) || slices.Contains(r.Resources, "*")) &&
				(slices.Contains(r.Verbs, verb) || slices.Contains(r.Verbs, "*"))
		})
		if !ok {
			return false
		}
	}
	return true
}

// traefikArgs checks that Traefik's container has every argument of want.
func traefikArgs(r *rendering, want ...string) error {
	m, err := r.rendered()
	if err != nil {
		return err
	}
	pt, err := m.podTemplate(fmt.Sprint(dig(r.values, "deployment", "kind")), "traefik")
	if err != nil {
		return err
	}
	var missing []string
	for _, a := range want {
		if !slices.Contains(pt.Spec.Containers[0].Args, a) {
			missing = append(missing, a)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing arguments %v (have %v)", missing, pt.Spec.Containers[0].Args)
	}
	return nil
}

// crdsIn checks that the chart (or its subchart of that name) has exactly these CRDs in crds/.
func crdsIn(r *rendering, chartName string, want []string) error {
	var ch *chart.Chart
	if r.chart.Name() == chartName {
		ch = r.chart
	}
	for _, d := range r.chart.Dependencies() {
		if d.Name() == chartName {
			ch = d
		}
	}
	if ch == nil {
		return fmt.Errorf("no chart %s", chartName)
	}
	var got []string
	for _, f := range ch.CRDs() {
		for _, doc := range strings.Split(string(f.Data), "\n---") {
			var crd struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			if err := yaml.Unmarshal([]byte(doc), &crd); err != nil {
				return fmt.Errorf("%s: %w", f.Name, err)
			}
			if crd.Kind == "CustomResourceDefinition" {
				got = append(got, crd.Metadata.Name)
			}
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		return fmt.Errorf("CRDs in crds/ of %s: %v, want %v", chartName, got, want)
	}
	return nil
}

// zotPod returns the registry's pod template: the StatefulSet's with persistence, else the Deployment's.
func zotPod(r *rendering, m *manifest) (*corev1.PodTemplateSpec, error) {
	if on, _ := dig(r.values, "persistence").(bool); on {
		return m.podTemplate("StatefulSet", "runr-zot")
	}
	return m.podTemplate("Deployment", "runr-zot")
}

// mountedAt checks that the first container mounts volume (or claim template) name at path.
func mountedAt(pt *corev1.PodTemplateSpec, path, name string) error {
	for _, vm := range pt.Spec.Containers[0].VolumeMounts {
		if vm.MountPath == path {
			if vm.Name != name {
				return fmt.Errorf("%s is %s, want %s", path, vm.Name, name)
			}
			return nil
		}
	}
	return fmt.Errorf("nothing is mounted at %s", path)
}

// kpsFullname is kube-prometheus-stack's fullname: <release>-kube-prometheus-stack cut to 26 characters.
func kpsFullname(release string) string {
	name := release + "-kube-prometheus-stack"
	if strings.Contains(release, "kube-prometheus-stack") {
		name = release
	}
	if len(name) > 26 {
		name = name[:26]
	}
	return strings.TrimSuffix(name, "-")
}

func nestedString(o *unstructured.Unstructured, path ...string) (string, bool, error) {
	if o == nil {
		return "", false, nil
	}
	return unstructured.NestedString(o.Object, path...)
}

func nestedSlice(o *unstructured.Unstructured, path ...string) ([]any, bool, error) {
	if o == nil {
		return nil, false, nil
	}
	return unstructured.NestedSlice(o.Object, path...)
}

// persistenceRendered checks a chart's StatefulSet against its persistence values: with
// enabled, one volumeClaimTemplate storage of the size and class (none: the cluster's
// default); without, no claim (and no claim-backed volume storage).
func persistenceRendered(sts *appsv1.StatefulSet, p map[string]any) error {
	vcts := sts.Spec.VolumeClaimTemplates
	if on, _ := p["enabled"].(bool); !on {
		if len(vcts) != 0 {
			return fmt.Errorf("persistence off, volumeClaimTemplates %v", vcts)
		}
		return nil
	}
	if len(vcts) != 1 || vcts[0].Name != "storage" {
		return fmt.Errorf("persistence on, volumeClaimTemplates %v: want one named storage", vcts)
	}
	size := vcts[0].Spec.Resources.Requests[corev1.ResourceStorage]
	if size.String() != fmt.Sprint(p["size"]) {
		return fmt.Errorf("claim size %s, values say %v", size.String(), p["size"])
	}
	want, _ := p["storageClassName"].(string)
	if got := vcts[0].Spec.StorageClassName; (want == "") != (got == nil || *got == "") || (got != nil && *got != want) {
		return fmt.Errorf("claim class %v, values say %q", got, want)
	}
	for _, v := range sts.Spec.Template.Spec.Volumes {
		if v.Name == "storage" {
			return fmt.Errorf("a volume storage (%v) beside the claim of that name", v.VolumeSource)
		}
	}
	return nil
}
