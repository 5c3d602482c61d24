package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	helmaction "helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	helmkube "helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/release"
	helmstorage "helm.sh/helm/v3/pkg/storage"
	helmdriver "helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"runr.dev/console/engine"
	"runr.dev/console/kube"
)

// restGetter is an in-memory RESTClientGetter over a stored kubeconfig: Helm never reads
// the host's kubeconfig.
type restGetter struct {
	c         *kube.Cluster
	namespace string
}

func (g *restGetter) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(g.c.REST), nil }

func (g *restGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return g.c.Discovery, nil
}

func (g *restGetter) ToRESTMapper() (meta.RESTMapper, error) { return g.c.Mapper, nil }

func (g *restGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return clientcmd.NewDefaultClientConfig(*g.c.KC.Config, &clientcmd.ConfigOverrides{Context: clientcmdapi.Context{Namespace: g.namespace}})
}

// helmLog keeps the last Helm log lines, attached to a failure.
type helmLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *helmLog) logf(format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, v...))
	if len(l.lines) > 10 {
		l.lines = l.lines[len(l.lines)-10:]
	}
}

func (l *helmLog) tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// helmConfig builds one action.Configuration for one action, from the cluster's kubeconfig.
func helmConfig(c *kube.Cluster, namespace string) (*helmaction.Configuration, *helmLog, error) {
	hl := &helmLog{}
	getter := &restGetter{c: c, namespace: namespace}
	kc := helmkube.New(getter)
	kc.Namespace = namespace
	kc.Log = hl.logf
	clientset, err := kc.Factory.KubernetesClientSet()
	if err != nil {
		return nil, nil, fmt.Errorf("helm: client: %w", err)
	}
	d := helmdriver.NewSecrets(clientset.CoreV1().Secrets(namespace))
	d.Log = hl.logf
	cfg := &helmaction.Configuration{
		RESTClientGetter: getter,
		KubeClient:       kc,
		Releases:         helmstorage.Init(d),
		Log:              hl.logf,
	}
	return cfg, hl, nil
}

// Release is a Helm release the console installs.
type Release struct {
	Namespace string
	Name      string
	Chart     ChartRef
	Values    map[string]any
	// TakeOwnership adopts resources that exist without Helm's labels.
	TakeOwnership bool
	// Repair upgrades even when the deployed release has this chart and these values: an
	// upgrade creates again what was deleted from the cluster.
	Repair bool
}

