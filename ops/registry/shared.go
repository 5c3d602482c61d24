package registry

import (
	"context"
	"fmt"

	"runr.dev/console/store"
)

// InternalOwner names another region on the cluster clusterKey (other than
// exceptRegion) whose internal registry runs there, or "" when none does: the internal
// registry is one Helm release per cluster (Namespace/ZotRelease), so a second region
// installing its own would upgrade the first one's.
func (s *Service) InternalOwner(ctx context.Context, clusterKey, exceptRegion string) (string, error) {
	rs, err := s.Store.ListRegions(ctx, store.RegionFilter{ClusterKey: clusterKey}, false)
	if err != nil {
		return "", fmt.Errorf("regions of the cluster: %w", err)
	}
	for _, r := range rs {
		if r.ID != exceptRegion && r.RegistryMode == store.RegistryInternal {
			return r.Name, nil
		}
	}
	return "", nil
}

// SharedRefusal is the field error on registry_mode when the cluster's internal registry
// is region owner's.
func SharedRefusal(owner string) string {
	return "This cluster's internal registry (" + Namespace + "/" + ZotRelease + ") is region " + owner +
		"'s: a cluster holds one, and a second install would change " + owner + "'s. Choose external (for example " +
		owner + "'s registry address, with its credentials) or none."
}
