package kube

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// HeartbeatTimeout is how old a node's last heartbeat may be before the node shows as
// no_heartbeat (clusters-and-nodes.md: "Miss heartbeats for 30 seconds").
var HeartbeatTimeout = 30 * time.Second

// NodeHeartbeat reads a node's state from its Ready condition: no_heartbeat when the
// last heartbeat is older than HeartbeatTimeout (or never came), else ready or not_ready.
func NodeHeartbeat(n *corev1.Node, now time.Time) (NodeState, *time.Time) {
	for _, cd := range n.Status.Conditions {
		if cd.Type != corev1.NodeReady {
			continue
		}
		if cd.LastHeartbeatTime.IsZero() {
			return NodeNoHeartbeat, nil
		}
		last := cd.LastHeartbeatTime.Time
		switch {
		case now.Sub(last) > HeartbeatTimeout:
			return NodeNoHeartbeat, &last
		case cd.Status == corev1.ConditionTrue:
			return NodeReadyState, &last
		default:
			return NodeNotReady, &last
		}
	}
	return NodeNoHeartbeat, nil
}

// NodeState is a node's state as its heartbeat tells it.
type NodeState string

// Node states: no_heartbeat when the last heartbeat is older than HeartbeatTimeout.
const (
	NodeReadyState  NodeState = "ready"
	NodeNotReady    NodeState = "not_ready"
	NodeNoHeartbeat NodeState = "no_heartbeat"
)
