package helm

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"helm.sh/helm/v3/pkg/release"
	helmdriver "helm.sh/helm/v3/pkg/storage/driver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"runr.dev/console/kube"
)

// Status returns the last release of a name (nil when there is none).
func Status(c *kube.Cluster, ns, name string) (*release.Release, error) {
	cfg, _, err := configFor(c, ns)
	if err != nil {
		return nil, err
	}
	h, err := cfg.Releases.History(name)
	if errors.Is(err, helmdriver.ErrReleaseNotFound) || len(h) == 0 {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("helm history %s/%s: %w", ns, name, err)
	}
	last := h[0]
	for _, r := range h {
		if r.Version > last.Version {
			last = r
		}
	}
	return last, nil
}

var secretsGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// Deployed lists the deployed releases of a namespace and their revisions, from the
// metadata of Helm's release Secrets (their payloads are not read).
func Deployed(ctx context.Context, c *kube.Cluster, ns string) (map[string]int, error) {
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

// Revision reads one revision of a release.
func Revision(c *kube.Cluster, ns, name string, revision int) (*release.Release, error) {
	d := helmdriver.NewSecrets(c.Clientset.CoreV1().Secrets(ns))
	rel, err := d.Get(fmt.Sprintf("sh.helm.release.v1.%s.v%d", name, revision))
	if err != nil {
		return nil, fmt.Errorf("read Helm release %s/%s revision %d: %w", ns, name, revision, err)
	}
	return rel, nil
}
