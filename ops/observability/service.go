// Package observability is what a region reports through: Prometheus (kube-prometheus-stack),
// Loki, tracing (the OpenTelemetry Collector and Tempo), and the runr-agent with the
// reports it sends.
package observability

import "runr.dev/console/ops/kit"

// Service is the observability stack's steps and the agent's reports.
type Service struct {
	*kit.Kit
}

// New is the observability stack on the kit (it registers no job kind of its own: the
// Serving install and reconcile run its steps).
func New(k *kit.Kit) *Service { return &Service{Kit: k} }
