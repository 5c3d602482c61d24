package preflight

import (
	"context"
	"fmt"

	"runr.dev/console/kube"
)

// OtherOwnerRefusal says why a region cannot go on a cluster that hosts another owner's
// regions: the regions of one cluster share its agent, Knative Serving and tracing.
const OtherOwnerRefusal = "This cluster already hosts regions of another owner (the platform or another tenant): the regions of one cluster share its agent, Knative Serving and tracing, so a cluster serves one owner. Use a cluster of your own."

// OtherOwnerErrors returns a field error on the kubeconfig when its cluster hosts a region
// (other than exceptRegion) of an owner other than tenant ("" is the platform).
func (s *Service) OtherOwnerErrors(ctx context.Context, kubeconfig []byte, tenant, exceptRegion string) (map[string]string, error) {
	kc, err := kube.ParseKubeconfig(kubeconfig)
	if err != nil {
		return map[string]string{"kubeconfig": err.Error()}, nil
	}
	return s.OtherOwnerOn(ctx, kc.Server, tenant, exceptRegion)
}

// OtherOwnerOn is OtherOwnerErrors for a cluster known by its API server's address.
func (s *Service) OtherOwnerOn(ctx context.Context, server, tenant, exceptRegion string) (map[string]string, error) {
	other, err := s.Store.ClusterHostsOtherOwner(ctx, kube.ClusterKey(server), tenant, exceptRegion)
	if err != nil {
		return nil, fmt.Errorf("owners of cluster %s: %w", server, err)
	}
	if other {
		return map[string]string{"kubeconfig": OtherOwnerRefusal}, nil
	}
	return nil, nil
}
