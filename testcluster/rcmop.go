package testcluster

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// The simulated runtime-class-manager (spinframework/runtime-class-manager v0.2.0,
// internal/controller/shim_controller.go and job_controller.go). While a Deployment
// labelled app.kubernetes.io/name=runtime-class-manager is available, for each Shim it:
//
//   - puts its finalizer on the Shim and writes status.nodes (the nodes matching
//     spec.nodeSelector, every node without one) and status.nodesReady (those labelled
//     <shim name>=provisioned) with the object (the CRD has no status subresource);
//   - creates RuntimeClass spec.runtimeClass.name (handler spec.runtimeClass.handler,
//     scheduling.nodeSelector = spec.nodeSelector, label <name>=true) owned by the Shim,
//     when there is none of that name;
//   - on each matching node whose label <shim name> is neither provisioned nor pending
//     and whose OS and architecture have an entry in spec.fetchStrategy (platforms, else
//     anonHttp), sets the label to pending and creates Job <node>-<shim>-install (cut to 63
//     characters) in the controller's namespace, owned by the Shim; kwok completes it, and
//     the completed Job makes the label provisioned (a failed one: failed). A Shim whose
//     rolloutStrategy is rolling gets no Job ("not implemented yet" upstream);
//   - once the Shim is being deleted: on each matching node that has the label, sets it to
//     uninstall and creates Job <node>-<shim>-uninstall (not owned), then removes the
//     finalizer; the completed uninstall Job removes the label, and garbage collection
//     takes the RuntimeClass and the install Jobs.
//
// A node that stops matching keeps its label (upstream uninstalls nothing there). Jobs
// are created once: as upstream's apply of an unchanged finished Job, an existing one is
// left as it is (and no new completion comes of it).

var gvrShim = schema.GroupVersionResource{Group: "runtime.spinkube.dev", Version: "v1alpha1", Resource: "shims"}

// Names runtime-class-manager uses.
const (
	rcmSelector    = "app.kubernetes.io/name=runtime-class-manager"
	rcmFinalizer   = "rcm.spinkube.dev/finalizer"
	rcmShimLabel   = "spinkube.dev/shimName"
	rcmOpLabel     = "spinkube.dev/operation"
	rcmJobLabel    = "spinkube.dev/job"
	rcmProvisioned = "provisioned"
	rcmPending     = "pending"
	rcmInstall     = "install"
	rcmUninstall   = "uninstall"
)

// rcmOperator remembers the installer Jobs whose outcome it has acted on (upstream acts
// on a Job's events).
type rcmOperator struct {
	handled map[types.UID]bool
}

// rcmConfig is the controller's configuration, from its Deployment's env.
type rcmConfig struct {
	namespace, downloader, installer string
	ttl                              int32
}

func rcmConfigOf(d *appsv1.Deployment) rcmConfig {
	cfg := rcmConfig{namespace: d.Namespace}
	for _, ctr := range d.Spec.Template.Spec.Containers {
		for _, e := range ctr.Env {
			switch e.Name {
			case "CONTROLLER_NAMESPACE":
				cfg.namespace = e.Value
			case "SHIM_DOWNLOADER_IMAGE":
				cfg.downloader = e.Value
			case "SHIM_NODE_INSTALLER_IMAGE":
				cfg.installer = e.Value
			case "SHIM_NODE_INSTALLER_JOB_TTL":
				if n, err := strconv.ParseInt(e.Value, 10, 32); err == nil && n > 0 {
					cfg.ttl = int32(n)
				}
			}
		}
	}
	return cfg
}

func (c *Cluster) reconcileRCM(op *rcmOperator) func(ctx context.Context, dyn dynamic.Interface) error {
	return func(ctx context.Context, dyn dynamic.Interface) error {
		d, err := c.availableDeployment(ctx, rcmSelector, "")
		if err != nil || d == nil {
			return err
		}
		cfg := rcmConfigOf(d)
		shims, err := dyn.Resource(gvrShim).List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("list Shims: %w", err)
		}
		nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list nodes: %w", err)
		}
		var errs []error
		for i := range shims.Items {
			errs = append(errs, c.reconcileShim(ctx, dyn, cfg, &shims.Items[i], nodes.Items))
		}
		errs = append(errs, c.reconcileShimJobs(ctx, op))
		return errors.Join(errs...)
	}
}

// reconcileShim does what the controller does for one Shim.
func (c *Cluster) reconcileShim(ctx context.Context, dyn dynamic.Interface, cfg rcmConfig, o *unstructured.Unstructured, nodes []corev1.Node) error {
	name := o.GetName()
	sel, _, _ := unstructured.NestedStringMap(o.Object, "spec", "nodeSelector")
	var matching []corev1.Node
	for _, n := range nodes {
		if labels.SelectorFromSet(sel).Matches(labels.Set(n.Labels)) {
			matching = append(matching, n)
		}
	}
	o, err := c.updateShim(ctx, dyn, o, matching)
	if err != nil {
		return err
	}
	if o.GetDeletionTimestamp() != nil {
		return c.deleteShim(ctx, dyn, cfg, o, matching)
	}
	if err := c.ensureShimRuntimeClass(ctx, o, sel); err != nil {
		return err
	}
	if t, _, _ := unstructured.NestedString(o.Object, "spec", "rolloutStrategy", "type"); t == "rolling" {
		return fmt.Errorf("Shim %s: rolling strategy not implemented yet", name)
	}
	var errs []error
	for _, n := range matching {
		if v := n.Labels[name]; v == rcmProvisioned || v == rcmPending {
			continue
		}
		location, sha, err := shimArtifact(o, &n)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := c.setNodeLabel(ctx, n.Name, name, rcmPending); err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, c.createShimJob(ctx, cfg, o, n.Name, rcmInstall, location, sha))
	}
	return errors.Join(errs...)
}

