package testcluster_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"runr.dev/console/ops/observability"
	"runr.dev/console/store"
	"runr.dev/console/testcluster"
)

var (
	gvrKS   = schema.GroupVersionResource{Group: "operator.knative.dev", Version: "v1beta1", Resource: "knativeservings"}
	gvrProm = schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "prometheuses"}
	gvrAM   = schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "alertmanagers"}
)

// eventually polls check until it reports done, failing the test after a minute with its last word.
func eventually(t *testing.T, what string, check func(ctx context.Context) (bool, string)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	last := ""
	for {
		done, msg := check(ctx)
		if done {
			return
		}
		last = msg
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %s", what, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// readyCondition returns the status, reason and message of a resource's condition type.
func readyCondition(o *unstructured.Unstructured, typ string) (status, reason, message string) {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			return fmt.Sprint(m["status"]), fmt.Sprint(m["reason"]), fmt.Sprint(m["message"])
		}
	}
	return "", "", ""
}

func knativeServing(ns, version string) string {
	return fmt.Sprintf(`
apiVersion: operator.knative.dev/v1beta1
kind: KnativeServing
metadata:
  name: knative-serving
  namespace: %s
spec:
  version: %q
  ingress:
    kourier: {enabled: false}
    istio: {enabled: false}
    contour: {enabled: false}
  config:
    network:
      ingress-class: traefik.ingress.networking.knative.dev
`, ns, version)
}

// TestSimulatedKnativeOperator installs the knative-operator chart of operator 1.20.2 and
// checks that KnativeServings get what the real operator gives them.
func TestSimulatedKnativeOperator(t *testing.T) {
	s := serve(t)
	c := testcluster.New(t, testcluster.Options{})
	dyn := dynamic.NewForConfigOrDie(c.REST)
	ctx := context.Background()
	_, ch := s.chart(t, "knative-operator", "v1.20.2")
	helmInstall(t, c, ch, "knative-operator", "knative-operator", nil)
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "knative-serving"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ks := func(ctx context.Context) *unstructured.Unstructured {
		o, err := dyn.Resource(gvrKS).Namespace("knative-serving").Get(ctx, "knative-serving", metav1.GetOptions{})
		if err != nil {
			return &unstructured.Unstructured{Object: map[string]any{}}
		}
		return o
	}
	readyAt := func(version string) func(ctx context.Context) (bool, string) {
		return func(ctx context.Context) (bool, string) {
			o := ks(ctx)
			st, reason, msg := readyCondition(o, "Ready")
			v, _, _ := unstructured.NestedString(o.Object, "status", "version")
			gen, _, _ := unstructured.NestedInt64(o.Object, "status", "observedGeneration")
			return st == "True" && v == version && gen == o.GetGeneration(), fmt.Sprintf("Ready %s %s %s at %q", st, reason, msg, v)
		}
	}

	// A minor resolves to the newest Serving patch the operator carries: 1.20.3, not 1.20.2.
	if err := c.ApplyYAML(ctx, knativeServing("knative-serving", "1.20")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "KnativeServing Ready at 1.20.3", readyAt("1.20.3"))
	if !slices.Contains(ks(ctx).GetFinalizers(), "knativeservings.operator.knative.dev") {
		t.Errorf("finalizers %v", ks(ctx).GetFinalizers())
	}
	for _, name := range []string{"activator", "autoscaler", "autoscaler-hpa", "controller", "webhook"} {
		d, err := c.Client.AppsV1().Deployments("knative-serving").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("Deployment %s: %v", name, err)
		}
		if err := hasLabels("Deployment "+name+" pods", d.Spec.Template.Labels, map[string]string{"app": name, "app.kubernetes.io/component": name,
			"app.kubernetes.io/name": "knative-serving", "app.kubernetes.io/version": "1.20.3"}); err != nil {
			t.Error(err)
		}
	}
	pdb, err := c.Client.PolicyV1().PodDisruptionBudgets("knative-serving").Get(ctx, "activator-pdb", metav1.GetOptions{})
	if err != nil || pdb.Spec.MinAvailable.String() != "80%" {
		t.Fatalf("activator-pdb: %v %+v", err, pdb)
	}
	eventually(t, "activator-pdb to count the activator pod", func(ctx context.Context) (bool, string) {
		p, err := c.Client.PolicyV1().PodDisruptionBudgets("knative-serving").Get(ctx, "activator-pdb", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		// One replica, minAvailable 80%: the real one refuses to evict it too.
		return p.Status.ExpectedPods == 1 && p.Status.DisruptionsAllowed == 0, fmt.Sprintf("%+v", p.Status)
	})
	crd, err := c.APIExtGet(ctx, "services.serving.knative.dev")
	if err != nil || crd.Labels["app.kubernetes.io/version"] != "1.20.3" {
		t.Fatalf("the operator applies the Serving CRDs of its release: %v %v", err, crd.Labels)
	}

	// A release it does not carry is refused, as is a move of two minors.
	for version, want := range map[string]string{
		"1.19.10": "Install failed with message: the manifests of the target version 1.19.10 are not available to this release",
		"1.18":    "not supported to upgrade or downgrade across multiple MINOR versions. The installed KnativeServing version is v1.20.3",
	} {
		if err := c.ApplyYAML(ctx, knativeServing("knative-serving", version)); err != nil {
			t.Fatal(err)
		}
		eventually(t, "KnativeServing to refuse "+version, func(ctx context.Context) (bool, string) {
			o := ks(ctx)
			st, reason, msg := readyCondition(o, "Ready")
			gen, _, _ := unstructured.NestedInt64(o.Object, "status", "observedGeneration")
			return st == "False" && reason == "Error" && strings.Contains(msg, want) && gen == o.GetGeneration(), fmt.Sprintf("%s %s %s (gen %d/%d) %v %v", st, reason, msg, gen, o.GetGeneration(), o.Object["spec"], o.Object["status"])
		})
		if v, _, _ := unstructured.NestedString(ks(ctx).Object, "status", "version"); v != "1.20.3" {
			t.Errorf("status.version %q after a refusal, want 1.20.3", v)
		}
	}
	if err := c.ApplyYAML(ctx, knativeServing("knative-serving", "1.19.9")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "KnativeServing Ready at 1.19.9", readyAt("1.19.9"))

	// Deleting it removes what the operator installed; the Serving CRDs stay.
	if err := dyn.Resource(gvrKS).Namespace("knative-serving").Delete(ctx, "knative-serving", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the KnativeServing and its Deployments to go", func(ctx context.Context) (bool, string) {
		_, err := dyn.Resource(gvrKS).Namespace("knative-serving").Get(ctx, "knative-serving", metav1.GetOptions{})
		ds, _ := c.Client.AppsV1().Deployments("knative-serving").List(ctx, metav1.ListOptions{})
		return apierrors.IsNotFound(err) && len(ds.Items) == 0, fmt.Sprintf("get: %v, %d Deployments", err, len(ds.Items))
	})
	if _, err := c.APIExtGet(ctx, "services.serving.knative.dev"); err != nil {
		t.Errorf("the Serving CRDs must stay: %v", err)
	}

	// Without a running operator nothing happens.
	helmUninstall(t, c, "knative-operator", "knative-operator")
	if _, err := c.APIExtGet(ctx, "knativeservings.operator.knative.dev"); !apierrors.IsNotFound(err) {
		t.Errorf("helm uninstall must delete the operator's CRDs (they are templates of the release): %v", err)
	}
}

