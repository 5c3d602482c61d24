package helm

import (
	"errors"
	"fmt"

	helmaction "helm.sh/helm/v3/pkg/action"
	helmdriver "helm.sh/helm/v3/pkg/storage/driver"

	"runr.dev/console/kube"
)

// Uninstall removes a release; a missing one is not an error.
func Uninstall(c *kube.Cluster, ns, name string, o Options) error {
	cfg, tail, err := configFor(c, ns)
	if err != nil {
		return err
	}
	un := helmaction.NewUninstall(cfg)
	un.Timeout = o.Timeout
	un.Wait = false
	if _, err := un.Run(name); err != nil {
		if errors.Is(err, helmdriver.ErrReleaseNotFound) {
			return nil
		}
		return tail.wrap(fmt.Errorf("helm uninstall %s/%s: %w", ns, name, err))
	}
	o.logf("Uninstalled Helm release %s/%s", ns, name)
	return nil
}
