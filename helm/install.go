package helm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	helmaction "helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	helmdriver "helm.sh/helm/v3/pkg/storage/driver"

	"runr.dev/console/kube"
)

// Release is a release the console installs.
type Release struct {
	Namespace string
	Name      string
	Chart     *chart.Chart
	Values    map[string]any
	// TakeOwnership adopts resources that exist without Helm's labels.
	TakeOwnership bool
	// Repair upgrades even when the deployed release has this chart and these values: an
	// upgrade creates again what was deleted from the cluster.
	Repair bool
}

// Apply installs or upgrades a release and returns it: it unlocks a release an
// interrupted operation left pending, and does nothing when the deployed release already
// has this chart version and these values.
func Apply(ctx context.Context, c *kube.Cluster, r Release, o Options) (*release.Release, error) {
	cfg, tail, err := configFor(c, r.Namespace)
	if err != nil {
		return nil, err
	}
	vals, err := normalizeValues(r.Values)
	if err != nil {
		return nil, err
	}
	hist, err := cfg.Releases.History(r.Name)
	if err != nil && !errors.Is(err, helmdriver.ErrReleaseNotFound) {
		return nil, fmt.Errorf("helm history %s/%s: %w", r.Namespace, r.Name, err)
	}
	if err := unlockPending(cfg, hist, o); err != nil {
		return nil, err
	}
	version := r.Chart.Metadata.Version
	deployed := false
	for _, h := range hist {
		if h.Info.Status != release.StatusDeployed {
			continue
		}
		deployed = true
		if !r.Repair && h.Chart != nil && h.Chart.Metadata.Version == version && reflect.DeepEqual(normalized(h.Config), vals) {
			o.logf("Helm release %s/%s already runs %s %s with these values", r.Namespace, r.Name, r.Chart.Name(), version)
			return h, nil
		}
	}
	var rel *release.Release
	verb := "install"
	if deployed {
		verb = "upgrade"
		o.logf("Upgrading Helm release %s/%s to %s %s", r.Namespace, r.Name, r.Chart.Name(), version)
		up := helmaction.NewUpgrade(cfg)
		up.Namespace, up.Timeout, up.MaxHistory, up.TakeOwnership, up.Wait = r.Namespace, o.Timeout, 5, r.TakeOwnership, o.Wait
		// The API server validates every object; Helm's own client-side check would
		// fetch and parse the cluster's OpenAPI documents on every action.
		up.DisableOpenAPIValidation = true
		rel, err = up.RunWithContext(ctx, r.Name, r.Chart, vals)
	} else {
		o.logf("Installing Helm release %s/%s (%s %s)", r.Namespace, r.Name, r.Chart.Name(), version)
		in := helmaction.NewInstall(cfg)
		in.Namespace, in.ReleaseName, in.CreateNamespace, in.Replace = r.Namespace, r.Name, true, len(hist) > 0
		in.Timeout, in.TakeOwnership, in.DisableOpenAPIValidation, in.Wait = o.Timeout, r.TakeOwnership, true, o.Wait
		rel, err = in.RunWithContext(ctx, r.Chart, vals)
	}
	if err != nil {
		return nil, tail.wrap(fmt.Errorf("helm %s %s/%s (%s %s): %w", verb, r.Namespace, r.Name, r.Chart.Name(), version, err))
	}
	return rel, nil
}

// normalizeValues turns values into what Helm stores (a JSON round trip), so that a
// comparison with a deployed release's values is exact.
func normalizeValues(v map[string]any) (map[string]any, error) {
	if v == nil {
		return map[string]any{}, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("helm values: %w", err)
	}
	out := map[string]any{}
	return out, json.Unmarshal(raw, &out)
}

func normalized(v map[string]any) map[string]any {
	out, err := normalizeValues(v)
	if err != nil {
		return nil
	}
	return out
}
