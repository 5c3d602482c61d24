package kube

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HeartbeatTimeout is how old a node's last heartbeat may be before the node shows as
// no_heartbeat (clusters-and-nodes.md: "Miss heartbeats for 30 seconds").
var HeartbeatTimeout = 30 * time.Second

// NodeLeaseNamespace holds the kubelets' heartbeats: one Lease per node, renewed every
// 10 s. A kubelet posts its node's status (the Ready condition's heartbeat) only when the
// status changes, or every 5 minutes: the Lease is what says a node is alive.
const NodeLeaseNamespace = "kube-node-lease"

// NodeHeartbeat reads a node's state: its last heartbeat is the later of its Lease's
// renewal (renew, nil when unknown) and its Ready condition's heartbeat; no_heartbeat when
// that is older than HeartbeatTimeout (or never came), else ready or not_ready as the
// Ready condition says.
func NodeHeartbeat(n *corev1.Node, renew *time.Time, now time.Time) (NodeState, *time.Time) {
	for _, cd := range n.Status.Conditions {
		if cd.Type != corev1.NodeReady {
			continue
		}
		var last *time.Time
		if !cd.LastHeartbeatTime.IsZero() {
			t := cd.LastHeartbeatTime.Time
			last = &t
		}
		if renew != nil && (last == nil || renew.After(*last)) {
			t := *renew
			last = &t
		}
		switch {
		case last == nil || now.Sub(*last) > HeartbeatTimeout:
			return NodeNoHeartbeat, last
		case cd.Status == corev1.ConditionTrue:
			return NodeReadyState, last
		default:
			return NodeNotReady, last
		}
	}
	return NodeNoHeartbeat, nil
}

// NodeLeaseRenewals reads when each node's Lease was last renewed, by node name. It is
// empty when the kubeconfig may not read Leases: the Ready condition's heartbeats alone
// count then.
func (c *Cluster) NodeLeaseRenewals(ctx context.Context) map[string]time.Time {
	out := map[string]time.Time{}
	leases, err := c.Clientset.CoordinationV1().Leases(NodeLeaseNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return out
	}
	for _, l := range leases.Items {
		if l.Spec.RenewTime != nil {
			out[l.Name] = l.Spec.RenewTime.Time
		}
	}
	return out
}

// NodeLeaseRenewal reads when one node's Lease was last renewed (nil when unknown).
func (c *Cluster) NodeLeaseRenewal(ctx context.Context, node string) *time.Time {
	l, err := c.Clientset.CoordinationV1().Leases(NodeLeaseNamespace).Get(ctx, node, metav1.GetOptions{})
	if err != nil || l.Spec.RenewTime == nil {
		return nil
	}
	t := l.Spec.RenewTime.Time
	return &t
}

// NodeState is a node's state as its heartbeat tells it.
type NodeState string

// Node states: no_heartbeat when the last heartbeat is older than HeartbeatTimeout.
const (
	NodeReadyState  NodeState = "ready"
	NodeNotReady    NodeState = "not_ready"
	NodeNoHeartbeat NodeState = "no_heartbeat"
)
