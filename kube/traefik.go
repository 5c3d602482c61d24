package kube

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/store"
)

// TraefikRelease is the region Traefik's Helm release, in the Knative Serving namespace.
const TraefikRelease = "traefik"

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

// traefikClass picks the IngressClass: traefik, unless an IngressClass traefik belongs
// to another Traefik (k3s's own, say), which is then left alone.
func (c *Cluster) traefikClass(ctx context.Context, servingNS string) (string, error) {
	ic, err := c.Clientset.NetworkingV1().IngressClasses().Get(ctx, TraefikClass, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return TraefikClass, nil
	}
	if err != nil {
		return "", fmt.Errorf("read IngressClass %s: %w", TraefikClass, err)
	}
	if ic.Annotations["meta.helm.sh/release-name"] == TraefikRelease && ic.Annotations["meta.helm.sh/release-namespace"] == servingNS {
		return TraefikClass, nil
	}
	return TraefikFallbackClass, nil
}

func splitImage(img string) (registry, repo, tag string) {
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

// traefikValues are the region Traefik's Helm values for the cluster's regions.
func (s *Service) traefikValues(class string, regions []store.Region) map[string]any {
	return TraefikValues(TraefikOptions{Image: s.Cfg.TraefikImage, Class: class, Timeout: TraefikTimeout(regions), TrustedIPs: TrustedIPs(regions)})
}

// installTraefik installs (or upgrades) the region Traefik and waits for its address.
func (s *Service) installTraefik(ctx context.Context, jc *JobContext, c *Cluster, r *store.Region) (string, error) {
	ns := r.ServingNamespace
	class, err := c.traefikClass(ctx, ns)
	if err != nil {
		return "", err
	}
	if class != TraefikClass {
		jc.Warnf("IngressClass %s belongs to another controller: the region's Traefik serves %s and leaves it alone", TraefikClass, class)
	}
	regions, err := s.Store.RegionsOnCluster(ctx, r.ClusterKey)
	if err != nil {
		return "", err
	}
	regions = append(regions, *r)
	timeout := TraefikTimeout(regions)
	if _, err := c.EnsureNamespace(ctx, ns, nil); err != nil {
		return "", err
	}
	rel, err := s.HelmApply(ctx, jc, c, Release{Namespace: ns, Name: TraefikRelease, Chart: ChartTraefik, Values: s.traefikValues(class, regions)})
	if err != nil {
		return "", err
	}
	if err := jc.WaitRelease(ctx, c, rel.Manifest, WaitOpts{Hint: "the cluster needs a load-balancer implementation that gives the Service an external IP address or hostname"}); err != nil {
		return "", err
	}
	var addr string
	if err := jc.Wait(ctx, "LoadBalancer address of "+ns+"/"+TraefikRelease, WaitOpts{}, c.LoadBalancerAddress(ns, TraefikRelease, &addr)); err != nil {
		return "", err
	}
	jc.Note("Traefik %s serves IngressClass %s at %s (entry point timeouts %d s)", ChartTraefik.Version, class, addr, timeout)
	return addr, nil
}

// UpdateTraefikTimeouts moves the region Traefik's entry point timeouts to the longest
// request_timeout of the cluster's regions (a Helm upgrade; its pods roll once).
func (s *Service) updateTraefikTimeouts(ctx context.Context, jc *JobContext, c *Cluster, r *store.Region) error {
	rel, err := HelmStatus(c, r.ServingNamespace, TraefikRelease)
	if err != nil {
		return err
	}
	if rel == nil {
		jc.Note("No region Traefik on the cluster yet: the timeouts apply when Serving is installed")
		return ErrSkip
	}
	regions, err := s.Store.RegionsOnCluster(ctx, r.ClusterKey)
	if err != nil {
		return err
	}
	timeout := TraefikTimeout(regions)
	class, err := c.traefikClass(ctx, r.ServingNamespace)
	if err != nil {
		return err
	}
	if _, err := s.HelmApply(ctx, jc, c, Release{Namespace: r.ServingNamespace, Name: TraefikRelease, Chart: ChartTraefik, Values: s.traefikValues(class, regions)}); err != nil {
		return err
	}
	if err := jc.Wait(ctx, "Deployment "+r.ServingNamespace+"/"+TraefikRelease+" to roll out", WaitOpts{}, c.DeploymentAvailable(r.ServingNamespace, TraefikRelease)); err != nil {
		return err
	}
	jc.Note("Traefik's entry points web and websecure time out after %d s", timeout)
	return nil
}
