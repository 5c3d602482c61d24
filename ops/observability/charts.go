package observability

import "runr.dev/console/helm"

// The upstream charts of the observability stack (design.md, "Which upstream charts").
var (
	// The spec names kube-prometheus-stack without a version; this is the one RunR pins.
	ChartPrometheus = helm.ChartRef{Repo: "https://prometheus-community.github.io/helm-charts", Name: "kube-prometheus-stack", Version: "79.5.0"}
	// loki-stack's last release.
	ChartLoki          = helm.ChartRef{Repo: "https://grafana.github.io/helm-charts", Name: "loki-stack", Version: "2.10.2"}
	ChartOtelCollector = helm.ChartRef{Repo: "https://open-telemetry.github.io/opentelemetry-helm-charts", Name: "opentelemetry-collector", Version: "0.176.0"}
	ChartTempo         = helm.ChartRef{Repo: "https://grafana-community.github.io/helm-charts", Name: "tempo", Version: "3.2.0"}
)
