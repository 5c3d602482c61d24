package testcluster

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
)

// The simulated Knative Operator (knative/operator, pkg/reconciler/knativeserving and
// pkg/reconciler/common, read at knative-v1.20.2). For each KnativeServing, while a
// knative-operator Deployment is available, it:
//   - adds the finalizer knativeservings.operator.knative.dev, and on deletion removes
//     what it installed (but the CRDs) before releasing it; with no operator running, a
//     deleted KnativeServing stays Terminating, as on a real cluster;
//   - refuses a move across more than one minor (VersionMigrationEligible False);
//   - resolves spec.version against the Serving releases its release carries
//     (ResolveServingVersion) and refuses one it does not carry (InstallSucceeded False);
//   - applies that release's Serving CRDs and creates, in the KnativeServing's namespace,
//     Deployments activator, autoscaler, autoscaler-hpa, controller and webhook,
//     PodDisruptionBudgets activator-pdb and webhook-pdb (minAvailable 80%) and
//     ServiceAccount controller, labelled as in the Serving release manifests
//     (kodata/knative-serving/<release>/2-serving-core.yaml, 3-serving-hpa.yaml);
//   - reports Ready, with status.version the resolved release, once they are available.
// An operator whose pods run on the real node is the real one (PushKnative): the simulation
// leaves its KnativeServings alone.

var gvrKnativeServing = schema.GroupVersionResource{Group: "operator.knative.dev", Version: "v1beta1", Resource: "knativeservings"}

const knativeServingFinalizer = "knativeservings.operator.knative.dev"

// servingDeployments are the Deployments of a Serving release (no ingress) and whether
// their pods also carry role: <name> (then part of the selector).
var servingDeployments = []struct {
	name string
	role bool
}{{"activator", true}, {"autoscaler", false}, {"autoscaler-hpa", false}, {"controller", false}, {"webhook", true}}

// servingPDBs select the activator's and the webhook's pods.
var servingPDBs = []string{"activator", "webhook"}

// knativeOperator remembers which Serving CRDs it applied, to apply them once per release.
type knativeOperator struct {
	mu      sync.Mutex
	applied map[string]bool
}

func (c *Cluster) reconcileKnative(op *knativeOperator) func(ctx context.Context, dyn dynamic.Interface) error {
	return func(ctx context.Context, dyn dynamic.Interface) error {
		d, err := c.availableDeployment(ctx, "app.kubernetes.io/name=knative-operator", "knative-operator")
		if err != nil || d == nil {
			return err
		}
		if real, err := c.runsOnRealNode(ctx, d); err != nil || real {
			return err // the real operator (PushKnative's) does the work
		}
		release := operatorRelease(d)
		list, err := dyn.Resource(gvrKnativeServing).List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("list KnativeServings: %w", err)
		}
		for i := range list.Items {
			if err := c.reconcileServing(ctx, dyn, op, release, &list.Items[i]); err != nil {
				return err
			}
		}
		return nil
	}
}

// operatorRelease reads the operator's release from its Deployment: the chart's
// app.kubernetes.io/version label, else the image tag.
func operatorRelease(d *appsv1.Deployment) string {
	if v := d.Labels["app.kubernetes.io/version"]; v != "" {
		return strings.TrimPrefix(v, "v")
	}
	for _, ct := range d.Spec.Template.Spec.Containers {
		if i := strings.LastIndex(ct.Image, ":"); i >= 0 {
			return strings.TrimPrefix(ct.Image[i+1:], "v")
		}
	}
	return ""
}

