package nodes

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestRefusingBudget(t *testing.T) {
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: "DisruptionBudget",
		Message: "The disruption budget knative-kube-prometheus-st-prometheus needs 1 healthy pods and has 1 currently"})
	if got := refusingBudget(err); got != "knative-kube-prometheus-st-prometheus" {
		t.Errorf("refusingBudget = %q", got)
	}
	if got := refusingBudget(apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "x")); got != "" {
		t.Errorf("refusingBudget(404) = %q", got)
	}
}
