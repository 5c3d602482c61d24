// Package data is a region's data services (PostgreSQL through CloudNativePG, an object
// store on SeaweedFS or an external S3 endpoint, a key-value store), the projects'
// bindings to them, and the Skupper site that links a region's data to another's.
package data

import (
	"context"

	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/store"
)

// DeployProject deploys a project on its region again (the projects' step), so that a
// binding's settings reach its Knative Service.
type DeployProject func(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, r *store.Region, p *store.Project) error

// Service is the data services' use cases and jobs.
type Service struct {
	*kit.Kit
	deployProject DeployProject
}

// New registers the data services' job kinds with the kit's engine.
func New(k *kit.Kit, deploy DeployProject) *Service {
	s := &Service{Kit: k, deployProject: deploy}
	s.registerKinds()
	return s
}