func (c *Cluster) reconcileServing(ctx context.Context, dyn dynamic.Interface, op *knativeOperator, release string, ks *unstructured.Unstructured) error {
	ri := dyn.Resource(gvrKnativeServing).Namespace(ks.GetNamespace())
	if ks.GetDeletionTimestamp() != nil {
		if !slices.Contains(ks.GetFinalizers(), knativeServingFinalizer) {
			return nil
		}
		if err := c.deleteServing(ctx, ks.GetNamespace()); err != nil {
			return err
		}
		ks.SetFinalizers(slices.DeleteFunc(ks.GetFinalizers(), func(f string) bool { return f == knativeServingFinalizer }))
		if _, err := ri.Update(ctx, ks, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("release KnativeServing %s/%s: %w", ks.GetNamespace(), ks.GetName(), err)
		}
		return nil
	}
	if !slices.Contains(ks.GetFinalizers(), knativeServingFinalizer) {
		ks.SetFinalizers(append(ks.GetFinalizers(), knativeServingFinalizer))
		if _, err := ri.Update(ctx, ks, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("add the finalizer to KnativeServing %s/%s: %w", ks.GetNamespace(), ks.GetName(), err)
		}
		return nil
	}

	status, _, _ := unstructured.NestedMap(ks.Object, "status")
	if status == nil {
		status = map[string]any{}
	}
	status["observedGeneration"] = ks.GetGeneration()
	conds := servingConditions(status)
	spec, _, _ := unstructured.NestedString(ks.Object, "spec", "version")
	current, _, _ := unstructured.NestedString(status, "version")

	if msg := migrationRefusal(current, spec); msg != "" {
		conds["VersionMigrationEligible"] = condition{Type: "VersionMigrationEligible", Status: "False", Reason: "Error",
			Message: "Version migration is not eligible with message: " + msg}
		return updateStatus(ctx, ri, ks, servingStatus(status, conds, "VersionMigrationEligible"))
	}
	conds["VersionMigrationEligible"] = condition{Type: "VersionMigrationEligible", Status: "True"}

	version, ok := ResolveServingVersion(release, spec)
	if !ok {
		conds["InstallSucceeded"] = condition{Type: "InstallSucceeded", Status: "False", Reason: "Error",
			Message: fmt.Sprintf("Install failed with message: the manifests of the target version %s are not available to this release", spec)}
		return updateStatus(ctx, ri, ks, servingStatus(status, conds, "InstallSucceeded"))
	}
	if err := c.installServing(ctx, op, ks.GetNamespace(), version, registryOf(ks)); err != nil {
		conds["InstallSucceeded"] = condition{Type: "InstallSucceeded", Status: "False", Reason: "Error", Message: "Install failed with message: " + err.Error()}
		_ = updateStatus(ctx, ri, ks, servingStatus(status, conds, "InstallSucceeded"))
		return err
	}
	notReady, err := c.servingNotReady(ctx, ks.GetNamespace())
	if err != nil {
		return err
	}
	if len(notReady) > 0 {
		conds["DeploymentsAvailable"] = condition{Type: "DeploymentsAvailable", Status: "False", Reason: "NotReady",
			Message: "Waiting on deployments: " + strings.Join(notReady, ", ")}
		return updateStatus(ctx, ri, ks, servingStatus(status, conds, "DeploymentsAvailable"))
	}
	for _, t := range []string{"DeploymentsAvailable", "InstallSucceeded", "DependenciesInstalled"} {
		conds[t] = condition{Type: t, Status: "True"}
	}
	status["version"] = version
	status["manifests"] = []any{"/var/run/ko/knative-serving/" + version}
	return updateStatus(ctx, ri, ks, servingStatus(status, conds, ""))
}

// servingConditions reads the conditions the operator manages (Unknown when absent).
func servingConditions(status map[string]any) map[string]condition {
	out := map[string]condition{}
	for _, t := range []string{"DependenciesInstalled", "DeploymentsAvailable", "InstallSucceeded", "VersionMigrationEligible"} {
		out[t] = condition{Type: t, Status: "Unknown"}
	}
	prev, _, _ := unstructured.NestedSlice(status, "conditions")
	for _, p := range prev {
		m, ok := p.(map[string]any)
		if !ok {
			continue
		}
		t := fmt.Sprint(m["type"])
		if _, managed := out[t]; managed {
			out[t] = condition{Type: t, Status: fmt.Sprint(m["status"]), Reason: str(m["reason"]), Message: str(m["message"])}
		}
	}
	return out
}

