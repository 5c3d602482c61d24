package testcluster

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// The simulated Knative Serving controller: a Knative Service whose status has not
// observed its generation becomes Ready, naming revision <name>-<generation> and the
// cluster-local address, as Serving's controller reports once the revision is up. It acts
// on every cluster with the Service CRD (the console's functions are objects only there),
// except where Serving's own controller runs on the real node: the real one answers then.
// It runs in the operators' loop rather than as a kwok Stage: kwok gives up for good on a
// Stage whose kind's schema the API server has not published yet, which left a
// Knative Service without status now and then on a loaded machine.

var gvrKnativeService = schema.GroupVersionResource{Group: "serving.knative.dev", Version: "v1", Resource: "services"}

// reconcileKnativeServices marks each Knative Service Ready at its current generation.
func (c *Cluster) reconcileKnativeServices(ctx context.Context, dyn dynamic.Interface) error {
	if d, err := c.availableDeployment(ctx, "app.kubernetes.io/name=knative-serving", "controller"); err != nil {
		return err
	} else if d != nil {
		if real, err := c.runsOnRealNode(ctx, d); err != nil || real {
			return err
		}
	}
	list, err := dyn.Resource(gvrKnativeService).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil // no Serving CRDs yet
	}
	if err != nil {
		return fmt.Errorf("list Knative Services: %w", err)
	}
	for i := range list.Items {
		ks := &list.Items[i]
		if ks.GetDeletionTimestamp() != nil {
			continue
		}
		status, _, _ := unstructured.NestedMap(ks.Object, "status")
		if status == nil {
			status = map[string]any{}
		}
		gen := ks.GetGeneration()
		if observed, ok, _ := unstructured.NestedInt64(status, "observedGeneration"); ok && observed == gen {
			continue
		}
		rev := fmt.Sprintf("%s-%05d", ks.GetName(), gen)
		status["observedGeneration"] = gen
		status["latestCreatedRevisionName"] = rev
		status["latestReadyRevisionName"] = rev
		status["address"] = map[string]any{"url": fmt.Sprintf("http://%s.%s.svc.cluster.local", ks.GetName(), ks.GetNamespace())}
		setConditions(status, []condition{
			{Type: "ConfigurationsReady", Status: "True"},
			{Type: "RoutesReady", Status: "True"},
			{Type: "Ready", Status: "True"},
		})
		err := updateStatus(ctx, dyn.Resource(gvrKnativeService).Namespace(ks.GetNamespace()), ks, status)
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return err
		}
	}
	return nil
}
