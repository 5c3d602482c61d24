package kit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/kube"
	"runr.dev/console/problem"
	"runr.dev/console/store"
)

// ClusterFor returns the (cached) cluster access of a kubeconfig.
func (s *Kit) ClusterFor(raw []byte) (*kube.Cluster, error) {
	key := clusterCacheKey(raw)
	if c, ok := s.clusters.Load(key); ok {
		return c.(*kube.Cluster), nil
	}
	kc, err := kube.ParseKubeconfig(raw)
	if err != nil {
		return nil, err
	}
	kc.AllowLoopback = s.Cfg.AllowLoopbackClusters
	c, err := s.NewCluster(kc)
	if err != nil {
		return nil, err
	}
	actual, _ := s.clusters.LoadOrStore(key, c)
	return actual.(*kube.Cluster), nil
}

// RegionCluster returns the cluster access of a region.
func (s *Kit) RegionCluster(r *store.Region) (*kube.Cluster, error) {
	if r.SecretError != "" {
		return nil, &problem.Unreachable{Region: r.Name, Err: errors.New(r.SecretError)}
	}
	c, err := s.ClusterFor([]byte(r.Kubeconfig))
	if err != nil {
		return nil, &problem.Unreachable{Region: r.Name, Err: err}
	}
	return c, nil
}

func clusterCacheKey(raw []byte) string {
	h := sha256.Sum256(raw)
	return hex.EncodeToString(h[:])
}

// ForgetCluster drops the cached access of a kubeconfig whose cluster did not answer: a
// fleet's dead clusters are not kept (each access holds a dozen API clients and a
// transport); the next look, after the breaker's backoff, builds it again.
func (s *Kit) ForgetCluster(raw []byte) {
	s.clusters.Delete(clusterCacheKey(raw))
}

// RegionStorageClasses lists the names of a region's StorageClasses.
func (s *Kit) RegionStorageClasses(ctx context.Context, r *store.Region) ([]string, error) {
	c, err := s.RegionCluster(r)
	if err != nil {
		return nil, err
	}
	scs, err := c.Clientset.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list the StorageClasses: %w", err)
	}
	out := make([]string, len(scs.Items))
	for i, sc := range scs.Items {
		out[i] = sc.Name
	}
	return out, nil
}

// NewCluster builds the API clients of a parsed kubeconfig, counting them.
func (s *Kit) NewCluster(kc *kube.Kubeconfig) (*kube.Cluster, error) {
	s.clientSets.Add(1)
	return kube.NewCluster(kc)
}

// ClientSetsBuilt is how many cluster client sets this console process built: each holds
// a dozen API clients and a transport, so jobs reuse one.
func (s *Kit) ClientSetsBuilt() int64 { return s.clientSets.Load() }
