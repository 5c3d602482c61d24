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
func NodeHeartbeat(n *corev1.Node, now time.Time) (string, *time.Time) {
	for _, cd := range n.Status.Conditions {
		if cd.Type != corev1.NodeReady {
			continue
		}
		if cd.LastHeartbeatTime.IsZero() {
			return "no_heartbeat", nil
		}
		last := cd.LastHeartbeatTime.Time
		switch {
		case now.Sub(last) > HeartbeatTimeout:
			return "no_heartbeat", &last
		case cd.Status == corev1.ConditionTrue:
			return "ready", &last
		default:
			return "not_ready", &last
		}
	}
	return "no_heartbeat", nil
}