// servingStatus writes the conditions and Ready: False with the reason and message of
// the condition marked False last (marked, when it is False) or else of the first False
// one, Unknown while one is Unknown, else True (knative.dev/pkg's living condition set).
func servingStatus(status map[string]any, conds map[string]condition, marked string) map[string]any {
	order := []string{"DependenciesInstalled", "DeploymentsAvailable", "InstallSucceeded", "VersionMigrationEligible"}
	ready := condition{Type: "Ready", Status: "True"}
	if cd := conds[marked]; cd.Status == "False" {
		order = append([]string{marked}, order...)
	}
	for _, t := range order {
		cd := conds[t]
		if cd.Status == "False" {
			ready = condition{Type: "Ready", Status: "False", Reason: cd.Reason, Message: cd.Message}
			break
		}
		if cd.Status == "Unknown" && ready.Status == "True" {
			ready = condition{Type: "Ready", Status: "Unknown"}
		}
	}
	list := make([]condition, 0, len(conds)+1)
	for _, t := range []string{"DependenciesInstalled", "DeploymentsAvailable", "InstallSucceeded", "VersionMigrationEligible"} {
		list = append(list, conds[t])
	}
	setConditions(status, append(list, ready))
	return status
}

// migrationRefusal answers as the operator's IsVersionValidMigrationEligible: a move of
// more than one minor from the installed version is refused.
func migrationRefusal(current, target string) string {
	if current == "" || target == "" || strings.EqualFold(target, "latest") || strings.EqualFold(current, "latest") {
		return ""
	}
	cur, tgt := strings.Split(strings.TrimPrefix(current, "v"), "."), strings.Split(strings.TrimPrefix(target, "v"), ".")
	if len(cur) < 2 || len(tgt) < 2 {
		return ""
	}
	cm, err1 := strconv.Atoi(cur[1])
	tm, err2 := strconv.Atoi(tgt[1])
	if err1 != nil || err2 != nil || cur[0] != tgt[0] {
		return ""
	}
	if cm-tm < 2 && tm-cm < 2 {
		return ""
	}
	return fmt.Sprintf("not supported to upgrade or downgrade across multiple MINOR versions. The installed KnativeServing version is v%s", strings.TrimPrefix(current, "v"))
}

func str(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// servingRegistry is a KnativeServing's spec.registry.
type servingRegistry struct {
	Default  string
	Override map[string]string
}

// registryOf reads a KnativeServing's spec.registry.
func registryOf(ks *unstructured.Unstructured) servingRegistry {
	var reg servingRegistry
	reg.Default, _, _ = unstructured.NestedString(ks.Object, "spec", "registry", "default")
	reg.Override, _, _ = unstructured.NestedStringMap(ks.Object, "spec", "registry", "override")
	return reg
}

// image is a container's image as the operator's ImageTransform sets it: the override of
// "<deployment>/<container>", else of the container, else the default with ${NAME} the
// image's last path part without tag or digest.
func (r servingRegistry) image(deployment, container, image string) string {
	if v, ok := r.Override[deployment+"/"+container]; ok {
		return v
	}
	if v, ok := r.Override[container]; ok {
		return v
	}
	if r.Default == "" {
		return image
	}
	name := image[strings.LastIndex(image, "/")+1:]
	name, _, _ = strings.Cut(name, "@")
	name, _, _ = strings.Cut(name, ":")
	return strings.ReplaceAll(r.Default, "${NAME}", name)
}

// installServing applies a Serving release's CRDs (once per release) and its workloads
// in ns, with their images as the KnativeServing's registry says.
func (c *Cluster) installServing(ctx context.Context, op *knativeOperator, ns, version string, reg servingRegistry) error {
	op.mu.Lock()
	done := op.applied[version]
	op.mu.Unlock()
	if !done {
		crds, err := chartSources.ReadFile(servingCRDsFile)
		if err != nil {
			return fmt.Errorf("serving CRDs: %w", err)
		}
		if err := c.applyYAML(ctx, []byte(strings.ReplaceAll(string(crds), "0.0.0", version))); err != nil {
			return fmt.Errorf("apply the Serving CRDs of %s: %w", version, err)
		}
		op.mu.Lock()
		op.applied[version] = true
		op.mu.Unlock()
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "controller", Namespace: ns, Labels: servingLabels("controller", version)}}
	if _, err := c.Client.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ServiceAccount %s/controller: %w", ns, err)
	}
	for _, sd := range servingDeployments {
		want := servingDeployment(ns, sd.name, sd.role, version)
		for i, ct := range want.Spec.Template.Spec.Containers {
			want.Spec.Template.Spec.Containers[i].Image = reg.image(sd.name, ct.Name, ct.Image)
		}
		got, err := c.Client.AppsV1().Deployments(ns).Get(ctx, sd.name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			if _, err := c.Client.AppsV1().Deployments(ns).Create(ctx, want, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("create Deployment %s/%s: %w", ns, sd.name, err)
			}
		case err != nil:
			return fmt.Errorf("get Deployment %s/%s: %w", ns, sd.name, err)
		case got.Labels["app.kubernetes.io/version"] != version || got.Spec.Template.Spec.Containers[0].Image != want.Spec.Template.Spec.Containers[0].Image:
			got.Labels, got.Spec.Template = want.Labels, want.Spec.Template
			if _, err := c.Client.AppsV1().Deployments(ns).Update(ctx, got, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("update Deployment %s/%s: %w", ns, sd.name, err)
			}
		}
	}
	for _, name := range servingPDBs {
		want := servingPDB(ns, name, version)
		got, err := c.Client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, want.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			if _, err := c.Client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, want, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("create PodDisruptionBudget %s/%s: %w", ns, want.Name, err)
			}
		case err != nil:
			return fmt.Errorf("get PodDisruptionBudget %s/%s: %w", ns, want.Name, err)
		case got.Labels["app.kubernetes.io/version"] != version:
			got.Labels = want.Labels
			if _, err := c.Client.PolicyV1().PodDisruptionBudgets(ns).Update(ctx, got, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("update PodDisruptionBudget %s/%s: %w", ns, want.Name, err)
			}
		}
	}
	return nil
}

