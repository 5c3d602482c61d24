package kube

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// Cluster is the console's access to one cluster, built from a kubeconfig.
type Cluster struct {
	KC        *Kubeconfig
	REST      *rest.Config
	Clientset kubernetes.Interface
	Dynamic   dynamic.Interface
	Metadata  metadata.Interface
	APIExt    apiextclient.Interface
	Discovery discovery.CachedDiscoveryInterface
	Mapper    *restmapper.DeferredDiscoveryRESTMapper
}

// NewCluster builds clients for a parsed kubeconfig.
func NewCluster(kc *Kubeconfig) (*Cluster, error) {
	rc, err := kc.RESTConfig()
	if err != nil {
		return nil, err
	}
	rc.Timeout = 30 * time.Second
	// The API server's warnings (deprecated fields, unknown fields Helm's charts carry)
	// would go to klog on stderr; they are not the administrator's business.
	rc.WarningHandler = rest.NoWarnings{}
	// One transport for the cluster's clients (the policy dialer makes client-go's
	// transport cache step aside).
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, fmt.Errorf("kube: http client: %w", err)
	}
	cs, err := kubernetes.NewForConfigAndClient(rc, hc)
	if err != nil {
		return nil, fmt.Errorf("kube: clientset: %w", err)
	}
	dyn, err := dynamic.NewForConfigAndClient(rc, hc)
	if err != nil {
		return nil, fmt.Errorf("kube: dynamic client: %w", err)
	}
	md, err := metadata.NewForConfigAndClient(rc, hc)
	if err != nil {
		return nil, fmt.Errorf("kube: metadata client: %w", err)
	}
	ext, err := apiextclient.NewForConfigAndClient(rc, hc)
	if err != nil {
		return nil, fmt.Errorf("kube: apiextensions client: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(rc, hc)
	if err != nil {
		return nil, fmt.Errorf("kube: discovery: %w", err)
	}
	cached := memory.NewMemCacheClient(dc)
	return &Cluster{KC: kc, REST: rc, Clientset: cs, Dynamic: dyn, Metadata: md, APIExt: ext, Discovery: cached,
		Mapper: restmapper.NewDeferredDiscoveryRESTMapper(cached)}, nil
}

// ServerVersion asks the cluster for its version, within ctx.
func (c *Cluster) ServerVersion(ctx context.Context) (*version.Info, error) {
	raw, err := c.Clientset.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return nil, err
	}
	var v version.Info
	if err := jsonUnmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("kube: /version: %w", err)
	}
	return &v, nil
}

// Minor returns the numeric minor version ("32+" reads as 32).
func Minor(v *version.Info) int {
	m := strings.TrimRight(v.Minor, "+")
	n, err := strconv.Atoi(m)
	if err != nil {
		// Fall back to gitVersion v1.MINOR.PATCH.
		parts := strings.Split(strings.TrimPrefix(v.GitVersion, "v"), ".")
		if len(parts) >= 2 {
			n, _ = strconv.Atoi(parts[1])
		}
	}
	return n
}
