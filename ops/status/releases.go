package status

import (
	"fmt"

	"runr.dev/console/helm"
	"runr.dev/console/kube"
)

type releaseRevision struct {
	cluster, namespace, name string
	revision                 int
}

// releaseWorkloads returns the workloads of one revision of a release, read from its
// manifest once and kept while the process runs (a revision never changes).
func (s *Service) releaseWorkloads(c *kube.Cluster, ns, name string, revision int) ([]kube.Workload, error) {
	k := releaseRevision{kube.ClusterKey(c.KC.Server), ns, name, revision}
	if ws, ok := s.releaseCache.Load(k); ok {
		return ws.([]kube.Workload), nil
	}
	rel, err := helm.Revision(c, ns, name, revision)
	if err != nil {
		return nil, err
	}
	ws, err := kube.ReleaseWorkloads(rel.Manifest, ns)
	if err != nil {
		return nil, fmt.Errorf("Helm release %s/%s: %w", ns, name, err)
	}
	s.releaseCache.Store(k, ws)
	return ws, nil
}