// updateShim writes the Shim's status and, unless it is being deleted, its finalizer; it
// returns the stored Shim.
func (c *Cluster) updateShim(ctx context.Context, dyn dynamic.Interface, o *unstructured.Unstructured, matching []corev1.Node) (*unstructured.Unstructured, error) {
	ready := 0
	for _, n := range matching {
		if n.Labels[o.GetName()] == rcmProvisioned {
			ready++
		}
	}
	u := o.DeepCopy()
	_ = unstructured.SetNestedField(u.Object, int64(len(matching)), "status", "nodes")
	_ = unstructured.SetNestedField(u.Object, int64(ready), "status", "nodesReady")
	fins := u.GetFinalizers()
	if u.GetDeletionTimestamp() == nil && !slices.Contains(fins, rcmFinalizer) {
		u.SetFinalizers(append(fins, rcmFinalizer))
	}
	if equalObjects(o, u) {
		return o, nil
	}
	stored, err := dyn.Resource(gvrShim).Update(ctx, u, metav1.UpdateOptions{FieldManager: "runr-testcluster"})
	if err != nil {
		return nil, fmt.Errorf("update Shim %s: %w", o.GetName(), err)
	}
	return stored, nil
}

// deleteShim uninstalls a Shim being deleted from the matching nodes that have its label,
// then removes its finalizer.
func (c *Cluster) deleteShim(ctx context.Context, dyn dynamic.Interface, cfg rcmConfig, o *unstructured.Unstructured, matching []corev1.Node) error {
	name := o.GetName()
	for _, n := range matching {
		if _, ok := n.Labels[name]; !ok {
			continue
		}
		if err := c.setNodeLabel(ctx, n.Name, name, rcmUninstall); err != nil {
			return err
		}
		if err := c.createShimJob(ctx, cfg, o, n.Name, rcmUninstall, "", ""); err != nil {
			return err
		}
	}
	if !slices.Contains(o.GetFinalizers(), rcmFinalizer) {
		return nil
	}
	u := o.DeepCopy()
	var fins []string
	for _, f := range u.GetFinalizers() {
		if f != rcmFinalizer {
			fins = append(fins, f)
		}
	}
	u.SetFinalizers(fins)
	if _, err := dyn.Resource(gvrShim).Update(ctx, u, metav1.UpdateOptions{FieldManager: "runr-testcluster"}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove the finalizer of Shim %s: %w", name, err)
	}
	return nil
}

// shimOwner is the controller owner reference to a Shim.
func shimOwner(o *unstructured.Unstructured) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: gvrShim.GroupVersion().String(), Kind: "Shim", Name: o.GetName(), UID: o.GetUID(),
		Controller: ptrTo(true), BlockOwnerDeletion: ptrTo(true)}
}

// ensureShimRuntimeClass creates the Shim's RuntimeClass when none of its name exists.
func (c *Cluster) ensureShimRuntimeClass(ctx context.Context, o *unstructured.Unstructured, sel map[string]string) error {
	name, _, _ := unstructured.NestedString(o.Object, "spec", "runtimeClass", "name")
	handler, _, _ := unstructured.NestedString(o.Object, "spec", "runtimeClass", "handler")
	name = cutName(name)
	if name == "" {
		return nil
	}
	_, err := c.Client.NodeV1().RuntimeClasses().Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("get RuntimeClass %s: %w", name, err)
	}
	if sel == nil {
		sel = map[string]string{}
	}
	rc := &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{name: "true"}, OwnerReferences: []metav1.OwnerReference{shimOwner(o)}},
		Handler:    handler,
		Scheduling: &nodev1.Scheduling{NodeSelector: sel},
	}
	if _, err := c.Client.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{FieldManager: "runr-testcluster"}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create RuntimeClass %s of Shim %s: %w", name, o.GetName(), err)
	}
	return nil
}

