package testcluster_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"runr.dev/console/ops/isolation"
	"sigs.k8s.io/yaml"
)

// Helpers of the sandbox runtimes' facts (kata-deploy, runtime-class-manager).

// kataOverheads are kata-deploy's default pod overheads (memory, cpu) of the shims the
// console offers (templates/runtimeclasses.yaml, kata-deploy.runtimeClassConfigs).
var kataOverheads = map[string][2]string{
	"qemu": {"160Mi", "250m"}, "clh": {"130Mi", "250m"}, "fc": {"130Mi", "250m"}, "dragonball": {"130Mi", "250m"},
}

// kataPicked are the shims the console enables explicitly (shims.<name>.enabled: true), sorted.
func kataPicked(r *rendering) []string {
	var out []string
	shims, _ := jsonMap(r.vc.Values)["shims"].(map[string]any)
	for name, v := range shims {
		if m, ok := v.(map[string]any); ok && m["enabled"] == true {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// kataPod returns the kata-deploy DaemonSet's pod template and its kube-kata container.
func kataPod(r *rendering) (*corev1.PodTemplateSpec, *corev1.Container, error) {
	m, err := r.rendered()
	if err != nil {
		return nil, nil, err
	}
	pt, err := m.podTemplate("DaemonSet", "kata-deploy")
	if err != nil {
		return nil, nil, err
	}
	c, err := container(pt, "kube-kata")
	return pt, c, err
}

// envOf returns a container's env variables with a plain value.
func envOf(c *corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			out[e.Name] = e.Value
		}
	}
	return out
}

// runtimeClasses returns the RuntimeClasses a release renders, by name.
func (m *manifest) runtimeClasses() (map[string]nodev1.RuntimeClass, error) {
	out := map[string]nodev1.RuntimeClass{}
	for _, o := range m.objects {
		if o.GetKind() != "RuntimeClass" {
			continue
		}
		var rc nodev1.RuntimeClass
		if err := m.typed("RuntimeClass", o.GetName(), &rc); err != nil {
			return nil, err
		}
		out[rc.Name] = rc
	}
	return out, nil
}

// kataArchSuffix is kata-deploy's env suffix of each architecture its chart knows
// (KD/templates/_helpers.tpl commonEnv).
var kataArchSuffix = map[string]string{"amd64": "X86_64", "arm64": "AARCH64", "s390x": "S390X", "ppc64le": "PPC64LE"}

// kataPodArchs are the architectures kata-deploy's pods may run on: the kubernetes.io/arch
// of their nodeSelector, else every architecture of the chart.
func kataPodArchs(pt *corev1.PodTemplateSpec) []string {
	if a := pt.Spec.NodeSelector["kubernetes.io/arch"]; a != "" {
		return []string{a}
	}
	return slices.Sorted(maps.Keys(kataArchSuffix))
}

// kataShimArchs are a shim's supportedArches (the chart's values merged with the case's).
func kataShimArchs(r *rendering, shim string) []string {
	return toStrings(dig(r.values, "shims", shim, "supportedArches"))
}

// kataPickedOn are the shims the console enables that support an architecture, sorted.
func kataPickedOn(r *rendering, arch string) []string {
	var out []string
	for _, shim := range kataPicked(r) {
		if slices.Contains(kataShimArchs(r, shim), arch) {
			out = append(out, shim)
		}
	}
	return out
}

// kataUnreadDefaults lists the defaultShim.<arch> keys the console sets that the chart
// does not read: it sets DEFAULT_SHIM_<ARCH> only when that shim is enabled for <arch>.
func kataUnreadDefaults(r *rendering) ([]string, error) {
	set, _ := jsonMap(r.vc.Values)["defaultShim"].(map[string]any)
	if len(set) == 0 {
		return nil, nil
	}
	_, c, err := kataPod(r)
	if err != nil {
		return nil, err
	}
	env := envOf(c)
	var out []string
	for _, arch := range slices.Sorted(maps.Keys(set)) {
		suffix, ok := kataArchSuffix[arch]
		if ok && env["DEFAULT_SHIM_"+suffix] == fmt.Sprint(set[arch]) {
			continue
		}
		out = append(out, fmt.Sprintf("defaultShim.%s (%v is not enabled for %s: no DEFAULT_SHIM_%s)", arch, set[arch], arch, suffix))
	}
	return out, nil
}

// kataVendorsNFD checks that the chart vendors node-feature-discovery 0.18.x under its
// condition, and that the console's values leave it off. The chart is read again from its
// files: rendering drops the disabled subchart from it.
func kataVendorsNFD(r *rendering) error {
	var files []*loader.BufferedFile
	for _, f := range r.chart.Raw {
		files = append(files, &loader.BufferedFile{Name: f.Name, Data: f.Data})
	}
	ch, err := loader.LoadFiles(files)
	if err != nil {
		return fmt.Errorf("load the chart again: %w", err)
	}
	var dep *chart.Dependency
	for _, d := range ch.Metadata.Dependencies {
		if d.Name == "node-feature-discovery" {
			dep = d
		}
	}
	if dep == nil || dep.Condition != "node-feature-discovery.enabled" || dep.Version != "~0.18.0" {
		return fmt.Errorf("Chart.yaml's dependency node-feature-discovery: %+v, want ~0.18.0 under node-feature-discovery.enabled", dep)
	}
	var vendored []string
	for _, sub := range ch.Dependencies() {
		vendored = append(vendored, sub.Name()+" "+sub.Metadata.Version)
	}
	if !slices.Contains(vendored, "node-feature-discovery 0.18.3") {
		return fmt.Errorf("vendored subcharts %v, want node-feature-discovery 0.18.3", vendored)
	}
	if on, _ := dig(r.values, "node-feature-discovery", "enabled").(bool); on {
		return errors.New("the console's values enable the node-feature-discovery subchart")
	}
	return nil
}

// kataCleanupHookForbidden checks kata-deploy-rb-cleanup's identity: a post-delete Job run
// as kata-deploy-sa-cleanup, bound to kata-deploy-cleanup-role, which grants the deletes of
// the kept RBAC and no get or list of pods (the Job's count of pods is then always 0).
func kataCleanupHookForbidden(m *manifest) error {
	job := m.find("Job", "kata-deploy-rb-cleanup")
	if job == nil || !slices.Contains(m.hooks, job) || job.GetAnnotations()["helm.sh/hook"] != "post-delete" {
		return errors.New("no post-delete hook Job kata-deploy-rb-cleanup")
	}
	var j batchv1.Job
	if err := m.typed("Job", "kata-deploy-rb-cleanup", &j); err != nil {
		return err
	}
	var crb rbacv1.ClusterRoleBinding
	if err := m.typed("ClusterRoleBinding", "kata-deploy-cleanup-rb", &crb); err != nil {
		return err
	}
	if sa := j.Spec.Template.Spec.ServiceAccountName; sa != "kata-deploy-sa-cleanup" || crb.RoleRef.Name != "kata-deploy-cleanup-role" ||
		len(crb.Subjects) != 1 || crb.Subjects[0].Name != sa {
		return fmt.Errorf("kata-deploy-rb-cleanup runs as %q, kata-deploy-cleanup-rb binds %+v to %s", sa, crb.Subjects, crb.RoleRef.Name)
	}
	var cr rbacv1.ClusterRole
	if err := m.typed("ClusterRole", "kata-deploy-cleanup-role", &cr); err != nil {
		return err
	}
	for _, kn := range [][2]string{{"rbac.authorization.k8s.io", "clusterroles"}, {"rbac.authorization.k8s.io", "clusterrolebindings"}, {"", "serviceaccounts"}} {
		if !grants(cr.Rules, kn[0], kn[1], []string{"delete"}) {
			return fmt.Errorf("kata-deploy-cleanup-role does not grant delete on %s", kn[1])
		}
	}
	for _, verb := range []string{"get", "list"} {
		if grants(cr.Rules, "", "pods", []string{verb}) {
			return fmt.Errorf("kata-deploy-cleanup-role grants %s on pods: upstream's does not (its Job would then wait for the pods)", verb)
		}
	}
	return nil
}

// checkKataRuntimeClass checks one RuntimeClass of kata-deploy against the shim's facts:
// its handler, its scheduling (kata-deploy's label, and kubernetes.io/arch among the
// shim's architectures when the pods may run on others too) and its overhead.
func checkKataRuntimeClass(rc nodev1.RuntimeClass, shim string, shimArchs, podArchs []string) error {
	if rc.Handler != isolation.KataRuntimeClass(shim) {
		return fmt.Errorf("RuntimeClass %s: handler %s, want %s", rc.Name, rc.Handler, isolation.KataRuntimeClass(shim))
	}
	if rc.Scheduling == nil || rc.Scheduling.NodeSelector["katacontainers.io/kata-runtime"] != "true" {
		return fmt.Errorf("RuntimeClass %s: scheduling %+v, want nodeSelector katacontainers.io/kata-runtime=true", rc.Name, rc.Scheduling)
	}
	sel := rc.Scheduling.NodeSelector
	for k := range sel {
		if k != "katacontainers.io/kata-runtime" && k != "kubernetes.io/arch" {
			return fmt.Errorf("RuntimeClass %s selects %s too", rc.Name, k)
		}
	}
	if a, pinned := sel["kubernetes.io/arch"]; pinned && !slices.Contains(shimArchs, a) {
		return fmt.Errorf("RuntimeClass %s selects kubernetes.io/arch=%s; %s runs on %v", rc.Name, a, shim, shimArchs)
	} else if !pinned && slices.ContainsFunc(podArchs, func(a string) bool { return !slices.Contains(shimArchs, a) }) {
		return fmt.Errorf("RuntimeClass %s schedules on every architecture of the pods %v; %s runs on %v only", rc.Name, podArchs, shim, shimArchs)
	}
	want, ok := kataOverheads[shim]
	if !ok {
		return nil
	}
	if rc.Overhead == nil {
		return fmt.Errorf("RuntimeClass %s has no overhead", rc.Name)
	}
	mem, cpu := rc.Overhead.PodFixed[corev1.ResourceMemory], rc.Overhead.PodFixed[corev1.ResourceCPU]
	if mem.String() != want[0] || cpu.String() != want[1] {
		return fmt.Errorf("RuntimeClass %s: overhead %s/%s, want %s/%s", rc.Name, mem.String(), cpu.String(), want[0], want[1])
	}
	return nil
}

// crdOf decodes the CRD of that name from a chart's crds/.
func crdOf(r *rendering, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	for _, f := range r.chart.CRDs() {
		for _, doc := range strings.Split(string(f.Data), "\n---") {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.UnmarshalStrict([]byte(doc), crd); err != nil {
				return nil, fmt.Errorf("%s: %w", f.Name, err)
			}
			if crd.Name == name {
				return crd, nil
			}
		}
	}
	return nil, fmt.Errorf("no CRD %s in crds/", name)
}

// validateCustom checks an object against a CRD version's schema for what the console's
// objects use: types (object, array, string, integer, boolean), required fields, enums,
// and fields the schema does not know (which the API server prunes silently).
func validateCustom(crd *apiextensionsv1.CustomResourceDefinition, version string, obj map[string]any) error {
	for _, v := range crd.Spec.Versions {
		if v.Name == version && v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			var errs []string
			checkSchema(v.Schema.OpenAPIV3Schema, normalizeJSON(obj), "", true, &errs)
			if len(errs) > 0 {
				slices.Sort(errs)
				return errors.New(strings.Join(errs, "; "))
			}
			return nil
		}
	}
	return fmt.Errorf("CRD %s has no schema for %s", crd.Name, version)
}

