// Package tenancy is the tenancy module (RUNR_TENANCY=on): tenants, tenant-owned regions,
// assignments of platform regions with quotas that must fit the region's capacity,
// region modes, and who may see or change a region.
package tenancy

import (
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/nodes"
)

// Service is the tenancy module's use cases.
type Service struct {
	*kit.Kit
	// Nodes reads a region's capacity, which an assignment's quotas must fit.
	Nodes *nodes.Service
}

// New is the tenancy module, reading capacity through nodes.
func New(k *kit.Kit, n *nodes.Service) *Service { return &Service{Kit: k, Nodes: n} }
