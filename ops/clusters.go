package ops

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"

	"runr.dev/console/kube"
	"runr.dev/console/store"
)

// ClusterFor returns the (cached) cluster access of a kubeconfig.
func (s *Service) ClusterFor(raw []byte) (*kube.Cluster, error) {
	h := sha256.Sum256(raw)
	key := hex.EncodeToString(h[:])
	if c, ok := s.clusters.Load(key); ok {
		return c.(*kube.Cluster), nil
	}
	kc, err := kube.ParseKubeconfig(raw)
	if err != nil {
		return nil, err
	}
	kc.AllowLoopback = s.Cfg.AllowLoopbackClusters
	c, err := kube.NewCluster(kc)
	if err != nil {
		return nil, err
	}
	actual, _ := s.clusters.LoadOrStore(key, c)
	return actual.(*kube.Cluster), nil
}

// RegionCluster returns the cluster access of a region.
func (s *Service) RegionCluster(r *store.Region) (*kube.Cluster, error) {
	if r.SecretError != "" {
		return nil, &Unreachable{Region: r.Name, Err: errors.New(r.SecretError)}
	}
	c, err := s.ClusterFor([]byte(r.Kubeconfig))
	if err != nil {
		return nil, &Unreachable{Region: r.Name, Err: err}
	}
	return c, nil
}