// servingNotReady names the Serving Deployments that are not available (the webhook
// alone while it is not).
func (c *Cluster) servingNotReady(ctx context.Context, ns string) ([]string, error) {
	var out []string
	for _, sd := range servingDeployments {
		d, err := c.Client.AppsV1().Deployments(ns).Get(ctx, sd.name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("get Deployment %s/%s: %w", ns, sd.name, err)
		}
		if err != nil || !deploymentAvailable(d) {
			if sd.name == "webhook" {
				return []string{"webhook"}, nil
			}
			out = append(out, sd.name)
		}
	}
	return out, nil
}

// deleteServing removes what installServing made in ns (the CRDs stay, as upstream's
// Uninstall keeps them).
func (c *Cluster) deleteServing(ctx context.Context, ns string) error {
	for _, sd := range servingDeployments {
		if err := c.Client.AppsV1().Deployments(ns).Delete(ctx, sd.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete Deployment %s/%s: %w", ns, sd.name, err)
		}
	}
	if err := c.Client.CoreV1().ServiceAccounts(ns).Delete(ctx, "controller", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete ServiceAccount %s/controller: %w", ns, err)
	}
	for _, name := range servingPDBs {
		if err := c.Client.PolicyV1().PodDisruptionBudgets(ns).Delete(ctx, name+"-pdb", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete PodDisruptionBudget %s/%s-pdb: %w", ns, name, err)
		}
	}
	return nil
}

func servingLabels(name, version string) map[string]string {
	return map[string]string{"app.kubernetes.io/component": name, "app.kubernetes.io/name": "knative-serving", "app.kubernetes.io/version": version}
}

func servingDeployment(ns, name string, role bool, version string) *appsv1.Deployment {
	selector := map[string]string{"app": name}
	if role {
		selector["role"] = name
	}
	pod := servingLabels(name, version)
	for k, v := range selector {
		pod[k] = v
	}
	one := int32(1)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: servingLabels(name, version)},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: pod},
				Spec: corev1.PodSpec{
					ServiceAccountName: "controller",
					Containers: []corev1.Container{{Name: name,
						Image: "gcr.io/knative-releases/knative.dev/serving/cmd/" + name + ":v" + version}},
				},
			},
		},
	}
}

func servingPDB(ns, name, version string) *policyv1.PodDisruptionBudget {
	min := intstr.FromString("80%")
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-pdb", Namespace: ns, Labels: servingLabels(name, version)},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &min,
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
		},
	}
}
