// Package redis is a region's Redis: the managed one the console installs (a StatefulSet
// with its password in a Secret), or an external address, and the commands the console
// runs against it in the cluster.
package redis

import "runr.dev/console/ops/kit"

// Service is Redis's use cases and jobs.
type Service struct {
	*kit.Kit
}

// New registers Redis's job kinds with the kit's engine.
func New(k *kit.Kit) *Service {
	s := &Service{Kit: k}
	s.registerKinds()
	return s
}