// TestSimulatedPrometheusOperator installs kube-prometheus-stack with the console's values
// and checks the StatefulSets, pods and status the Prometheus operator gives its resources.
func TestSimulatedPrometheusOperator(t *testing.T) {
	s := serve(t)
	c := testcluster.New(t, testcluster.Options{})
	dyn := dynamic.NewForConfigOrDie(c.REST)
	ctx := context.Background()
	if _, err := c.Client.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: observability.PriorityClassName}, Value: 1000}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, ch := s.chart(t, "kube-prometheus-stack", "79.5.0")
	vals := jsonCopy(t, observability.PrometheusValues(observability.StorageOf(store.Monitoring{}, true)))
	vals["prometheus"].(map[string]any)["podDisruptionBudget"] = map[string]any{"enabled": true}
	helmInstall(t, c, ch, "knative", "observability", vals)

	for _, k := range []struct {
		gvr       schema.GroupVersionResource
		kind, sts string
	}{{gvrProm, "Prometheus", "prometheus-knative-kube-prometheus-st-prometheus"}, {gvrAM, "Alertmanager", "alertmanager-knative-kube-prometheus-st-alertmanager"}} {
		name := strings.SplitN(k.sts, "-", 2)[1]
		eventually(t, k.kind+" "+name+" Available", func(ctx context.Context) (bool, string) {
			o, err := dyn.Resource(k.gvr).Namespace("observability").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			st, reason, msg := readyCondition(o, "Available")
			rec, _, _ := readyCondition(o, "Reconciled")
			n, _, _ := unstructured.NestedInt64(o.Object, "status", "availableReplicas")
			return st == "True" && rec == "True" && n == 1, fmt.Sprintf("Available %s %s %s, Reconciled %s, %d available", st, reason, msg, rec, n)
		})
		sts, err := c.Client.AppsV1().StatefulSets("observability").Get(ctx, k.sts, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pods, err := c.Client.CoreV1().Pods("observability").List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(sts.Spec.Selector.MatchLabels).String()})
		if err != nil || len(pods.Items) != 1 {
			t.Fatalf("pods of %s: %v %d", k.sts, err, len(pods.Items))
		}
		want := testcluster.OperatorPodLabels(k.kind, name)
		if err := hasLabels(k.sts+" pods", pods.Items[0].Labels, want); err != nil {
			t.Error(err)
		}
		if pods.Items[0].Labels["app.kubernetes.io/instance"] == "knative" {
			t.Errorf("%s pods carry app.kubernetes.io/instance=knative", k.sts)
		}
		if k.kind == "Prometheus" && pods.Items[0].Spec.PriorityClassName != observability.PriorityClassName {
			t.Errorf("Prometheus pods' priorityClassName %q", pods.Items[0].Spec.PriorityClassName)
		}
	}
	eventually(t, "the Prometheus PodDisruptionBudget to select the operator's pod", func(ctx context.Context) (bool, string) {
		p, err := c.Client.PolicyV1().PodDisruptionBudgets("observability").Get(ctx, "knative-kube-prometheus-st-prometheus", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.ExpectedPods == 1, fmt.Sprintf("%+v", p.Status)
	})

	// The StatefulSets belong to their resource.
	if err := dyn.Resource(gvrProm).Namespace("observability").Delete(ctx, "knative-kube-prometheus-st-prometheus", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Prometheus StatefulSet to go with its resource", func(ctx context.Context) (bool, string) {
		_, err := c.Client.AppsV1().StatefulSets("observability").Get(ctx, "prometheus-knative-kube-prometheus-st-prometheus", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}
