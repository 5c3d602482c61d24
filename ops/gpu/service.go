// Package gpu is GPU support of a region: NVIDIA's GPU operator or device plugin with
// node-feature-discovery, the GPUs found on the nodes, the model storage volume, and the
// GPUs a project asks for.
package gpu

import "runr.dev/console/ops/kit"

// Service is GPU support's use cases and jobs.
type Service struct {
	*kit.Kit
}

// New registers GPU support's job kinds with the kit's engine.
func New(k *kit.Kit) *Service {
	s := &Service{Kit: k}
	s.registerKinds()
	return s
}
