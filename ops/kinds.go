package ops

import (
	"runr.dev/console/ops/admission"
	"runr.dev/console/ops/data"
	"runr.dev/console/ops/domains"
	"runr.dev/console/ops/gpu"
	"runr.dev/console/ops/isolation"
	"runr.dev/console/ops/nodes"
	"runr.dev/console/ops/observability"
	"runr.dev/console/ops/redis"
	"runr.dev/console/ops/statusblock"
	"runr.dev/console/ops/tenancy"
)

// registerKinds registers every kind of job the console runs.
func (s *Service) registerKinds() {
	s.Observability = &observability.Service{Kit: s.Kit}
	s.registerSetupKinds()
	s.Redis = redis.New(s.Kit)
	s.registerRegionKinds()
	s.registerKnativeKinds()
	s.StatusBlock = statusblock.New(s.Kit)
	s.registerSettingsKinds()
	s.Nodes = nodes.New(s.Kit)
	s.Tenancy = &tenancy.Service{Kit: s.Kit, Nodes: s.Nodes}
	s.registerProjectKinds()
	s.registerMigrationKinds()
	s.Domains = domains.New(s.Kit, s.StatusBlock)
	s.periodics = append(s.periodics, s.Domains.CompleteDomainMigrations)
	s.registerContainerdKinds()
	s.Isolation = isolation.New(s.Kit)
	s.GPU = gpu.New(s.Kit)
	s.Data = data.New(s.Kit, s.deployProject)
	s.registerDemoKinds()
	s.Admission = admission.New(s.Kit)
	s.registerReconcileKinds()
}
