// Package observability is what a region reports through: Prometheus (kube-prometheus-stack),
// Loki, tracing (the OpenTelemetry Collector and Tempo), and the runr-agent with the
// reports it sends.
package observability

import "runr.dev/console/ops/kit"

// Service is the observability stack's steps and the agent's reports.
type Service struct {
	*kit.Kit
}

// New is the observability stack on the kit; it registers the tracing job (the Serving
// install and reconcile run its other steps).
func New(k *kit.Kit) *Service {
	s := &Service{Kit: k}
	s.registerKinds()
	return s
}
