package testcluster

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// The simulated Skupper v2 controller (skupperproject/skupper 2.2.1:
// internal/kube/site/site.go, internal/kube/site/resources/skupper-router-deployment.yaml,
// pkg/apis/skupper/v2alpha1/types.go). A cluster's operators install Skupper; the console
// never does, so tests install it with InstallSkupper: the Site CRD of
// config/crd/bases/skupper_site_crd.yaml and the cluster-scoped controller of
// scripts/skupper-deployment-generator.sh (Deployment skupper-controller in namespace
// skupper, pods application=skupper-controller, image quay.io/skupper/controller:<version>).
//
// While that Deployment is available, for each Site it makes the router Deployment
// skupper-router in the Site's namespace (labels application=skupper-router,
// skupper.io/component=router, skupper.io/type=site) and, once the router is available,
// reports the Site Ready: status.status Ready, message OK, the conditions Configured,
// Running, Resolved and Ready, and status.controller (name, namespace, version).

var gvrSkupperSite = schema.GroupVersionResource{Group: "skupper.io", Version: "v2alpha1", Resource: "sites"}

// Skupper names.
const (
	SkupperNamespace  = "skupper"
	skupperController = "skupper-controller"
	skupperRouter     = "skupper-router"
)

// skupperSiteCRD is the Site CRD (skupper.io/v2alpha1, namespaced, status subresource);
// the spec's schema is left open here.
const skupperSiteCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: sites.skupper.io
spec:
  group: skupper.io
  names:
    kind: Site
    listKind: SiteList
    plural: sites
    singular: site
  scope: Namespaced
  versions:
  - name: v2alpha1
    served: true
    storage: true
    subresources:
      status: {}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-preserve-unknown-fields: true
          status:
            type: object
            x-kubernetes-preserve-unknown-fields: true
`

// InstallSkupper installs Skupper v2 as a cluster's operators would: the Site CRD and the
// controller Deployment of that version in namespace skupper.
func (c *Cluster) InstallSkupper(ctx context.Context, version string) error {
	if err := c.ApplyYAML(ctx, skupperSiteCRD); err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: SkupperNamespace}}
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("testcluster: namespace %s: %w", SkupperNamespace, err)
	}
	labels := map[string]string{"application": skupperController, "app.kubernetes.io/name": skupperController,
		"app.kubernetes.io/part-of": "skupper", "skupper.io/component": "controller"}
	// As upstream's generator writes it: the labels are the pods', the Deployment has none.
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: skupperController, Namespace: SkupperNamespace},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"application": skupperController}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "controller", Image: "quay.io/skupper/controller:" + version,
					Command: []string{"/app/controller"}, Args: []string{"-enable-grants", "-grant-server-autoconfigure"}}}}}}}
	if _, err := c.Client.AppsV1().Deployments(SkupperNamespace).Create(ctx, d, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("testcluster: Deployment %s: %w", skupperController, err)
	}
	return nil
}

func (c *Cluster) reconcileSkupper(ctx context.Context, dyn dynamic.Interface) error {
	ctrl, err := c.availableDeployment(ctx, "", skupperController)
	if err != nil || ctrl == nil {
		return err
	}
	sites, err := dyn.Resource(gvrSkupperSite).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list Skupper Sites: %w", err)
	}
	version := ""
	if cs := ctrl.Spec.Template.Spec.Containers; len(cs) > 0 {
		version = imageTagOf(cs[0].Image)
	}
	var errs []error
	for i := range sites.Items {
		o := &sites.Items[i]
		if o.GetDeletionTimestamp() == nil {
			errs = append(errs, c.reconcileSite(ctx, dyn, o, ctrl.Namespace, version))
		}
	}
	return errors.Join(errs...)
}

// reconcileSite makes a Site's router and reports the Site ready once it is available.
func (c *Cluster) reconcileSite(ctx context.Context, dyn dynamic.Interface, o *unstructured.Unstructured, ctrlNS, version string) error {
	ns := o.GetNamespace()
	labels := map[string]string{"application": skupperRouter, "app.kubernetes.io/name": skupperRouter, "app.kubernetes.io/part-of": "skupper",
		"skupper.io/component": "router", "skupper.io/type": "site"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: skupperRouter, Namespace: ns, Labels: labels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "skupper.io/v2alpha1", Kind: "Site", Name: o.GetName(), UID: o.GetUID()}}},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"skupper.io/component": "router"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "router", Image: "quay.io/skupper/skupper-router:3.4.2"}}}}}}
	if _, err := c.Client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("router of Site %s/%s: %w", ns, o.GetName(), err)
	}
	router, err := c.Client.AppsV1().Deployments(ns).Get(ctx, skupperRouter, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("router of Site %s/%s: %w", ns, o.GetName(), err)
	}
	status, _, _ := unstructured.NestedMap(o.Object, "status")
	if status == nil {
		status = map[string]any{}
	}
	status["controller"] = map[string]any{"name": skupperController, "namespace": ctrlNS, "version": version}
	running := deploymentAvailable(router)
	conds := []condition{{Type: "Configured", Status: "True", Reason: "Ready", Message: "OK"}}
	if running {
		status["status"], status["message"] = "Ready", "OK"
		conds = append(conds, condition{Type: "Running", Status: "True", Reason: "Ready", Message: "OK"},
			condition{Type: "Resolved", Status: "True", Reason: "Ready", Message: "OK"}, condition{Type: "Ready", Status: "True", Reason: "Ready", Message: "OK"})
	} else {
		status["status"], status["message"] = "Pending", "No router pod is ready"
		conds = append(conds, condition{Type: "Running", Status: "False", Reason: "Pending", Message: "No router pod is ready"},
			condition{Type: "Ready", Status: "False", Reason: "Pending", Message: "Not Running"})
	}
	setConditions(status, conds)
	return updateStatus(ctx, dyn.Resource(gvrSkupperSite).Namespace(ns), o, status)
}

// imageTagOf is the tag of an image reference.
func imageTagOf(image string) string {
	for i := len(image) - 1; i >= 0 && image[i] != '/'; i-- {
		if image[i] == ':' {
			return image[i+1:]
		}
	}
	return ""
}
