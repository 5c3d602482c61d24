package imagemirror

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// PostRenderer maps the images of a Helm chart's rendered objects to a mirror (Helm's
// postrender.PostRenderer): the containers, init and ephemeral containers of every pod
// template, the image of Prometheus Operator's resources, and image references in container
// environment variables named *_IMAGE or *_IMAGE_NAME and in flags naming an image
// (--prometheus-config-reloader=, --*-image=), through which operators start their
// operands. Helm does not post-render hooks.
type PostRenderer struct{ Mirror string }

// docSep splits a rendered manifest into its documents as Helm's releaseutil does.
var docSep = regexp.MustCompile(`(?m)^---\s*$`)

// Run maps the images of every document; documents without an image to map stay byte for
// byte as they were.
func (p PostRenderer) Run(in *bytes.Buffer) (*bytes.Buffer, error) {
	out := &bytes.Buffer{}
	for _, doc := range docSep.Split(in.String(), -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		mapped, err := p.document(doc)
		if err != nil {
			return nil, err
		}
		out.WriteString("---\n")
		out.WriteString(strings.TrimLeft(mapped, "\n"))
		if !strings.HasSuffix(mapped, "\n") {
			out.WriteString("\n")
		}
	}
	return out, nil
}

// document maps one document, keeping its leading comments (Helm's "# Source:").
func (p PostRenderer) document(doc string) (string, error) {
	raw, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		return "", fmt.Errorf("imagemirror: read a rendered object: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return doc, nil // a comment-only or scalar document
	}
	if !MapObject(p.Mirror, obj) {
		return doc, nil
	}
	body, err := yaml.Marshal(obj)
	if err != nil {
		return "", fmt.Errorf("imagemirror: write a rendered object: %w", err)
	}
	var comments strings.Builder
	for _, line := range strings.Split(strings.TrimLeft(doc, "\n"), "\n") {
		if !strings.HasPrefix(line, "#") {
			break
		}
		comments.WriteString(line + "\n")
	}
	return comments.String() + string(body), nil
}

// prometheusKinds are Prometheus Operator's resources that name their image in spec.image.
var prometheusKinds = map[string]bool{"Prometheus": true, "Alertmanager": true, "ThanosRuler": true, "PrometheusAgent": true}

// MapObject maps the images of one Kubernetes object in place and reports whether any
// changed.
func MapObject(mirror string, obj map[string]any) bool {
	if mirror == "" {
		return false
	}
	kind, _ := obj["kind"].(string)
	spec, _ := obj["spec"].(map[string]any)
	changed := false
	if prometheusKinds[kind] && spec != nil {
		if img, ok := spec["image"].(string); ok && img != "" {
			if m := Map(mirror, img); m != img {
				spec["image"], changed = m, true
			}
		}
	}
	if ps := podSpec(kind, spec); ps != nil {
		changed = mapPodSpec(mirror, ps) || changed
	}
	return changed
}

// podSpec finds the pod spec of a workload (the spec itself for a Pod and for Prometheus
// Operator's resources, whose containers are merged into their pods).
func podSpec(kind string, spec map[string]any) map[string]any {
	if spec == nil {
		return nil
	}
	child := func(m map[string]any, keys ...string) map[string]any {
		for _, k := range keys {
			m, _ = m[k].(map[string]any)
			if m == nil {
				return nil
			}
		}
		return m
	}
	switch kind {
	case "Pod":
		return spec
	case "CronJob":
		return child(spec, "jobTemplate", "spec", "template", "spec")
	case "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "ReplicationController", "Job":
		return child(spec, "template", "spec")
	}
	if prometheusKinds[kind] {
		return spec
	}
	return nil
}

// imageFlag is a flag whose value is an image an operator runs.
var imageFlag = regexp.MustCompile(`^(--?(prometheus-config-reloader|[a-z0-9-]*-image)=)(.+)$`)

// mapPodSpec maps the images of a pod spec's containers.
func mapPodSpec(mirror string, ps map[string]any) bool {
	changed := false
	set := func(m map[string]any, key string) {
		if v, ok := m[key].(string); ok && v != "" {
			if mv := Map(mirror, v); mv != v {
				m[key], changed = mv, true
			}
		}
	}
	for _, key := range []string{"containers", "initContainers", "ephemeralContainers"} {
		list, _ := ps[key].([]any)
		for _, item := range list {
			ct, _ := item.(map[string]any)
			if ct == nil {
				continue
			}
			set(ct, "image")
			env, _ := ct["env"].([]any)
			for _, e := range env {
				ev, _ := e.(map[string]any)
				if name, _ := ev["name"].(string); ev != nil && (strings.HasSuffix(name, "_IMAGE") || strings.HasSuffix(name, "_IMAGE_NAME")) {
					set(ev, "value")
				}
			}
			args, _ := ct["args"].([]any)
			for i, a := range args {
				s, _ := a.(string)
				if m := imageFlag.FindStringSubmatch(s); m != nil {
					if mv := Map(mirror, m[3]); mv != m[3] {
						args[i], changed = m[1]+mv, true
					}
				}
			}
		}
	}
	return changed
}
