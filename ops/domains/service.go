// Package domains is where a region's functions answer: its function domain in Knative's
// configuration, the platform's base domain and the moves between base domains (the alias
// proxy, the DNS check, completion and rollback), and the DNS lookups they wait on.
package domains

import (
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/statusblock"
)

// Service is the domains' use cases and jobs.
type Service struct {
	*kit.Kit
	// StatusBlock is put back on a region that is not active once its domain changed.
	StatusBlock *statusblock.Service
}

// New registers the domains' job kinds with the kit's engine.
func New(k *kit.Kit, block *statusblock.Service) *Service {
	s := &Service{Kit: k, StatusBlock: block}
	s.registerDomainKinds()
	s.registerBaseDomainKinds()
	return s
}
