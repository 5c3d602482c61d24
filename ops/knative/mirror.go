package knative

import "runr.dev/console/helm"

// knativeImages are Knative's image names its operator maps through spec.registry
// (container, caching Image and environment names) to their paths in a mirror.
var knativeImages = map[string]string{
	"migrate":             "knative.dev/pkg/apiextensions/storageversion/cmd/migrate",
	"cleanup":             "knative.dev/serving/pkg/cleanup/cmd/cleanup",
	"queue-proxy":         "knative.dev/serving/cmd/queue",
	"QUEUE_SIDECAR_IMAGE": "knative.dev/serving/cmd/queue",
}

// MirrorRegistry is a KnativeServing's spec.registry for a mirror: Knative's release
// manifests name images by digest, which a template cannot keep, so the mirror holds
// Serving's images of the release under its version's tag
// (<mirror>/gcr.io/knative-releases/knative.dev/serving/cmd/<name>:v<release>).
func MirrorRegistry(mirror, release string) map[string]any {
	if mirror == "" {
		return nil
	}
	base := mirror + "/gcr.io/knative-releases/"
	tag := ":v" + release
	override := map[string]any{}
	for name, path := range knativeImages {
		override[name] = base + path + tag
	}
	return map[string]any{"default": base + "knative.dev/serving/cmd/${NAME}" + tag, "override": override}
}

// QueueKey is the config-deployment key of the queue-proxy sidecar's image: Serving's
// controller reads it from there (the operator's spec.registry maps containers, their
// environment and caching Images, never this key), so a mirror sets it in spec.config.
const QueueKey = "queue-sidecar-image"

// QueueSidecarImage is the queue-proxy image of a spec.registry ("" without one).
func QueueSidecarImage(registry map[string]any) string {
	o, _ := registry["override"].(map[string]any)
	q, _ := o["queue-proxy"].(string)
	return q
}

// MirrorPatch is the KnativeServing patch that pulls Knative's images through a
// spec.registry (nil: their own registries).
func MirrorPatch(registry map[string]any) map[string]any {
	var reg, queue any
	if registry != nil {
		reg, queue = registry, QueueSidecarImage(registry)
	}
	return map[string]any{"spec": map[string]any{"registry": reg, "config": map[string]any{"deployment": map[string]any{QueueKey: queue}}}}
}

// The upstream charts of Traefik and the Knative Operator (design.md, "Which upstream charts").
var (
	ChartTraefik         = helm.ChartRef{Repo: "https://traefik.github.io/charts", Name: "traefik", Version: "40.3.0"}
	ChartKnativeOperator = helm.ChartRef{Repo: "https://knative.github.io/operator", Name: "knative-operator", Version: ""}
)
