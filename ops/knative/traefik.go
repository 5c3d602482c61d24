package knative

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/release"
	authzv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/engine"
	"runr.dev/console/helm"
	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/store"
)

// Traefik's IngressClass: traefik, or traefik-knative when another controller owns traefik.
const (
	TraefikClass         = "traefik"
	TraefikFallbackClass = "traefik-knative"
)

// TraefikTimeout is the entry points' read and write timeout for the regions of one
// cluster: the longest request_timeout plus 10 seconds, at least 120 seconds.
func TraefikTimeout(regions []store.Region) int {
	longest := 0
	for _, r := range regions {
		longest = max(longest, r.Settings.V.RequestTimeout)
	}
	return max(longest+10, 120)
}

// IngressClassOf picks the IngressClass: traefik, unless an IngressClass traefik belongs
// to another Traefik (k3s's own, say), which is then left alone.
func IngressClassOf(ctx context.Context, c *kube.Cluster, servingNS string) (string, error) {
	ic, err := c.Clientset.NetworkingV1().IngressClasses().Get(ctx, TraefikClass, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return TraefikClass, nil
	}
	if err != nil {
		return "", fmt.Errorf("read IngressClass %s: %w", TraefikClass, err)
	}
	if ic.Annotations["meta.helm.sh/release-name"] == kit.TraefikRelease && ic.Annotations["meta.helm.sh/release-namespace"] == servingNS {
		return TraefikClass, nil
	}
	return TraefikFallbackClass, nil
}

// SplitImage splits an image reference into its registry, repository and tag.
func SplitImage(img string) (registry, repo, tag string) {
	tag = ""
	if i := strings.LastIndex(img, ":"); i > strings.LastIndex(img, "/") {
		img, tag = img[:i], img[i+1:]
	}
	registry = "docker.io"
	if i := strings.Index(img, "/"); i > 0 && strings.ContainsAny(img[:i], ".:") {
		registry, img = img[:i], img[i+1:]
	}
	return registry, img, tag
}

// TraefikPodSelector selects the region Traefik's pods by the labels the traefik chart
// puts on them: app.kubernetes.io/instance is <release>-<namespace> (traefik 40.3.0,
// templates/_helpers.tpl, "traefik.instance-name").
func TraefikPodSelector(ns string) string {
	return "app.kubernetes.io/name=traefik,app.kubernetes.io/instance=" + kit.TraefikRelease + "-" + ns
}

