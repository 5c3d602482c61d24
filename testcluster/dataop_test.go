package testcluster_test

import (
	"context"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"runr.dev/console/ops/data"
	"runr.dev/console/store"
	"runr.dev/console/testcluster"
)

var (
	gvrCluster  = schema.GroupVersionResource{Group: "postgresql.cnpg.io", Version: "v1", Resource: "clusters"}
	gvrDatabase = schema.GroupVersionResource{Group: "postgresql.cnpg.io", Version: "v1", Resource: "databases"}
	gvrSite     = schema.GroupVersionResource{Group: "skupper.io", Version: "v2alpha1", Resource: "sites"}
)

// TestSimulatedCloudNativePG installs the cloudnative-pg stand-in and checks that a
// Cluster gets CloudNativePG's instance pods, volumes, Services and status, that a
// Database of a declared role is applied and one of a missing role refused, and that
// deleting the Cluster deletes its volumes.
func TestSimulatedCloudNativePG(t *testing.T) {
	s := serve(t)
	c := testcluster.New(t, testcluster.Options{})
	dyn := dynamic.NewForConfigOrDie(c.REST)
	ctx := context.Background()
	_, ch := s.chart(t, "cloudnative-pg", data.ChartCloudNativePG.Version)
	helmInstall(t, c, ch, data.CNPGRelease, data.CNPGNamespace, data.CNPGValues())
	if err := c.ApplyYAML(ctx, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+data.DataNamespace+"\n"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Cluster CRD", func(ctx context.Context) (bool, string) {
		_, err := c.APIExtGet(ctx, "clusters.postgresql.cnpg.io")
		return err == nil, fmt.Sprint(err)
	})
	obj := &unstructured.Unstructured{Object: data.PostgresClusterObject("", 2)}
	eventually(t, "the Cluster to be created", func(ctx context.Context) (bool, string) {
		_, err := dyn.Resource(gvrCluster).Namespace(data.DataNamespace).Create(ctx, obj, metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err), fmt.Sprint(err)
	})
	eventually(t, "the Cluster to be healthy", func(ctx context.Context) (bool, string) {
		o, err := dyn.Resource(gvrCluster).Namespace(data.DataNamespace).Get(ctx, data.PostgresCluster, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		ph, _, _ := unstructured.NestedString(o.Object, "status", "phase")
		st, _, _ := readyCondition(o, "Ready")
		return ph == "Cluster in healthy state" && st == "True", ph
	})
	inst := data.PostgresCluster + "-1"
	pod, err := c.Client.CoreV1().Pods(data.DataNamespace).Get(ctx, inst, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := hasLabels("instance pod", pod.Labels, map[string]string{data.CNPGClusterLabel: data.PostgresCluster, "cnpg.io/instanceName": inst,
		"cnpg.io/instanceRole": "primary", "role": "primary", "cnpg.io/podRole": "instance"}); err != nil {
		t.Error(err)
	}
	pvc, err := c.Client.CoreV1().PersistentVolumeClaims(data.DataNamespace).Get(ctx, inst, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if q := pvc.Spec.Resources.Requests["storage"]; q.String() != "2Gi" || pvc.Labels["cnpg.io/pvcRole"] != "PG_DATA" {
		t.Errorf("the instance's claim: %s %v", q.String(), pvc.Labels)
	}
	for _, svc := range []string{"-rw", "-ro", "-r"} {
		if _, err := c.Client.CoreV1().Services(data.DataNamespace).Get(ctx, data.PostgresCluster+svc, metav1.GetOptions{}); err != nil {
			t.Errorf("Service %s%s: %v", data.PostgresCluster, svc, err)
		}
	}

	// A binding's role and database are applied; a database of a missing role is refused.
	b := &store.Binding{Service: store.DataPostgres, ProjectSlug: "shop", Resource: "p_shop", Credentials: map[string]string{"PGUSER": "p_shop", "PGPASSWORD": "pw"}}
	secret, role, db := data.PostgresBindingObjects(b)
	for _, o := range []map[string]any{secret, role, db} {
		create(t, dyn, &unstructured.Unstructured{Object: o})
	}
	orphan := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "postgresql.cnpg.io/v1", "kind": "Database",
		"metadata": map[string]any{"name": "orphan", "namespace": data.DataNamespace},
		"spec":     map[string]any{"name": "orphan", "owner": "nobody", "cluster": map[string]any{"name": data.PostgresCluster}}}}
	create(t, dyn, orphan)
	eventually(t, "the Databases' status", func(ctx context.Context) (bool, string) {
		good, err1 := dyn.Resource(gvrDatabase).Namespace(data.DataNamespace).Get(ctx, db["metadata"].(map[string]any)["name"].(string), metav1.GetOptions{})
		bad, err2 := dyn.Resource(gvrDatabase).Namespace(data.DataNamespace).Get(ctx, "orphan", metav1.GetOptions{})
		if err1 != nil || err2 != nil {
			return false, fmt.Sprint(err1, err2)
		}
		ok, _, _ := unstructured.NestedBool(good.Object, "status", "applied")
		refused, found, _ := unstructured.NestedBool(bad.Object, "status", "applied")
		msg, _, _ := unstructured.NestedString(bad.Object, "status", "message")
		return ok && found && !refused && msg != "", fmt.Sprintf("applied %v, orphan %v %q", ok, refused, msg)
	})

	// Deleting the Cluster deletes its pods and volumes.
	if err := dyn.Resource(gvrCluster).Namespace(data.DataNamespace).Delete(ctx, data.PostgresCluster, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the instance's claim to go with its Cluster", func(ctx context.Context) (bool, string) {
		_, err := c.Client.CoreV1().PersistentVolumeClaims(data.DataNamespace).Get(ctx, inst, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

// TestSimulatedSkupper installs Skupper v2 as a cluster's operators would and checks that
// a Site gets its router and is reported Ready with the controller's version, and that
// ops reads the installation.
func TestSimulatedSkupper(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	dyn := dynamic.NewForConfigOrDie(c.REST)
	ctx := context.Background()
	if err := c.InstallSkupper(ctx, "2.2.1"); err != nil {
		t.Fatal(err)
	}
	// As upstream's generator writes it: no labels on the Deployment, the pods'
	// application=skupper-controller on its template and selector.
	ctrl, err := c.Client.AppsV1().Deployments(testcluster.SkupperNamespace).Get(ctx, data.SkupperController, metav1.GetOptions{})
	if err != nil || len(ctrl.Labels) != 0 || ctrl.Spec.Template.Labels["application"] != data.SkupperController ||
		ctrl.Spec.Selector.MatchLabels["application"] != data.SkupperController {
		t.Fatalf("the Skupper controller Deployment: %v %v", err, ctrl)
	}
	if err := c.ApplyYAML(ctx, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n"); err != nil {
		t.Fatal(err)
	}
	site := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "skupper.io/v2alpha1", "kind": "Site",
		"metadata": map[string]any{"name": data.SkupperSiteName, "namespace": "shop"}, "spec": map[string]any{}}}
	eventually(t, "the Site to be created", func(ctx context.Context) (bool, string) {
		_, err := dyn.Resource(gvrSite).Namespace("shop").Create(ctx, site, metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err), fmt.Sprint(err)
	})
	eventually(t, "the Site to be Ready", func(ctx context.Context) (bool, string) {
		o, err := dyn.Resource(gvrSite).Namespace("shop").Get(ctx, data.SkupperSiteName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		st, _, _ := unstructured.NestedString(o.Object, "status", "status")
		ver, _, _ := unstructured.NestedString(o.Object, "status", "controller", "version")
		ready, _, _ := readyCondition(o, "Ready")
		return st == "Ready" && ready == "True" && ver == "2.2.1", st + " " + ready + " " + ver
	})
	router, err := c.Client.AppsV1().Deployments("shop").Get(ctx, "skupper-router", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := hasLabels("router", router.Labels, map[string]string{"application": "skupper-router", "skupper.io/component": "router"}); err != nil {
		t.Error(err)
	}
}

// create creates an object of a kind this file knows, in its namespace.
func create(t *testing.T, dyn dynamic.Interface, o *unstructured.Unstructured) {
	t.Helper()
	gvr := map[string]schema.GroupVersionResource{"Secret": {Version: "v1", Resource: "secrets"}, "Database": gvrDatabase,
		"DatabaseRole": {Group: "postgresql.cnpg.io", Version: "v1", Resource: "databaseroles"}}[o.GetKind()]
	if _, err := dyn.Resource(gvr).Namespace(o.GetNamespace()).Create(context.Background(), o, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create %s %s: %v", o.GetKind(), o.GetName(), err)
	}
}
