package testcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
)

var stageGVR = schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "stages"}

// StorageClasses of every simulated cluster: standard (the default) and fast-ssd bind
// their PVCs; broken never does.
var (
	BindingStorageClasses = []string{"standard", "fast-ssd"}
	BrokenStorageClass    = "broken"
)

// installStages installs kwok's Stage CRD and the stages of built-in kinds, from
// kwok's own stage files (node, pod, volume), adjusted for these clusters.
func (c *Cluster) installStages(ctx context.Context, bins *Binaries) error {
	crd, err := os.ReadFile(filepath.Join(bins.KwokModuleDir, "kustomize/crd/bases/kwok.x-k8s.io_stages.yaml"))
	if err != nil {
		return fmt.Errorf("testcluster: kwok Stage CRD: %w", err)
	}
	if err := c.applyYAML(ctx, crd); err != nil {
		return err
	}
	if err := c.waitCRD(ctx, "stages.kwok.x-k8s.io"); err != nil {
		return err
	}
	files := []string{
		"node/fast/node-initialize.yaml",
		"node/heartbeat/node-heartbeat.yaml",
		"pod/fast/pod-ready.yaml",
		"pod/fast/pod-complete.yaml",
		"pod/fast/pod-delete.yaml",
		"volume/fast/pvc-provision.yaml",
		"volume/fast/pv-bind.yaml",
		"volume/fast/pv-delete.yaml",
		"volume/fast/pvc-delete.yaml",
	}
	classes := "['" + strings.Join(BindingStorageClasses, "', '") + "']"
	for _, f := range files {
		raw, err := os.ReadFile(filepath.Join(bins.KwokModuleDir, "kustomize/stage", f))
		if err != nil {
			return fmt.Errorf("testcluster: kwok stage %s: %w", f, err)
		}
		// kwok's volume stages provision the class kwok-volume; here they provision ours.
		raw = bytes.ReplaceAll(raw, []byte("self.spec.storageClassName == 'kwok-volume'"), []byte("self.spec.storageClassName in "+classes))
		// The harness writes the nodes' addresses (AddNodes); kwok's initialisation, rendered
		// from a node as it was before them, would write an empty list over them.
		raw = bytes.ReplaceAll(raw, []byte("{{ if or (not $hasInternalIP) (not $hasHostname) }}"), []byte("{{ if false }}"))
		objs, err := decodeYAML(raw)
		if err != nil {
			return err
		}
		for _, o := range objs {
			if o.GetName() == "node-heartbeat" || o.GetName() == "node-initialize" {
				// A node whose heartbeat a test stopped is left alone (StopHeartbeat).
				exprs, _, _ := unstructured.NestedSlice(o.Object, "spec", "selector", "matchExpressions")
				exprs = append(exprs, map[string]any{"key": `.metadata.annotations["` + HeartbeatStopped + `"]`, "operator": "DoesNotExist"})
				_ = unstructured.SetNestedSlice(o.Object, exprs, "spec", "selector", "matchExpressions")
			}
			if o.GetName() == "pod-complete" {
				// The system-upgrade-controller's pods run until their upgrade is played
				// (sucop.go), which then ends them.
				exprs, _, _ := unstructured.NestedSlice(o.Object, "spec", "selector", "matchExpressions")
				exprs = append(exprs, map[string]any{"key": `.metadata.labels["` + sucLabelCtl + `"]`, "operator": "DoesNotExist"})
				_ = unstructured.SetNestedSlice(o.Object, exprs, "spec", "selector", "matchExpressions")
			}
			if o.GetName() == "node-heartbeat" {
				// A heartbeat every 5 s (kwok's default is 20-45 s), so that a node whose
				// heartbeat is older than 30 s really lost it.
				_ = unstructured.SetNestedField(o.Object, int64(5000), "spec", "delay", "durationMilliseconds")
				_ = unstructured.SetNestedField(o.Object, int64(2000), "spec", "delay", "jitterDurationMilliseconds")
			}
			if err := c.apply(ctx, o); err != nil {
				return err
			}
		}
	}
	if c.noLB {
		return nil
	}
	return c.applyYAML(ctx, []byte(fmt.Sprintf(serviceLBStage, c.lbIngress)))
}

