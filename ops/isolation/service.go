// Package isolation is a region's sandbox runtimes: gVisor and Kata Containers
// (kata-deploy) and WebAssembly (runtime-class-manager), the nodes that can run them, the
// KVM probe, and the sandbox settings projects choose from.
package isolation

import "runr.dev/console/ops/kit"

// Service is the sandbox runtimes' use cases and jobs.
type Service struct {
	*kit.Kit
}

// New registers the sandbox runtimes' job kinds with the kit's engine.
func New(k *kit.Kit) *Service {
	s := &Service{Kit: k}
	s.registerKinds()
	return s
}
