package testcluster_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"runr.dev/console/ops"
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

// checkKataRuntimeClass checks one RuntimeClass of kata-deploy against the shim's facts.
func checkKataRuntimeClass(rc nodev1.RuntimeClass, shim string) error {
	if rc.Handler != ops.KataRuntimeClass(shim) {
		return fmt.Errorf("RuntimeClass %s: handler %s, want %s", rc.Name, rc.Handler, ops.KataRuntimeClass(shim))
	}
	if rc.Scheduling == nil || !maps.Equal(rc.Scheduling.NodeSelector, map[string]string{"katacontainers.io/kata-runtime": "true"}) {
		return fmt.Errorf("RuntimeClass %s: scheduling %+v, want nodeSelector katacontainers.io/kata-runtime=true", rc.Name, rc.Scheduling)
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
