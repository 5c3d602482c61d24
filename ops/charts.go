package ops

import "runr.dev/console/helm"

// The upstream charts the console installs (design.md, "Which upstream charts").
var (
	ChartTraefik         = helm.ChartRef{Repo: "https://traefik.github.io/charts", Name: "traefik", Version: "40.3.0"}
	ChartKnativeOperator = helm.ChartRef{Repo: "https://knative.github.io/operator", Name: "knative-operator", Version: ""}
)
