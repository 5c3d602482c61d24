// Package nodes is a region's cluster as the operator sees its nodes: the node list with
// its evidence, cordon, drain and labels, the dedicated workers, FaaS overcommit, and the
// capacity that admits a project or refuses it.
package nodes

import "runr.dev/console/ops/kit"

// Service is the nodes' use cases and jobs.
type Service struct {
	*kit.Kit
}

// New registers the nodes' job kinds with the kit's engine.
func New(k *kit.Kit) *Service {
	s := &Service{Kit: k}
	s.registerKinds()
	s.registerProbeKind()
	s.registerWorkersKind()
	s.registerUpgradeKind()
	return s
}
