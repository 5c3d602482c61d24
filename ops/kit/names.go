package kit

// Names on a region's cluster that more than one feature looks for.
const (
	// KnativeServingName is the KnativeServing object (its function domains, its config).
	KnativeServingName = "knative-serving"
	// TraefikRelease is the region Traefik's Helm release, in the Knative Serving namespace.
	TraefikRelease = "traefik"
)
