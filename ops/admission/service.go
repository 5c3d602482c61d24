// Package admission is a region's supply chain policy at admission: sigstore's
// policy-controller, the ClusterImagePolicies that require signed images, and the gate
// that checks a project's image before it deploys.
package admission

import "runr.dev/console/ops/kit"

// Service is the supply chain's use cases and jobs.
type Service struct {
	*kit.Kit
}

// New registers the admission policy's job kinds with the kit's engine.
func New(k *kit.Kit) *Service {
	s := &Service{Kit: k}
	s.registerKinds()
	return s
}