// shimArtifact picks the Shim's archive for a node: the platforms entry of the node's OS
// and architecture (Go or uname name), else anonHttp.
func shimArtifact(o *unstructured.Unstructured, n *corev1.Node) (location, sha string, err error) {
	platforms, _, _ := unstructured.NestedSlice(o.Object, "spec", "fetchStrategy", "platforms")
	unames := map[string]string{"amd64": "x86_64", "arm64": "aarch64", "arm": "armv7l"}
	goArch := n.Status.NodeInfo.Architecture
	if len(platforms) > 0 {
		for _, p := range platforms {
			m, _ := p.(map[string]any)
			arch := fmt.Sprint(m["arch"])
			if strings.EqualFold(fmt.Sprint(m["os"]), n.Status.NodeInfo.OperatingSystem) &&
				(strings.EqualFold(arch, goArch) || strings.EqualFold(arch, unames[goArch])) {
				sha, _ := m["sha256"].(string)
				return fmt.Sprint(m["location"]), sha, nil
			}
		}
		return "", "", fmt.Errorf("Shim %s: no platform artifact matches node %s (%s/%s)", o.GetName(), n.Name, n.Status.NodeInfo.OperatingSystem, goArch)
	}
	if loc, ok, _ := unstructured.NestedString(o.Object, "spec", "fetchStrategy", "anonHttp", "location"); ok {
		return loc, "", nil
	}
	return "", "", fmt.Errorf("Shim %s: no fetch source configured", o.GetName())
}

// createShimJob creates the install or uninstall Job of a Shim on a node, unless it exists.
func (c *Cluster) createShimJob(ctx context.Context, cfg rcmConfig, o *unstructured.Unstructured, node, op, location, sha string) error {
	shim := o.GetName()
	name := cutName(node + "-" + shim + "-" + op)
	privileged := true
	root := corev1.Volume{Name: "root-mount", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: cfg.namespace,
			Labels:      map[string]string{name: "true", rcmShimLabel: shim, rcmOpLabel: op, rcmJobLabel: "true"},
			Annotations: map[string]string{"spinkube.dev/nodeName": node, "spinkube.dev/shimName": shim, "spinkube.dev/operation": op},
		},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			NodeName: node, HostPID: true, RestartPolicy: corev1.RestartPolicyNever,
			Volumes: []corev1.Volume{{Name: "shim-download", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}, root},
			Containers: []corev1.Container{{
				Name: "provisioner", Image: cfg.installer, Args: []string{op, "-H", "/mnt/node-root", "-r", shim},
				SecurityContext: &corev1.SecurityContext{Privileged: &privileged},
				Env:             []corev1.EnvVar{{Name: "HOST_ROOT", Value: "/mnt/node-root"}},
				VolumeMounts:    []corev1.VolumeMount{{Name: "root-mount", MountPath: "/mnt/node-root"}, {Name: "shim-download", MountPath: "/assets"}},
			}},
		}}},
	}
	if op == rcmInstall {
		env := []corev1.EnvVar{{Name: "SHIM_NAME", Value: shim}, {Name: "SHIM_LOCATION", Value: location}}
		if sha != "" {
			env = append(env, corev1.EnvVar{Name: "SHIM_SHA256", Value: sha})
		}
		job.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "downloader", Image: cfg.downloader, Env: env,
			SecurityContext: &corev1.SecurityContext{Privileged: &privileged},
			VolumeMounts:    []corev1.VolumeMount{{Name: "shim-download", MountPath: "/assets"}}}}
		job.OwnerReferences = []metav1.OwnerReference{shimOwner(o)}
	}
	if cfg.ttl > 0 {
		job.Spec.TTLSecondsAfterFinished = ptrTo(cfg.ttl)
	}
	if _, err := c.Client.BatchV1().Jobs(cfg.namespace).Create(ctx, job, metav1.CreateOptions{FieldManager: "runr-testcluster"}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Job %s/%s: %w", cfg.namespace, name, err)
	}
	return nil
}

// reconcileShimJobs turns each finished installer Job, once, into its node's label:
// provisioned after an install, none after an uninstall, failed when it failed.
func (c *Cluster) reconcileShimJobs(ctx context.Context, op *rcmOperator) error {
	jobs, err := c.Client.BatchV1().Jobs("").List(ctx, metav1.ListOptions{LabelSelector: rcmShimLabel})
	if err != nil {
		return fmt.Errorf("list installer Jobs: %w", err)
	}
	for _, j := range jobs.Items {
		if op.handled[j.UID] {
			continue
		}
		value, finished := "", false
		for _, cd := range j.Status.Conditions {
			if cd.Status != corev1.ConditionTrue {
				continue
			}
			switch cd.Type {
			case batchv1.JobFailed, batchv1.JobFailureTarget:
				value, finished = "failed", true
			case batchv1.JobComplete:
				value, finished = rcmProvisioned, true
				if j.Annotations["spinkube.dev/operation"] == rcmUninstall {
					value = ""
				}
			}
		}
		if !finished {
			continue
		}
		if err := c.setNodeLabel(ctx, j.Spec.Template.Spec.NodeName, j.Labels[rcmShimLabel], value); err != nil {
			return err
		}
		op.handled[j.UID] = true
	}
	return nil
}

// cutName cuts a name to 63 characters, as the controller does.
func cutName(s string) string {
	if len(s) > 63 {
		return s[:63]
	}
	return s
}

// equalObjects compares two objects after JSON normalisation.
func equalObjects(a, b *unstructured.Unstructured) bool {
	return reflect.DeepEqual(normalize(a.Object), normalize(b.Object))
}
