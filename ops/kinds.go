package ops

import (
	"runr.dev/console/ops/admission"
	"runr.dev/console/ops/billing"
	"runr.dev/console/ops/data"
	"runr.dev/console/ops/domains"
	"runr.dev/console/ops/gpu"
	"runr.dev/console/ops/isolation"
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

// registerKinds builds the features, each registering its own kinds of job (the ones
// others depend on first), then registers the kinds of the use cases that stay in ops.
func (s *Service) registerKinds() {
	s.Preflight = preflight.New(s.Kit)
	s.Registry = registry.New(s.Kit)
	s.Observability = observability.New(s.Kit)
	s.Redis = redis.New(s.Kit)
	s.StatusBlock = statusblock.New(s.Kit)
	s.Nodes = nodes.New(s.Kit)
	s.Tenancy = tenancy.New(s.Kit, s.Nodes)
	s.Isolation = isolation.New(s.Kit)
	s.GPU = gpu.New(s.Kit)
	s.Admission = admission.New(s.Kit)
	s.Billing = billing.New(s.Kit, s.Tenancy)
	s.Observability.Meter = s.Billing.Meter
	s.Projects = projects.New(s.Kit, projects.Deps{Nodes: s.Nodes, Tenancy: s.Tenancy, Redis: s.Redis, GPU: s.GPU,
		Admission: s.Admission, Billing: s.Billing, EnableKnativeFeatures: knative.EnableFeatures})
	s.Data = data.New(s.Kit, s.Projects.Deploy)
	s.Projects.UseData(s.Data)
	s.Domains = domains.New(s.Kit, s.StatusBlock)
	s.Knative = knative.New(s.Kit, s.Observability, s.StatusBlock)

	s.registerSetupKinds()
	s.registerRegionKinds()
	s.registerSettingsKinds()
	s.registerTeardownKind()
	s.Moves = moves.New(s.Kit, moves.Deps{Preflight: s.Preflight, Knative: s.Knative, Registry: s.Registry, Redis: s.Redis, Isolation: s.Isolation,
		GPU: s.GPU, Data: s.Data, Admission: s.Admission, Projects: s.Projects, Domains: s.Domains, StatusBlock: s.StatusBlock})
	s.Status = status.New(s.Kit, s.Moves.CompleteMoves, s.Domains.CompleteDomainMigrations)
	// A job that changed a region is followed by a status check: its health (and every
	// view of it) says what the job did, not what the last sweep saw before it.
	s.Engine.Ended = func(j *store.Job, st store.JobStatus) {
		if st == store.JobSucceeded && j.Region() != "" && j.Kind != KindTeardown {
			s.Status.CheckSoon(j.Region())
		}
	}

	s.Reconcile = reconcile.New(s.Kit, reconcile.Deps{Knative: s.Knative, Observability: s.Observability, StatusBlock: s.StatusBlock, Domains: s.Domains})
}
