package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
)

// FieldManager is the server-side apply field manager of everything the console owns.
const FieldManager = "runr-console"

func jsonUnmarshal(raw []byte, v any) error { return json.Unmarshal(raw, v) }

// resourceFor maps an object's kind to its resource client.
func (c *Cluster) resourceFor(gvk schema.GroupVersionKind, ns string) (dynamic.ResourceInterface, error) {
	m, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		// A CRD created a moment ago: forget the cached discovery and try once more.
		c.Mapper.Reset()
		if m, err = c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			return nil, fmt.Errorf("kube: the cluster does not serve %s: %w", gvk.Kind, err)
		}
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.Dynamic.Resource(m.Resource).Namespace(ns), nil
	}
	return c.Dynamic.Resource(m.Resource), nil
}

// Apply server-side applies an object with the console's field manager, forcing
// ownership of the fields it sets.
func (c *Cluster) Apply(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	ri, err := c.resourceFor(obj.GroupVersionKind(), obj.GetNamespace())
	if err != nil {
		return nil, err
	}
	raw, err := obj.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("kube: apply %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	force := true
	out, err := ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, raw, metav1.PatchOptions{FieldManager: FieldManager, Force: &force})
	if err != nil {
		return nil, fmt.Errorf("apply %s %s: %w", obj.GetKind(), objName(obj.GetNamespace(), obj.GetName()), err)
	}
	return out, nil
}

// ApplyObject applies an object given as a map (apiVersion, kind, metadata, ...).
func (c *Cluster) ApplyObject(ctx context.Context, m map[string]any) (*unstructured.Unstructured, error) {
	return c.Apply(ctx, &unstructured.Unstructured{Object: m})
}

// ApplyYAML applies every document of a multi-document manifest.
func (c *Cluster) ApplyYAML(ctx context.Context, manifest []byte) (int, error) {
	objs, err := DecodeYAML(manifest)
	if err != nil {
		return 0, err
	}
	for i, o := range objs {
		if _, err := c.Apply(ctx, o); err != nil {
			return i, err
		}
	}
	return len(objs), nil
}

// DecodeYAML splits a multi-document manifest into objects (empty documents are skipped).
func DecodeYAML(manifest []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("kube: decode manifest: %w", err)
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
}

// Get reads an object; found is false when it does not exist.
func (c *Cluster) Get(ctx context.Context, gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, bool, error) {
	ri, err := c.resourceFor(gvk, ns)
	if err != nil {
		return nil, false, err
	}
	o, err := ri.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("get %s %s: %w", gvk.Kind, objName(ns, name), err)
	}
	return o, true, nil
}

// Delete removes an object; a missing one is not an error.
func (c *Cluster) Delete(ctx context.Context, gvk schema.GroupVersionKind, ns, name string) error {
	ri, err := c.resourceFor(gvk, ns)
	if err != nil {
		if meta.IsNoMatchError(errors.Unwrap(err)) || meta.IsNoMatchError(err) {
			return nil
		}
		return err
	}
	prop := metav1.DeletePropagationBackground
	err = ri.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &prop})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s %s: %w", gvk.Kind, objName(ns, name), err)
	}
	return nil
}

// MergePatch applies a JSON merge patch to an object.
func (c *Cluster) MergePatch(ctx context.Context, gvk schema.GroupVersionKind, ns, name string, patch any) error {
	return c.patch(ctx, gvk, ns, name, types.MergePatchType, patch)
}

// JSONPatch applies a JSON patch (RFC 6902) to an object: a "test" operation that fails
// (the object changed since it was read) fails the whole patch.
func (c *Cluster) JSONPatch(ctx context.Context, gvk schema.GroupVersionKind, ns, name string, ops []map[string]any) error {
	return c.patch(ctx, gvk, ns, name, types.JSONPatchType, ops)
}

func (c *Cluster) patch(ctx context.Context, gvk schema.GroupVersionKind, ns, name string, pt types.PatchType, patch any) error {
	ri, err := c.resourceFor(gvk, ns)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	if _, err := ri.Patch(ctx, name, pt, raw, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("patch %s %s: %w", gvk.Kind, objName(ns, name), err)
	}
	return nil
}

// List reads the objects of a kind with a label selector, in one namespace or (ns "") in
// all; a kind the cluster does not serve has none.
func (c *Cluster) List(ctx context.Context, gvk schema.GroupVersionKind, ns, selector string) ([]unstructured.Unstructured, error) {
	ri, err := c.resourceFor(gvk, ns)
	if err != nil {
		if meta.IsNoMatchError(errors.Unwrap(err)) || meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, err
	}
	l, err := ri.List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", gvk.Kind, err)
	}
	return l.Items, nil
}

func objName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// Well-known kinds the console reads and writes.
var (
	GVKNamespace      = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	GVKSecret         = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	GVKConfigMap      = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	GVKService        = schema.GroupVersionKind{Version: "v1", Kind: "Service"}
	GVKDeployment     = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	GVKStatefulSet    = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}
	GVKDaemonSet      = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"}
	GVKCronJob        = schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "CronJob"}
	GVKKnativeServing = schema.GroupVersionKind{Group: "operator.knative.dev", Version: "v1beta1", Kind: "KnativeServing"}
	GVKKService       = schema.GroupVersionKind{Group: "serving.knative.dev", Version: "v1", Kind: "Service"}
	GVKIngressRoute   = schema.GroupVersionKind{Group: "traefik.io", Version: "v1alpha1", Kind: "IngressRoute"}
	GVKMiddleware     = schema.GroupVersionKind{Group: "traefik.io", Version: "v1alpha1", Kind: "Middleware"}
	GVKTLSStore       = schema.GroupVersionKind{Group: "traefik.io", Version: "v1alpha1", Kind: "TLSStore"}
)

// Short trims a long error for a one-line message.
func Short(err error) string {
	s := err.Error()
	if i := strings.Index(s, "\n"); i > 0 {
		s = s[:i]
	}
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return s
}
