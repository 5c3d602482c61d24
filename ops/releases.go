package ops

import (
	"context"
	"fmt"
	"strconv"

	helmdriver "helm.sh/helm/v3/pkg/storage/driver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"runr.dev/console/kube"
)

var secretsGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// DeployedReleases lists the deployed Helm releases of a namespace and their revisions,
// from the metadata of Helm's release Secrets (their payloads are not read).
func DeployedReleases(ctx context.Context, c *kube.Cluster, ns string) (map[string]int, error) {
	l, err := c.Metadata.Resource(secretsGVR).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,status=deployed"})
	if err != nil {
		return nil, fmt.Errorf("list the Helm releases of %s: %w", ns, err)
	}
	out := map[string]int{}
	for _, m := range l.Items {
		v, err := strconv.Atoi(m.Labels["version"])
		if err != nil || m.Labels["name"] == "" {
			continue
		}
		if v > out[m.Labels["name"]] {
			out[m.Labels["name"]] = v
		}
	}
	return out, nil
}

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
	d := helmdriver.NewSecrets(c.Clientset.CoreV1().Secrets(ns))
	rel, err := d.Get(fmt.Sprintf("sh.helm.release.v1.%s.v%d", name, revision))
	if err != nil {
		return nil, fmt.Errorf("read Helm release %s/%s revision %d: %w", ns, name, revision, err)
	}
	ws, err := kube.ReleaseWorkloads(rel.Manifest, ns)
	if err != nil {
		return nil, fmt.Errorf("Helm release %s/%s: %w", ns, name, err)
	}
	s.releaseCache.Store(k, ws)
	return ws, nil
}