// checkSchema walks a value along its schema, adding what is wrong to errs.
func checkSchema(s *apiextensionsv1.JSONSchemaProps, v any, path string, root bool, errs *[]string) {
	at := strings.TrimPrefix(path, ".")
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e apiextensionsv1.JSON) bool { return string(e.Raw) == string(mustJSON(v)) }) {
		*errs = append(*errs, fmt.Sprintf("%s: %s is not one of the enum", at, mustJSON(v)))
	}
	switch x := v.(type) {
	case map[string]any:
		if s.Type != "object" {
			*errs = append(*errs, fmt.Sprintf("%s: an object, the schema says %s", at, s.Type))
			return
		}
		for _, req := range s.Required {
			if _, ok := x[req]; !ok {
				*errs = append(*errs, fmt.Sprintf("%s: required %s missing", at, req))
			}
		}
		for k, e := range x {
			switch {
			case root && (k == "apiVersion" || k == "kind" || k == "metadata"):
			case s.Properties != nil && hasProp(s, k):
				p := s.Properties[k]
				checkSchema(&p, e, path+"."+k, false, errs)
			case s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
				checkSchema(s.AdditionalProperties.Schema, e, path+"."+k, false, errs)
			case s.XPreserveUnknownFields == nil || !*s.XPreserveUnknownFields:
				*errs = append(*errs, fmt.Sprintf("%s.%s: unknown field (pruned)", at, k))
			}
		}
	case []any:
		if s.Type != "array" || s.Items == nil || s.Items.Schema == nil {
			*errs = append(*errs, fmt.Sprintf("%s: an array, the schema says %s", at, s.Type))
			return
		}
		for i, e := range x {
			checkSchema(s.Items.Schema, e, fmt.Sprintf("%s[%d]", path, i), false, errs)
		}
	case string:
		if s.Type != "string" {
			*errs = append(*errs, fmt.Sprintf("%s: a string, the schema says %s", at, s.Type))
		}
	case float64:
		if s.Type != "integer" && s.Type != "number" {
			*errs = append(*errs, fmt.Sprintf("%s: a number, the schema says %s", at, s.Type))
		}
	case bool:
		if s.Type != "boolean" {
			*errs = append(*errs, fmt.Sprintf("%s: a boolean, the schema says %s", at, s.Type))
		}
	}
}

func hasProp(s *apiextensionsv1.JSONSchemaProps, k string) bool {
	_, ok := s.Properties[k]
	return ok
}

func mustJSON(v any) []byte {
	raw, _ := json.Marshal(v)
	return raw
}