// HelmStatus returns the last release of a name (nil when there is none).
func HelmStatus(c *kube.Cluster, ns, name string) (*release.Release, error) {
	cfg, _, err := helmConfig(c, ns)
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

// HelmApply installs or upgrades a release and returns it. It holds the cluster-wide
// lock of the release (so two jobs never act on it at once, across consoles), unlocks a
// release left pending by a crash, and does nothing when the deployed release already
// has this chart version and these values.
func (s *Service) HelmApply(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, r Release) (*release.Release, error) {
	unlock, err := s.lockRelease(ctx, jc, c, r.Namespace, r.Name)
	if err != nil {
		return nil, err
	}
	defer unlock()

	ch, err := s.Charts.Load(ctx, r.Chart)
	if err != nil {
		return nil, err
	}
	cfg, hl, err := helmConfig(c, r.Namespace)
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
	deployed := false
	for _, h := range hist {
		if h.Info.Status.IsPending() {
			jc.Warnf("Helm release %s/%s was left %s by an interrupted operation; marking it failed before continuing", r.Namespace, r.Name, h.Info.Status)
			h.SetStatus(release.StatusFailed, "interrupted: the console stopped during this operation")
			if err := cfg.Releases.Update(h); err != nil {
				return nil, fmt.Errorf("unlock helm release %s/%s: %w", r.Namespace, r.Name, err)
			}
		}
		if h.Info.Status == release.StatusDeployed {
			deployed = true
			if !r.Repair && h.Chart != nil && h.Chart.Metadata.Version == ch.Metadata.Version && reflect.DeepEqual(normalized(h.Config), vals) {
				jc.Logf("Helm release %s/%s already runs %s with these values", r.Namespace, r.Name, r.Chart)
				return h, nil
			}
		}
	}
	var rel *release.Release
	if deployed {
		jc.Logf("Upgrading Helm release %s/%s to %s", r.Namespace, r.Name, r.Chart)
		up := helmaction.NewUpgrade(cfg)
		up.Namespace = r.Namespace
		up.Timeout = s.Cfg.InstallTimeout
		up.MaxHistory = 5
		// The API server validates every object; Helm's own client-side check would
		// fetch and parse the cluster's OpenAPI documents on every action.
		up.DisableOpenAPIValidation = true
		up.TakeOwnership = r.TakeOwnership
		rel, err = up.RunWithContext(ctx, r.Name, ch, vals)
	} else {
		jc.Logf("Installing Helm release %s/%s (%s)", r.Namespace, r.Name, r.Chart)
		in := helmaction.NewInstall(cfg)
		in.Namespace = r.Namespace
		in.ReleaseName = r.Name
		in.CreateNamespace = true
		in.Replace = len(hist) > 0
		in.Timeout = s.Cfg.InstallTimeout
		in.TakeOwnership = r.TakeOwnership
		in.DisableOpenAPIValidation = true
		rel, err = in.RunWithContext(ctx, ch, vals)
	}
	if err != nil {
		msg := fmt.Sprintf("helm %s %s/%s (%s): %s", map[bool]string{true: "upgrade", false: "install"}[deployed], r.Namespace, r.Name, r.Chart, err)
		if t := hl.tail(); t != "" {
			jc.Warnf("last Helm log lines:\n%s", t)
		}
		return nil, errors.New(msg)
	}
	return rel, nil
}

// HelmUninstall removes a release; a missing one is not an error.
func (s *Service) HelmUninstall(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, ns, name string) error {
	unlock, err := s.lockRelease(ctx, jc, c, ns, name)
	if err != nil {
		return err
	}
	defer unlock()
	cfg, _, err := helmConfig(c, ns)
	if err != nil {
		return err
	}
	un := helmaction.NewUninstall(cfg)
	un.Timeout = s.Cfg.InstallTimeout
	un.Wait = false
	if _, err := un.Run(name); err != nil {
		if errors.Is(err, helmdriver.ErrReleaseNotFound) || strings.Contains(err.Error(), "not found") {
			return nil
		}
		return fmt.Errorf("helm uninstall %s/%s: %w", ns, name, err)
	}
	jc.Logf("Uninstalled Helm release %s/%s", ns, name)
	return nil
}

// lockRelease takes a PostgreSQL advisory lock for one release on one cluster, on its own
// connection: two jobs never run Helm on the same release at once, whichever console
// runs them, and the lock goes with the connection if the console dies.
func (s *Service) lockRelease(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, ns, name string) (func(), error) {
	key := "helm|" + kube.ClusterKey(c.KC.Server) + "|" + ns + "|" + name
	conn, err := s.Store.DB.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("lock release: %w", err)
	}
	try := func(ctx context.Context) (bool, string, error) {
		var ok bool
		if err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock(hashtext($1))`, key).Scan(&ok); err != nil {
			return false, "", err
		}
		return ok, "another job is changing this release", nil
	}
	err = jc.Wait(ctx, fmt.Sprintf("Helm release %s/%s to be free", ns, name), engine.WaitOpts{Timeout: 15 * time.Minute, Interval: time.Second}, try)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return func() {
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn.ExecContext(uctx, `SELECT pg_advisory_unlock(hashtext($1))`, key)
		conn.Close()
	}, nil
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

// chartVersion returns the version of a loaded chart.
func chartVersion(ch *chart.Chart) string { return ch.Metadata.Version }
