package admission

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"runr.dev/console/helm"
	"runr.dev/console/ops/kit"
	"runr.dev/console/store"
	"runr.dev/console/supplychain"
)

// ChartPolicyController is Sigstore's policy-controller chart (sigstore/helm-charts,
// tag policy-controller-0.10.6, appVersion 0.13.1).
var ChartPolicyController = helm.ChartRef{Repo: "https://sigstore.github.io/helm-charts", Name: "policy-controller", Version: "0.10.6"}

// Names of the admission policy on the cluster.
const (
	CosignNamespace         = "cosign-system"
	PolicyControllerRelease = "policy-controller"
	// PolicyIncludeLabel opts a namespace into the policy-controller's webhooks (the
	// chart's default webhook.namespaceSelector).
	PolicyIncludeLabel = "policy.sigstore.dev/include"
	// CIPCRD is the ClusterImagePolicy CRD (in the chart's templates: a helm uninstall
	// deletes it, and every ClusterImagePolicy with it).
	CIPCRD = "clusterimagepolicies.policy.sigstore.dev"
	// SystemPolicyName is the system images policy, shared by the regions of a cluster.
	SystemPolicyName = "runr-system-images"
)

// SystemImages are RunR's own images, which the system images policy always passes: the
// current namespace and, for pods that still run them, the earlier names (upgrading.md).
var SystemImages = []string{"ghcr.io/brf-tech/runr/**", "ghcr.io/brf-tech/**", "ghcr.io/runrsh/**"}

// gvkCIP is the ClusterImagePolicy kind the console writes.
var gvkCIP = schema.GroupVersionKind{Group: "policy.sigstore.dev", Version: "v1beta1", Kind: "ClusterImagePolicy"}

// RegionPolicyName is a region's ClusterImagePolicy.
func RegionPolicyName(region string) string { return "runr-region-" + region }

// PolicyControllerValues are the policy-controller chart's values: two webhook replicas
// (the chart's PodDisruptionBudget keeps one available, so a single replica could never
// be drained) and images no policy names admitted with a warning (the chart's default
// denies them, Knative's queue-proxy included).
func PolicyControllerValues() map[string]any {
	return map[string]any{
		"webhook": map[string]any{
			"replicaCount": 2,
			"configData":   map[string]any{"no-match-policy": "warn"},
		},
	}
}

// SystemImagesPolicy is the ClusterImagePolicy that passes RunR's own images.
func SystemImagesPolicy() map[string]any {
	var images []any
	for _, g := range SystemImages {
		images = append(images, map[string]any{"glob": g})
	}
	return map[string]any{
		"apiVersion": gvkCIP.GroupVersion().String(), "kind": gvkCIP.Kind,
		"metadata": map[string]any{"name": SystemPolicyName, "labels": kit.ToAnyMap(kit.ManagedLabels(nil))},
		"spec": map[string]any{
			"images":      images,
			"authorities": []any{map[string]any{"name": "runr-system", "static": map[string]any{"action": "pass"}}},
		},
	}
}

// RegionPolicy is a region's ClusterImagePolicy: its image globs must be signed by one
// of its keys, in its mode, for the workloads of its projects (labelled runr.dev/region:
// the regions of one cluster do not judge each other's projects).
func RegionPolicy(region string, sc store.SupplyChain) map[string]any {
	var images, authorities, match []any
	for _, g := range sc.Admission.Images {
		images = append(images, map[string]any{"glob": g})
	}
	for i, pemText := range sc.PublicKeys {
		name := fmt.Sprintf("key-%d", i+1)
		if k, err := supplychain.ParseKey(pemText); err == nil {
			name = "key-" + k.ID
		}
		authorities = append(authorities, map[string]any{"name": name,
			"key": map[string]any{"data": strings.TrimSpace(pemText), "hashAlgorithm": "sha256"}})
	}
	sel := map[string]any{"matchLabels": map[string]any{"runr.dev/region": region}}
	for _, gvr := range [][3]string{{"", "v1", "pods"}, {"apps", "v1", "deployments"}, {"apps", "v1", "replicasets"}} {
		match = append(match, map[string]any{"group": gvr[0], "version": gvr[1], "resource": gvr[2], "selector": sel})
	}
	mode := sc.Admission.Mode
	if mode == "" {
		mode = store.AdmissionEnforce
	}
	return map[string]any{
		"apiVersion": gvkCIP.GroupVersion().String(), "kind": gvkCIP.Kind,
		"metadata": map[string]any{"name": RegionPolicyName(region), "labels": kit.ToAnyMap(kit.ManagedLabels(map[string]string{"runr.dev/region": region}))},
		"spec":     map[string]any{"mode": string(mode), "images": images, "authorities": authorities, "match": match},
	}
}

// protectedImages are images a region's globs must not cover: RunR's (in each of its
// namespaces) and Knative's queue-proxy, which runs in every project pod. The
// policy-controller requires every policy that matches an image, so a glob over them
// would refuse them whatever the system images policy says.
var protectedImages = []string{
	"ghcr.io/brf-tech/runr/agent", "ghcr.io/brf-tech/other", "ghcr.io/runrsh/agent",
	"gcr.io/knative-releases/knative.dev/serving/cmd/queue",
}

// validGlobRe is the policy-controller's alphabet of globs (pkg/apis/glob).
var validGlobRe = regexp.MustCompile(`^[a-zA-Z0-9-_:/*.@]+$`)

// globRegexp compiles a glob as the policy-controller does: ** any characters, * any
// but /, the whole name.
func globRegexp(g string) (*regexp.Regexp, error) {
	if !validGlobRe.MatchString(g) {
		return nil, fmt.Errorf("%q is not a glob the policy-controller accepts (letters, digits, - _ : / * . @)", g)
	}
	re := strings.ReplaceAll(g, ".", `\.`)
	re = strings.ReplaceAll(re, "**", "#")
	re = strings.ReplaceAll(re, "*", "[^/]*")
	re = strings.ReplaceAll(re, "#", ".*")
	return regexp.Compile("^" + re + "$")
}

// GlobCovers reports whether a policy-controller glob matches an image name.
func GlobCovers(g, image string) bool {
	re, err := globRegexp(g)
	return err == nil && re.MatchString(image)
}

// validateImageGlobs checks a region's admission globs, or says what is wrong.
func validateImageGlobs(globs []string) string {
	for _, g := range globs {
		if _, err := globRegexp(g); err != nil {
			return err.Error()
		}
		for _, img := range protectedImages {
			if GlobCovers(g, img) {
				return fmt.Sprintf("%q also covers %s: the policy-controller requires every policy that matches an image, so RunR's images and Knative's queue-proxy would be refused. Name your images' registry or repositories, e.g. registry.example.com/acme/**.", g, img)
			}
		}
	}
	return ""
}

// defaultImageGlobs are the globs a region's policy starts with: its registry's images.
func defaultImageGlobs(r *store.Region) []string {
	if r.RegistryAddress != "" {
		return []string{strings.TrimSuffix(r.RegistryAddress, "/") + "/**"}
	}
	return nil
}

// cleanList returns the strings trimmed, without empty ones and duplicates, in their order.
func cleanList(xs []string) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, x := range xs {
		x = strings.TrimSpace(x)
		if x != "" && !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