// serviceLBStage gives every LoadBalancer Service a loopback address, as a cloud load
// balancer would give a public one.
const serviceLBStage = `
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: service-load-balancer
spec:
  resourceRef:
    apiGroup: v1
    kind: Service
  selector:
    matchExpressions:
    - key: '.spec.type'
      operator: 'In'
      values: ['LoadBalancer']
    - key: '.status.loadBalancer.ingress'
      operator: 'DoesNotExist'
  next:
    statusTemplate: |
      loadBalancer:
        ingress:
        - ip: %q
          ipMode: VIP
`

func established(crd *apiextv1.CustomResourceDefinition) bool {
	for _, cd := range crd.Status.Conditions {
		if cd.Type == apiextv1.Established && cd.Status == apiextv1.ConditionTrue {
			return true
		}
	}
	return false
}

func (c *Cluster) waitCRD(ctx context.Context, name string) error {
	ext, err := apiextclient.NewForConfig(c.REST)
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		crd, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err == nil && established(crd) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("testcluster: CRD %s not established", name)
}

// setupCluster gives the limited user read-only rights and creates the StorageClasses.
func (c *Cluster) setupCluster(ctx context.Context) error {
	manifest := `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: runr-limited-view
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: view
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: limited
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations:
    storageclass.kubernetes.io/is-default-class: "true"
provisioner: kwok.x-k8s.io/volume
reclaimPolicy: Delete
volumeBindingMode: Immediate
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: fast-ssd
provisioner: kwok.x-k8s.io/volume
reclaimPolicy: Delete
volumeBindingMode: Immediate
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: broken
provisioner: example.com/never-provisions
reclaimPolicy: Delete
volumeBindingMode: Immediate
`
	return c.applyYAML(ctx, []byte(manifest))
}

// ApplyYAML server-side applies every document of a manifest (for tests that prepare
// a cluster, e.g. an operator that already runs).
func (c *Cluster) ApplyYAML(ctx context.Context, manifest string) error {
	return c.applyYAML(ctx, []byte(manifest))
}

func (c *Cluster) applyYAML(ctx context.Context, raw []byte) error {
	objs, err := decodeYAML(raw)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if err := c.apply(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) apply(ctx context.Context, o *unstructured.Unstructured) error {
	dc, err := discovery.NewDiscoveryClientForConfig(c.REST)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	gvk := o.GroupVersionKind()
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("testcluster: mapping of %s: %w", gvk, err)
	}
	dyn, err := dynamic.NewForConfig(c.REST)
	if err != nil {
		return err
	}
	var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
	if m.Scope.Name() == "namespace" {
		ns := o.GetNamespace()
		if ns == "" {
			ns = "default"
		}
		ri = dyn.Resource(m.Resource).Namespace(ns)
	}
	raw, err := o.MarshalJSON()
	if err != nil {
		return err
	}
	force := true
	if _, err := ri.Patch(ctx, o.GetName(), types.ApplyPatchType, raw, metav1.PatchOptions{FieldManager: "runr-testcluster", Force: &force}); err != nil {
		return fmt.Errorf("testcluster: apply %s %s: %w", o.GetKind(), o.GetName(), err)
	}
	return nil
}

func decodeYAML(raw []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("testcluster: decode: %w", err)
		}
		if len(m) > 0 {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
}

var _ = apierrors.IsNotFound
var _ = stageGVR

// DynamicGet reads any object (for tests).
func (c *Cluster) DynamicGet(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
	dyn, err := dynamic.NewForConfig(c.REST)
	if err != nil {
		return nil, err
	}
	if ns == "" {
		return dyn.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
	}
	return dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
}

// APIExtGet reads a CustomResourceDefinition (for tests).
func (c *Cluster) APIExtGet(ctx context.Context, name string) (*apiextv1.CustomResourceDefinition, error) {
	ext, err := apiextclient.NewForConfig(c.REST)
	if err != nil {
		return nil, err
	}
	return ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
}
