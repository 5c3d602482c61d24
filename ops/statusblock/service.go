// Package statusblock is what a region that is not active answers: the status responder
// and the Traefik rule that sends the region's hosts to it, applied and removed with the
// region's status.
package statusblock

import "runr.dev/console/ops/kit"

// Service is the status block's steps and jobs.
type Service struct {
	*kit.Kit
}

// New registers the status block's job kinds with the kit's engine.
func New(k *kit.Kit) *Service {
	s := &Service{Kit: k}
	s.registerKinds()
	return s
}
