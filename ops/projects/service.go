// Package projects is the projects of a region: creating, deploying (a Knative Service or
// a worker Deployment, with its bindings, GPUs and sandbox class) under the admission
// rules, moving between regions, deleting, the data residency a project requires, and the
// demo projects.
package projects

import (
	"context"

	"runr.dev/console/kube"
	"runr.dev/console/ops/admission"
	"runr.dev/console/ops/billing"
	"runr.dev/console/ops/data"
	"runr.dev/console/ops/gpu"
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/nodes"
	"runr.dev/console/ops/redis"
	"runr.dev/console/ops/tenancy"
)

// Deps are the features a project's deploy consults.
type Deps struct {
	Nodes     *nodes.Service
	Tenancy   *tenancy.Service
	Redis     *redis.Service
	GPU       *gpu.Service
	Admission *admission.Service
	// Billing holds a fixed region's deploys to its allocation.
	Billing *billing.Service
	// EnableKnativeFeatures turns on, in a region's KnativeServing, the features projects use.
	EnableKnativeFeatures func(ctx context.Context, c *kube.Cluster, ns string) error
}

// Service is the projects' use cases and jobs.
type Service struct {
	*kit.Kit
	nodes                 *nodes.Service
	tenancy               *tenancy.Service
	redis                 *redis.Service
	gpu                   *gpu.Service
	admission             *admission.Service
	billing               *billing.Service
	data                  *data.Service
	enableKnativeFeatures func(ctx context.Context, c *kube.Cluster, ns string) error
}

// New registers the projects' job kinds with the kit's engine.
func New(k *kit.Kit, d Deps) *Service {
	s := &Service{Kit: k, nodes: d.Nodes, tenancy: d.Tenancy, redis: d.Redis, gpu: d.GPU, admission: d.Admission,
		billing: d.Billing, enableKnativeFeatures: d.EnableKnativeFeatures}
	s.registerProjectKinds()
	s.registerDemoKinds()
	return s
}

// UseData gives the projects the data services, which are built after them (a binding
// redeploys its project through Deploy).
func (s *Service) UseData(d *data.Service) { s.data = d }
