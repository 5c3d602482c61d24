// Package helm runs Helm's SDK against a cluster of the console: one action.Configuration
// per action, assembled from the cluster's in-memory REST configuration (never the
// host's kubeconfig), one file per verb. Errors wrap their cause and carry the last
// lines of Helm's log.
package helm

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	helmaction "helm.sh/helm/v3/pkg/action"
	helmkube "helm.sh/helm/v3/pkg/kube"
	helmstorage "helm.sh/helm/v3/pkg/storage"
	helmdriver "helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"runr.dev/console/kube"
)

// Options are what every verb takes besides its release.
type Options struct {
	// Timeout bounds Helm's own waits and hooks.
	Timeout time.Duration
	// Wait makes an install or upgrade wait, as `helm --wait` does, until the release's
	// workloads are ready (the console waits with its own named waits instead; the
	// benchmark's Helm baseline uses this).
	Wait bool
	// Logf receives the console's lines about the action (nil: none).
	Logf func(format string, args ...any)
	// WaitFor, when set, is how the caller waits for a condition it names; an install
	// or upgrade then applies the chart's CRDs itself (server-side, so they are also
	// upgraded) and waits with it until they are established, instead of Helm's own
	// wait, which polls every 2 s. Nil: Helm's own handling of crds/, as `helm install`.
	WaitFor func(ctx context.Context, what string, cond func(ctx context.Context) (bool, string, error)) error
}

func (o Options) logf(format string, args ...any) {
	if o.Logf != nil {
		o.Logf(format, args...)
	}
}

// restGetter is an in-memory RESTClientGetter over a stored kubeconfig.
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

// logTail keeps the last Helm log lines, attached to a failure.
type logTail struct {
	mu    sync.Mutex
	lines []string
}

func (l *logTail) logf(format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, v...))
	if len(l.lines) > 10 {
		l.lines = l.lines[len(l.lines)-10:]
	}
}

func (l *logTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// wrap adds the last Helm log lines to an action's error.
func (l *logTail) wrap(err error) error {
	if t := l.String(); t != "" {
		return fmt.Errorf("%w\nlast Helm log lines:\n%s", err, t)
	}
	return err
}

// configFor builds one action.Configuration for one action in namespace.
func configFor(c *kube.Cluster, namespace string) (*helmaction.Configuration, *logTail, error) {
	tail := &logTail{}
	getter := &restGetter{c: c, namespace: namespace}
	kc := helmkube.New(getter)
	kc.Namespace = namespace
	kc.Log = tail.logf
	clientset, err := kc.Factory.KubernetesClientSet()
	if err != nil {
		return nil, nil, fmt.Errorf("helm: client: %w", err)
	}
	d := helmdriver.NewSecrets(clientset.CoreV1().Secrets(namespace))
	d.Log = tail.logf
	return &helmaction.Configuration{RESTClientGetter: getter, KubeClient: kc, Releases: helmstorage.Init(d), Log: tail.logf}, tail, nil
}
