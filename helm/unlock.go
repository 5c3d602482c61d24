package helm

import (
	"fmt"

	helmaction "helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
)

// unlockPending marks failed the revisions an interrupted operation left pending-*
// (Helm refuses to act on a release in such a state); it reports whether it did.
func unlockPending(cfg *helmaction.Configuration, hist []*release.Release, o Options) error {
	for _, h := range hist {
		if !h.Info.Status.IsPending() {
			continue
		}
		o.logf("Helm release %s/%s was left %s by an interrupted operation; marking it failed before continuing", h.Namespace, h.Name, h.Info.Status)
		h.SetStatus(release.StatusFailed, "interrupted: the console stopped during this operation")
		if err := cfg.Releases.Update(h); err != nil {
			return fmt.Errorf("unlock helm release %s/%s: %w", h.Namespace, h.Name, err)
		}
	}
	return nil
}
