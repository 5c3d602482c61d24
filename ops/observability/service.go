// Package observability is what a region reports through: Prometheus (kube-prometheus-stack),
// Loki, tracing (the OpenTelemetry Collector and Tempo), and the runr-agent with the
// reports it sends.
package observability

import (
	"context"
	"time"

	"runr.dev/console/agent"
	"runr.dev/console/ops/kit"
	"runr.dev/console/store"
)

// Service is the observability stack's steps and the agent's reports.
type Service struct {
	*kit.Kit
	// Meter records the projects' use of a snapshot for billing (nil: not metered); it
	// gets the active regions of the reporting cluster.
	Meter func(ctx context.Context, regions []store.AgentRegion, at time.Time, usage []agent.ProjectUsage) error

	agentWrites agentWrites // the agents' connections and last-seen marks not written yet
}

// New is the observability stack on the kit; it registers the tracing job (the Serving
// install and reconcile run its other steps).
func New(k *kit.Kit) *Service {
	s := &Service{Kit: k}
	s.registerKinds()
	return s
}