// TrustedIPs is the union of the ingress_trusted_ips of the cluster's regions.
func TrustedIPs(regions []store.Region) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range regions {
		for _, ip := range r.Settings.V.IngressTrustedIPs {
			if !seen[ip] {
				seen[ip] = true
				out = append(out, ip)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Ways the region Traefik is reached (the Serving install's ingress_mode).
const (
	// IngressLoadBalancer is a Service of type LoadBalancer: the cluster gives it an address.
	IngressLoadBalancer = "load_balancer"
	// IngressHostNetwork is a DaemonSet on the nodes' ports 80 and 443 behind a ClusterIP
	// Service: for clusters without a load-balancer implementation (RunOS clusters, bare metal).
	IngressHostNetwork = "host_network"
)

// RegionTraefikValues are the region Traefik's Helm values for the cluster's regions.
func (s *Service) RegionTraefikValues(ns, class, mode string, regions []store.Region) map[string]any {
	return TraefikValues(TraefikOptions{Namespace: ns, Image: s.Cfg.TraefikImage, Class: class, Timeout: TraefikTimeout(regions),
		TrustedIPs: TrustedIPs(regions), HostNetwork: mode == IngressHostNetwork})
}

// ReleaseIngressMode reads how a deployed Traefik release is reached, from its own values.
func ReleaseIngressMode(rel *release.Release) string {
	if rel != nil && rel.Config["hostNetwork"] == true {
		return IngressHostNetwork
	}
	return IngressLoadBalancer
}

// ErrNoLoadBalancer is the Serving install's answer to a cluster that gives Traefik's
// Service no LoadBalancer address.
var ErrNoLoadBalancer = errors.New("the cluster gave Traefik's LoadBalancer Service no address")

// installTraefik installs (or upgrades) the region Traefik, checks that it may serve
// Knative's ingresses, and returns its external address.
func (s *Service) installTraefik(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, r *store.Region, mode string) (string, error) {
	ns := r.ServingNamespace
	class, err := IngressClassOf(ctx, c, ns)
	if err != nil {
		return "", err
	}
	if class != TraefikClass {
		jc.Warnf("IngressClass %s belongs to another controller: the region's Traefik serves %s and leaves it alone", TraefikClass, class)
	}
	prev, err := helm.Status(c, ns, kit.TraefikRelease)
	if err != nil {
		return "", err
	}
	if mode == "" {
		mode = ReleaseIngressMode(prev)
	}
	regions, err := s.Store.RegionsOnCluster(ctx, r.ClusterKey)
	if err != nil {
		return "", err
	}
	regions = append(regions, *r)
	timeout := TraefikTimeout(regions)
	if _, err := kit.EnsureNamespace(ctx, jc, c, ns, nil); err != nil {
		return "", err
	}
	rel, err := s.HelmApply(ctx, jc, c, kit.Release{Namespace: ns, Name: kit.TraefikRelease, Chart: ChartTraefik, Values: s.RegionTraefikValues(ns, class, mode, regions)})
	if err != nil {
		return "", err
	}
	if err := kit.WaitRelease(ctx, jc, c, rel, engine.WaitOpts{}); err != nil {
		return "", err
	}
	if missing, err := TraefikKnativeAccess(ctx, c, ns); err != nil {
		return "", err
	} else if missing != "" {
		return "", errors.New(missing)
	}
	jc.Logf("Traefik's service account may read Knative's ingresses and update their status")
	addr, err := s.traefikAddress(ctx, jc, c, ns, mode)
	if err != nil {
		return "", err
	}
	how := "its LoadBalancer Service"
	if mode == IngressHostNetwork {
		how = "the host network of every node (ports 80 and 443)"
	}
	jc.Note("Traefik %s serves IngressClass %s on %s, at %s (entry point timeouts %d s)", ChartTraefik.Version, class, how, addr, timeout)
	return addr, nil
}

// traefikAddress waits for the region Traefik's external address: its LoadBalancer
// address, within a short named wait, or a node's address on the host network.
func (s *Service) traefikAddress(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, ns, mode string) (string, error) {
	var addr string
	if mode == IngressHostNetwork {
		err := jc.Wait(ctx, "a node address of Traefik's DaemonSet "+ns+"/"+kit.TraefikRelease, engine.WaitOpts{}, HostNetworkAddress(c, ns, &addr))
		return addr, err
	}
	err := jc.Wait(ctx, "LoadBalancer address of "+ns+"/"+kit.TraefikRelease, engine.WaitOpts{Timeout: s.Cfg.LoadBalancerWait,
		Hint: "install Serving with host-network Traefik (ingress_mode host_network) when the cluster has no load-balancer implementation"}, c.LoadBalancerAddress(ns, kit.TraefikRelease, &addr))
	if err != nil && ctx.Err() == nil {
		return "", fmt.Errorf("%w within %s: the cluster has no load-balancer implementation (or, like RunOS clusters, none is meant to exist). "+
			"Install Serving again with host-network Traefik (ingress_mode host_network): it then runs on ports 80 and 443 of every node, "+
			"and the region's external address is a node's", ErrNoLoadBalancer, s.Cfg.LoadBalancerWait)
	}
	return addr, err
}

// TraefikKnativeAccess asks the cluster (SubjectAccessReviews) whether the region
// Traefik's service account may read Knative's ingresses and update their status; it
// returns what is missing, in a sentence ("" when nothing is).
func TraefikKnativeAccess(ctx context.Context, c *kube.Cluster, ns string) (string, error) {
	const group = "networking.internal.knative.dev"
	user := "system:serviceaccount:" + ns + ":" + kit.TraefikRelease
	var missing []string
	for _, a := range []authzv1.ResourceAttributes{
		{Group: group, Resource: "ingresses", Verb: "get"},
		{Group: group, Resource: "ingresses", Verb: "list"},
		{Group: group, Resource: "ingresses", Verb: "watch"},
		{Group: group, Resource: "ingresses", Subresource: "status", Verb: "update"},
	} {
		a := a
		sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{User: user,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}, ResourceAttributes: &a}}
		res, err := c.Clientset.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			return "", fmt.Errorf("ask whether Traefik may %s Knative ingresses: %w", a.Verb, err)
		}
		if !res.Status.Allowed {
			what := a.Verb + " ingresses"
			if a.Subresource != "" {
				what = a.Verb + " ingresses/" + a.Subresource
			}
			missing = append(missing, what)
		}
	}
	if len(missing) == 0 {
		return "", nil
	}
	return fmt.Sprintf("Traefik's service account %s may not %s of %s: no Knative Service gets a route "+
		"(the traefik chart grants this only with providers.knative.enabled and experimental.knative)", user, strings.Join(missing, ", "), group), nil
}

// UpdateTraefikTimeouts moves the region Traefik's entry point timeouts to the longest
// request_timeout of the cluster's regions (a Helm upgrade; its pods roll once).
func (s *Service) UpdateTraefikTimeouts(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, r *store.Region) error {
	rel, err := helm.Status(c, r.ServingNamespace, kit.TraefikRelease)
	if err != nil {
		return err
	}
	if rel == nil {
		jc.Note("No region Traefik on the cluster yet: the timeouts apply when Serving is installed")
		return engine.ErrSkip
	}
	regions, err := s.Store.RegionsOnCluster(ctx, r.ClusterKey)
	if err != nil {
		return err
	}
	timeout := TraefikTimeout(regions)
	class, err := IngressClassOf(ctx, c, r.ServingNamespace)
	if err != nil {
		return err
	}
	nr, err := s.HelmApply(ctx, jc, c, kit.Release{Namespace: r.ServingNamespace, Name: kit.TraefikRelease, Chart: ChartTraefik,
		Values: s.RegionTraefikValues(r.ServingNamespace, class, ReleaseIngressMode(rel), regions)})
	if err != nil {
		return err
	}
	if err := kit.WaitRelease(ctx, jc, c, nr, engine.WaitOpts{}); err != nil {
		return err
	}
	jc.Note("Traefik's entry points web and websecure time out after %d s", timeout)
	return nil
}

// HostNetworkAddress waits for a ready pod of the region Traefik's host-network
// DaemonSet and stores the address of its node in addr: the node's external address, else
// its internal one (the first node by name, so the answer is stable).
func HostNetworkAddress(c *kube.Cluster, ns string, addr *string) kube.Cond {
	return func(ctx context.Context) (bool, string, error) {
		a, err := ReadHostNetworkAddress(ctx, c, ns)
		if err != nil || a == "" {
			return false, "no ready Traefik pod on a node with an address yet", err
		}
		*addr = a
		return true, a, nil
	}
}

// ReadHostNetworkAddress is the address of a node running the host-network Traefik.
func ReadHostNetworkAddress(ctx context.Context, c *kube.Cluster, ns string) (string, error) {
	pods, err := c.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: TraefikPodSelector(ns)})
	if err != nil {
		return "", fmt.Errorf("list Traefik's pods in %s: %w", ns, err)
	}
	var nodes []string
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" && kube.PodReady(&p) {
			nodes = append(nodes, p.Spec.NodeName)
		}
	}
	sort.Strings(nodes)
	for _, name := range nodes {
		n, err := c.Clientset.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("read node %s: %w", name, err)
		}
		if a := kube.NodeAddress(n); a != "" {
			return a, nil
		}
	}
	return "", nil
}
