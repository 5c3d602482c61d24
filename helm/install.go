package helm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	helmaction "helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/postrender"
	"helm.sh/helm/v3/pkg/release"
	helmdriver "helm.sh/helm/v3/pkg/storage/driver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"runr.dev/console/imagemirror"
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
	// Mirror maps the images of the rendered objects to a registry of the administrator's
	// own (imagemirror); "" pulls them from their own registries.
	Mirror string
}

// mirrorLabel is the release label that records the image mirror a release was rendered
// for (a digest: a mirror is no label value), so that a changed mirror upgrades it.
const mirrorLabel = "runr.dev/image-mirror"

// mirrorDigest is the value of mirrorLabel for a mirror ("" for none).
func mirrorDigest(m string) string {
	if m == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(m))
	return hex.EncodeToString(sum[:8])
}

// postRenderer is the post-renderer of a release (nil without a mirror).
func (r Release) postRenderer() postrender.PostRenderer {
	if r.Mirror == "" {
		return nil
	}
	return imagemirror.PostRenderer{Mirror: r.Mirror}
}

// labels are the release's own labels: the mirror's digest ("null" removes it).
func (r Release) labels() map[string]string {
	if d := mirrorDigest(r.Mirror); d != "" {
		return map[string]string{mirrorLabel: d}
	}
	return map[string]string{mirrorLabel: "null"}
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
		if !r.Repair && h.Chart != nil && h.Chart.Metadata.Version == version && reflect.DeepEqual(normalized(h.Config), vals) &&
			h.Labels[mirrorLabel] == mirrorDigest(r.Mirror) {
			o.logf("Helm release %s/%s already runs %s %s with these values", r.Namespace, r.Name, r.Chart.Name(), version)
			return h, nil
		}
	}
	skipCRDs, err := applyCRDs(ctx, c, r.Chart, vals, o)
	if err != nil {
		return nil, err
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
		up.PostRenderer, up.Labels = r.postRenderer(), r.labels()
		rel, err = up.RunWithContext(ctx, r.Name, r.Chart, vals)
	} else {
		o.logf("Installing Helm release %s/%s (%s %s)", r.Namespace, r.Name, r.Chart.Name(), version)
		in := helmaction.NewInstall(cfg)
		in.Namespace, in.ReleaseName, in.CreateNamespace, in.Replace = r.Namespace, r.Name, true, len(hist) > 0
		in.Timeout, in.TakeOwnership, in.DisableOpenAPIValidation, in.Wait = o.Timeout, r.TakeOwnership, true, o.Wait
		in.SkipCRDs = skipCRDs
		in.PostRenderer = r.postRenderer()
		if r.Mirror != "" {
			in.Labels = r.labels()
		}
		rel, err = in.RunWithContext(ctx, r.Chart, vals)
	}
	if err != nil {
		return nil, tail.wrap(fmt.Errorf("helm %s %s/%s (%s %s): %w", verb, r.Namespace, r.Name, r.Chart.Name(), version, err))
	}
	return rel, nil
}

// applyCRDs creates the CRDs of a chart and of the subcharts vals enable (crds/) that do
// not exist and waits until all are established, when the caller gave a way to wait
// (o.WaitFor); it reports whether it did, so that Helm skips them.
func applyCRDs(ctx context.Context, c *kube.Cluster, ch *chart.Chart, vals map[string]any, o Options) (bool, error) {
	if o.WaitFor == nil {
		return false, nil
	}
	// The CRDs of the subcharts these values enable, as Helm's install picks them.
	if err := chartutil.ProcessDependenciesWithMerge(ch, vals); err != nil {
		return false, fmt.Errorf("helm: dependencies of %s: %w", ch.Name(), err)
	}
	files := ch.CRDObjects()
	if len(files) == 0 {
		return false, nil
	}
	var names []string
	created := 0
	crds := c.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	for _, f := range files {
		objs, err := kube.DecodeYAML(f.File.Data)
		if err != nil {
			return false, fmt.Errorf("helm: CRDs of %s (%s): %w", ch.Name(), f.Filename, err)
		}
		for _, obj := range objs {
			names = append(names, obj.GetName())
			// As Helm does: a CRD that exists is left as it is (another installation may
			// own it, at another version).
			_, err := crds.Create(ctx, obj, metav1.CreateOptions{FieldManager: kube.FieldManager})
			switch {
			case apierrors.IsAlreadyExists(err):
			case err != nil:
				return false, fmt.Errorf("helm: create CRD %s of %s: %w", obj.GetName(), ch.Name(), err)
			default:
				created++
			}
		}
	}
	o.logf("%s", crdsCreated(created, len(names), ch.Name()+" "+ch.Metadata.Version))
	what := fmt.Sprintf("the CRDs of %s %s (%d) to be established", ch.Name(), ch.Metadata.Version, len(names))
	if err := o.WaitFor(ctx, what, c.CRDsEstablished(names)); err != nil {
		return false, err
	}
	// Helm maps the templates' kinds through the cluster's cached discovery, which
	// predates the new CRDs (Helm's own CRD install resets it the same way).
	c.Mapper.Reset()
	return true, nil
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

// RenderedFor reports whether a release was rendered for an image mirror ("" for none).
func RenderedFor(rel *release.Release, mirror string) bool {
	return rel.Labels[mirrorLabel] == mirrorDigest(mirror)
}

// crdsCreated says what a chart's CRDs install did, in words for each case.
func crdsCreated(created, total int, chart string) string {
	switch {
	case created == 0:
		return fmt.Sprintf("The %d CRDs of %s exist already", total, chart)
	case created == total:
		return fmt.Sprintf("Created the %d CRDs of %s", total, chart)
	}
	return fmt.Sprintf("Created %d of the %d CRDs of %s (the others exist already)", created, total, chart)
}
