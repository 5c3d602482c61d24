// Package ops is what the console does with regions. Each feature is a package of its
// own registering its kinds of job (preflight, registry, knative, observability, redis,
// isolation, gpu, admission, billing, data, nodes, tenancy, projects, domains, statusblock,
// reconcile, moves, status), all built on ops/kit; ops itself builds them in dependency
// order and keeps the use cases that span them: creating a region (the wizard's setup),
// its settings and its removal. Use cases are Fiber-free functions that handlers and the
// CLI call alike.
package ops

import (
	"context"
	"log/slog"

	"runr.dev/console/config"
	"runr.dev/console/ops/admission"
	"runr.dev/console/ops/billing"
	"runr.dev/console/ops/data"
	"runr.dev/console/ops/domains"
	"runr.dev/console/ops/gpu"
	"runr.dev/console/ops/isolation"
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/knative"
	"runr.dev/console/ops/moves"
	"runr.dev/console/ops/nodes"
	"runr.dev/console/ops/observability"
	"runr.dev/console/ops/preflight"
	"runr.dev/console/ops/projects"
	"runr.dev/console/ops/reconcile"
	"runr.dev/console/ops/redis"
	"runr.dev/console/ops/registry"
	"runr.dev/console/ops/status"
	"runr.dev/console/ops/statusblock"
	"runr.dev/console/ops/tenancy"
	"runr.dev/console/store"
)

// Service is the console's cluster side: it runs jobs and checks regions.
type Service struct {
	*kit.Kit

	// Status is the status checks of the regions.
	Status *status.Service
	// Reconcile brings regions up to this release.
	Reconcile *reconcile.Service
	// Moves moves regions between clusters.
	Moves *moves.Service
	// Preflight checks clusters before regions go on them.
	Preflight *preflight.Service
	// Knative is the Knative Operator, Serving and the region Traefik.
	Knative *knative.Service
	// Registry is the region's image registry.
	Registry *registry.Service
	// GPU is GPU support.
	GPU *gpu.Service
	// Admission is the supply chain's admission policy.
	Admission *admission.Service
	// Isolation is the sandbox runtimes.
	Isolation *isolation.Service
	// Data is the data services and the projects' bindings to them.
	Data *data.Service
	// Nodes is the nodes, dedicated workers and capacity.
	Nodes *nodes.Service
	// Tenancy is the tenancy module.
	Tenancy *tenancy.Service
	// Redis is the region's Redis.
	Redis *redis.Service
	// Observability is Prometheus, Loki, tracing and the agent.
	Observability *observability.Service
	// StatusBlock is what a region that is not active answers.
	StatusBlock *statusblock.Service
	// Domains is the function domains and the moves between base domains.
	Domains *domains.Service
	// Projects is the projects and the demo projects.
	Projects *projects.Service
	// Billing is the Billing module (RUNR_BILLING=on).
	Billing *billing.Service
}

// NewService builds the cluster side of the console.
func NewService(st *store.Store, cfg *config.Config, log *slog.Logger) *Service {
	s := &Service{Kit: kit.New(st, cfg, log)}
	s.registerKinds()
	return s
}

// RunWorkers runs n job runners until ctx ends.
func (s *Service) RunWorkers(ctx context.Context, n int) { s.Engine.Run(ctx, n) }
