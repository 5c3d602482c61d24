// Package config reads the console's settings from the environment.
package config

import (
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/name"
)

// Version is the console's version: main sets it from its build stamp before reading the
// configuration. The images of the console's own that it deploys are tagged with it.
var Version = "dev"

// ImageRepository is where the console's own images are published (make images, README).
const ImageRepository = "ghcr.io/brf-tech/runr"

// ImageTag is the image tag of a version: the version without a leading "v".
func ImageTag(version string) string { return strings.TrimPrefix(version, "v") }

// OwnImage is the reference of one of the console's own images (console, agent) at a
// version.
func OwnImage(name, version string) string {
	return ImageRepository + "/" + name + ":" + ImageTag(version)
}

// Config is every setting of the console, read from the environment.
type Config struct {
	DatabaseURL string // DATABASE_URL
	AppKey      string // RUNR_APP_KEY
	Addr        string // RUNR_ADDR, default :8080
	// AppURL is the console's public URL (APP_URL / RUNR_APP_URL); the agent's last fallback.
	AppURL string
	// AgentWSURL is RUNR_AGENT_WS_URL, the agent address for every region without its own.
	AgentWSURL string
	// GatewayURL is the in-cluster gateway, used when a region is the console's own cluster.
	GatewayURL string
	// OwnClusterUID is the kube-system namespace UID of the cluster the console runs in
	// (RUNR_CLUSTER_UID, else read at the start through the pod's service account; "" when
	// it runs outside a cluster).
	OwnClusterUID string
	// ConsoleTLSSecret is the console's own certificate, namespace/name of a TLS Secret on
	// its cluster (RUNR_TLS_SECRET; the chart sets it from ingress.tls): Function TLS offers
	// it to the regions on that cluster.
	ConsoleTLSSecret string
	// ReplayIngestURL (RUNR_REPLAY_INGEST_URL, chart observability.replay.ingestUrl) and
	// WorkflowsPublicAPIURL (WORKFLOWS_PUBLIC_API_URL) are addresses RunR hands out whose
	// hosts the internal API also answers for.
	ReplayIngestURL       string
	WorkflowsPublicAPIURL string

	// MinK8sMinor is the oldest Kubernetes minor accepted (RUNR_MIN_K8S_MINOR, default 30).
	MinK8sMinor int
	// ChartMirror is one Helm repository that serves every chart (RUNR_CHART_MIRROR).
	ChartMirror string
	// ServingCRDsURL is the template of the Knative Serving CRDs' address (%s is the version).
	ServingCRDsURL string
	// StorageTestTimeout is how long a test volume may take to bind (default 60 s).
	StorageTestTimeout time.Duration
	// InstallTimeout bounds each wait of an install (default 5 min).
	InstallTimeout time.Duration
	// GPUDiscoveryTimeout is RUNR_GPU_DISCOVERY_TIMEOUT: how long a GPU install waits for
	// node-feature-discovery, the GPUs to be advertised and the ClusterPolicy to be ready
	// (default 30 min: on nodes without drivers the operator's driver containers build
	// the kernel module first).
	GPUDiscoveryTimeout time.Duration
	// LoadBalancerWait is how long the Serving install waits for Traefik's LoadBalancer
	// address before it says the cluster has no load-balancer implementation and offers
	// host-network Traefik (default 3 min: cloud load balancers take a minute or two).
	LoadBalancerWait time.Duration
	// LocalClusterHost is RUNR_LOCAL_CLUSTER_HOST: when set, a kubeconfig on 127.0.0.1 or
	// localhost that cannot be reached that way is tried once more on this host (e.g.
	// host.docker.internal for a console in a container), TLS verified as configured.
	// Empty (the default): no retry.
	LocalClusterHost string

	TraefikImage string // RUNR_TRAEFIK_IMAGE
	// AgentImage runs every program the console deploys of its own (RUNR_AGENT_IMAGE;
	// default the agent image at the console's version): the runr-agent, the node mirror,
	// the pre-pull, the domain alias proxy, the KVM probe, the gVisor installer and
	// containerd's restart.
	AgentImage string
	// ResponderImage runs the status responder (RUNR_RESPONDER_IMAGE; default AgentImage).
	ResponderImage string
	// PrepullImages are the images every node pulls ahead of the first deploys
	// (RUNR_PREPULL_IMAGES, comma-separated).
	PrepullImages []string
	RedisImage    string // RUNR_REDIS_IMAGE
	// ImageMoves are the earlier prefixes of the console's own images (RUNR_IMAGE_MOVES):
	// `runr reconcile --step image-registry` moves what still references them.
	ImageMoves []ImageMove
	// DemoImage runs the demo projects' Python programs (RUNR_DEMO_IMAGE, a python:3.13-alpine).
	DemoImage string
	// DemoSMTPImage is the demo's SMTP catcher (RUNR_DEMO_SMTP_IMAGE, Mailpit).
	DemoSMTPImage string

	// QuotaCPU and QuotaMemoryGiB are the organisation ceiling (0: none).
	QuotaCPU       float64
	QuotaMemoryGiB float64

	// Tenancy is RUNR_TENANCY=on: the Tenancy module (tenants and their users, tenant-owned
	// regions, assignments with quotas, region modes). Off, the console has one organisation.
	Tenancy bool

	// Billing is RUNR_BILLING=on: the Billing module (region billing types and prices,
	// metering, charges, closed bills, the billing API and signed events). Off, no billing
	// route, field or tab exists.
	Billing bool
	// BillingWebhookURL and BillingWebhookSecret are the chart's billing.webhookUrl and
	// billing.webhookSecret (RUNR_BILLING_WEBHOOK_URL, RUNR_BILLING_WEBHOOK_SECRET): set,
	// they are the webhook and Settings → Billing shows them read-only.
	BillingWebhookURL    string
	BillingWebhookSecret string
	// BillingInterval is how often bills of ended periods close and due billing events
	// are sent (RUNR_BILLING_INTERVAL, default 30s).
	BillingInterval time.Duration

	// Branding is the white-label look (RUNR_BRANDING_*).
	Branding Branding
	// TracingRetentionHours is Tempo's retention (default 72).
	TracingRetentionHours int
	// TracingOff is RUNR_TRACING_DEFAULT_MODE=off (the chart's
	// observability.tracing.defaultMode): a Serving install and reconcile leave the tracing
	// backend out (default on).
	TracingOff bool
	// TracingCollectorImage and TracingTempoImage replace the tracing backend's images
	// (observability.tracing.collectorImage / tempoImage, e.g. the same versions in a
	// registry of your own; empty: this release's).
	TracingCollectorImage, TracingTempoImage string
	// TracingCollectorChartVersion and TracingTempoChartVersion pin the backend's charts
	// (observability.tracing.collectorChartVersion / tempoChartVersion; empty: this
	// release's).
	TracingCollectorChartVersion, TracingTempoChartVersion string

	// DNSResolver is the host:port of the DNS server the status check asks ("" = system).
	DNSResolver string
	// StatusInterval is how often every region is checked (default 1 min).
	StatusInterval time.Duration
	// StatusConcurrency bounds the clusters looked at at once (default 256): a look
	// mostly waits on the network, and a dead cluster holds its slot until its deadline.
	StatusConcurrency int
	// StatusTimeout is the per-region deadline of a check (default 10 s).
	StatusTimeout time.Duration
	// StatusConnectTimeout is how long a check waits for the API server's connection and
	// TLS handshake (default 2 s) before it calls the cluster unreachable; the questions
	// after it have the rest of StatusTimeout.
	StatusConnectTimeout time.Duration

	// ShutdownDelay is how long a stopping console keeps serving with /readyz failing
	// (RUNR_SHUTDOWN_DELAY, default 0; the chart sets 5 s): a Service or load balancer
	// stops sending it requests before it closes its listener.
	ShutdownDelay time.Duration
	// Workers is the number of job runner goroutines (default 16; most of a job is waiting).
	Workers int
	// SecureCookies forces the Secure flag; it is also set for requests that arrive over TLS.
	SecureCookies bool
	// LogLevel is debug, info, warn or error.
	LogLevel string

	// MetricsAddr is RUNR_METRICS_ADDR, the address of a separate listener that serves
	// only /metrics (e.g. 127.0.0.1:9090); "" serves no metrics. The console's own port
	// never serves them.
	MetricsAddr string
	// AllowLoopbackClusters is RUNR_ALLOW_LOOPBACK_CLUSTERS=true: kubeconfigs may point at
	// loopback addresses (127.0.0.0/8, ::1). Off by default, on in the tests, the sandbox
	// and the benchmarks, whose simulated clusters listen on 127.0.0.1. Link-local,
	// unspecified, multicast and broadcast addresses are refused whatever it says.
	AllowLoopbackClusters bool
	// PreviousAppKeys is RUNR_PREVIOUS_APP_KEYS, comma-separated: keys the console still
	// reads secrets with (during a key rotation); it writes with RUNR_APP_KEY only.
	PreviousAppKeys []string
	// TrustedProxies is RUNR_TRUSTED_PROXIES, comma-separated addresses and CIDR ranges of
	// the reverse proxies in front of the console: only a request from one of them has its
	// X-Forwarded-Host, X-Forwarded-Proto and X-Forwarded-For believed. Empty: nobody's.
	TrustedProxies []netip.Prefix
	// MaxConnections is RUNR_MAX_CONNECTIONS: open client connections, WebSockets included
	// (0: three quarters of the file descriptors, at most 16384). MaxConnectionsPerAddress
	// is RUNR_MAX_CONNECTIONS_PER_ADDRESS: of one client address (0: 256; trusted proxies
	// are not limited).
	MaxConnections, MaxConnectionsPerAddress int
	// SocketsPerUser is RUNR_SOCKETS_PER_USER: WebSockets one user holds open at once over
	// all their sessions and tokens (default DefaultSocketsPerUser).
	SocketsPerUser int
}

// DefaultSocketsPerUser is the default of SocketsPerUser: a page holds two (its job or
// region feed and the banners), so ten pages open at once.
const DefaultSocketsPerUser = 20

// TrustsProxy reports whether addr is one of the trusted proxies.
func (c *Config) TrustsProxy(addr netip.Addr) bool {
	for _, p := range c.TrustedProxies {
		if p.Contains(addr.Unmap()) {
			return true
		}
	}
	return false
}

// parsePrefixes reads addresses and CIDR ranges (an address is a range of one).
func parsePrefixes(name string, values []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, v := range values {
		p, err := netip.ParsePrefix(v)
		if err != nil {
			a, aerr := netip.ParseAddr(v)
			if aerr != nil {
				return nil, fmt.Errorf("%s: %q is neither an address nor a CIDR range", name, v)
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// FromEnv reads the configuration from the environment, with defaults.
func FromEnv() (*Config, error) {
	c := &Config{
		DatabaseURL:           os.Getenv("DATABASE_URL"),
		AppKey:                os.Getenv("RUNR_APP_KEY"),
		Addr:                  env("RUNR_ADDR", ":8080"),
		AppURL:                env("RUNR_APP_URL", os.Getenv("APP_URL")),
		AgentWSURL:            os.Getenv("RUNR_AGENT_WS_URL"),
		GatewayURL:            os.Getenv("RUNR_GATEWAY_URL"),
		OwnClusterUID:         strings.TrimSpace(os.Getenv("RUNR_CLUSTER_UID")),
		ConsoleTLSSecret:      strings.TrimSpace(os.Getenv("RUNR_TLS_SECRET")),
		ReplayIngestURL:       os.Getenv("RUNR_REPLAY_INGEST_URL"),
		WorkflowsPublicAPIURL: os.Getenv("WORKFLOWS_PUBLIC_API_URL"),
		ChartMirror:           strings.TrimRight(os.Getenv("RUNR_CHART_MIRROR"), "/"),
		ServingCRDsURL:        os.Getenv("RUNR_SERVING_CRDS_URL"),
		LocalClusterHost:      os.Getenv("RUNR_LOCAL_CLUSTER_HOST"),
		TraefikImage:          env("RUNR_TRAEFIK_IMAGE", "ghcr.io/brf-tech/runr/reqs/traefik:v3.7.4"),
		AgentImage:            env("RUNR_AGENT_IMAGE", OwnImage("agent", Version)),
		RedisImage:            env("RUNR_REDIS_IMAGE", "ghcr.io/brf-tech/runr/reqs/redis:7.4"),
		DemoImage:             env("RUNR_DEMO_IMAGE", "ghcr.io/brf-tech/runr/reqs/python:3.13-alpine"),
		DemoSMTPImage:         env("RUNR_DEMO_SMTP_IMAGE", "ghcr.io/brf-tech/runr/reqs/mailpit:v1.21"),
		DNSResolver:           os.Getenv("RUNR_DNS_RESOLVER"),
		SecureCookies:         os.Getenv("RUNR_SECURE_COOKIES") == "1",
		LogLevel:              env("RUNR_LOG_LEVEL", "info"),
		MetricsAddr:           os.Getenv("RUNR_METRICS_ADDR"),
	}
	c.ResponderImage = env("RUNR_RESPONDER_IMAGE", c.AgentImage)
	// The function wrapper is RunR's, released with the console at the same version; the
	// Kaniko executor builds the functions' images.
	c.PrepullImages = list(env("RUNR_PREPULL_IMAGES", OwnImage("wrapper", Version)+",gcr.io/kaniko-project/executor:v1.23.2"))
	c.PreviousAppKeys = list(os.Getenv("RUNR_PREVIOUS_APP_KEYS"))
	var err error
	if c.TrustedProxies, err = parsePrefixes("RUNR_TRUSTED_PROXIES", list(os.Getenv("RUNR_TRUSTED_PROXIES"))); err != nil {
		return nil, err
	}
	if c.AllowLoopbackClusters, err = boolEnv("RUNR_ALLOW_LOOPBACK_CLUSTERS"); err != nil {
		return nil, err
	}
	// KNATIVE_MIN_K8S_MINOR is the spec's name for the same setting.
	if c.MinK8sMinor, err = intEnv("RUNR_MIN_K8S_MINOR", intOr(os.Getenv("KNATIVE_MIN_K8S_MINOR"), 30)); err != nil {
		return nil, err
	}
	if c.StorageTestTimeout, err = durEnv("RUNR_STORAGE_TEST_TIMEOUT", 60*time.Second); err != nil {
		return nil, err
	}
	if c.InstallTimeout, err = durEnv("RUNR_INSTALL_TIMEOUT", 5*time.Minute); err != nil {
		return nil, err
	}
	if c.GPUDiscoveryTimeout, err = durEnv("RUNR_GPU_DISCOVERY_TIMEOUT", 30*time.Minute); err != nil {
		return nil, err
	}
	if c.LoadBalancerWait, err = durEnv("RUNR_LOAD_BALANCER_WAIT", 3*time.Minute); err != nil {
		return nil, err
	}
	if c.StatusInterval, err = durEnv("RUNR_STATUS_INTERVAL", time.Minute); err != nil {
		return nil, err
	}
	if c.ShutdownDelay, err = durEnv("RUNR_SHUTDOWN_DELAY", 0); err != nil {
		return nil, err
	}
	if c.StatusTimeout, err = durEnv("RUNR_STATUS_TIMEOUT", 10*time.Second); err != nil {
		return nil, err
	}
	if c.StatusConnectTimeout, err = durEnv("RUNR_STATUS_CONNECT_TIMEOUT", 2*time.Second); err != nil {
		return nil, err
	}
	// Checks wait on the network, not on the CPU: many run at once.
	if c.StatusConcurrency, err = intEnv("RUNR_STATUS_CONCURRENCY", 256); err != nil {
		return nil, err
	}
	if c.MaxConnections, err = intEnv("RUNR_MAX_CONNECTIONS", 0); err != nil || c.MaxConnections < 0 {
		return nil, fmt.Errorf("config: RUNR_MAX_CONNECTIONS must be a whole number, 0 or more (%v)", err)
	}
	if c.MaxConnectionsPerAddress, err = intEnv("RUNR_MAX_CONNECTIONS_PER_ADDRESS", 0); err != nil || c.MaxConnectionsPerAddress < 0 {
		return nil, fmt.Errorf("config: RUNR_MAX_CONNECTIONS_PER_ADDRESS must be a whole number, 0 or more (%v)", err)
	}
	if c.SocketsPerUser, err = intEnv("RUNR_SOCKETS_PER_USER", DefaultSocketsPerUser); err != nil || c.SocketsPerUser < 1 {
		return nil, fmt.Errorf("config: RUNR_SOCKETS_PER_USER must be a whole number, 1 or more (%v)", err)
	}
	if c.Workers, err = intEnv("RUNR_WORKERS", 16); err != nil {
		return nil, err
	}
	if c.TracingRetentionHours, err = intEnv("RUNR_TRACING_RETENTION_HOURS", 72); err != nil {
		return nil, err
	}
	switch m := strings.ToLower(strings.TrimSpace(os.Getenv("RUNR_TRACING_DEFAULT_MODE"))); m {
	case "", "on":
	case "off":
		c.TracingOff = true
	default:
		return nil, fmt.Errorf("config: RUNR_TRACING_DEFAULT_MODE=%q is not on or off", m)
	}
	if err := c.loadTracingBackend(); err != nil {
		return nil, err
	}
	if c.ImageMoves, err = loadImageMoves(); err != nil {
		return nil, err
	}
	if c.Branding, err = loadBranding(); err != nil {
		return nil, err
	}
	if c.Tenancy, err = onOff("RUNR_TENANCY"); err != nil {
		return nil, err
	}
	if c.Billing, err = onOff("RUNR_BILLING"); err != nil {
		return nil, err
	}
	if c.BillingInterval, err = durEnv("RUNR_BILLING_INTERVAL", 30*time.Second); err != nil {
		return nil, err
	}
	c.BillingWebhookURL, c.BillingWebhookSecret = os.Getenv("RUNR_BILLING_WEBHOOK_URL"), os.Getenv("RUNR_BILLING_WEBHOOK_SECRET")
	if c.BillingWebhookURL != "" && len(c.BillingWebhookSecret) < 16 {
		return nil, fmt.Errorf("config: RUNR_BILLING_WEBHOOK_URL is set: RUNR_BILLING_WEBHOOK_SECRET (billing.webhookSecret) signs its events and needs at least 16 characters")
	}
	if c.QuotaCPU, err = floatEnv("RUNR_QUOTA_CPU", 0); err != nil {
		return nil, err
	}
	if c.QuotaMemoryGiB, err = floatEnv("RUNR_QUOTA_MEMORY_GIB", 0); err != nil {
		return nil, err
	}
	return c, nil
}

// list splits a comma-separated setting, leaving out empty items.
func list(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func env(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func boolEnv(k string) (bool, error) {
	v := os.Getenv(k)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("config: %s=%q is not true or false", k, v)
	}
	return b, nil
}

// onOff reads a module switch: on/off (also true/false, 1/0); unset is off.
func onOff(k string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(os.Getenv(k))) {
	case "", "off", "false", "0", "no":
		return false, nil
	case "on", "true", "1", "yes":
		return true, nil
	}
	return false, fmt.Errorf("config: %s=%q is not on or off", k, os.Getenv(k))
}

func intOr(s string, def int) int {
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	return def
}

func intEnv(k string, def int) (int, error) {
	v := os.Getenv(k)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("config: %s=%q is not a whole number", k, v)
	}
	return n, nil
}

func floatEnv(k string, def float64) (float64, error) {
	v := os.Getenv(k)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, fmt.Errorf("config: %s=%q is not a number", k, v)
	}
	return n, nil
}

func durEnv(k string, def time.Duration) (time.Duration, error) {
	v := os.Getenv(k)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		if n, err2 := strconv.Atoi(v); err2 == nil {
			return time.Duration(n) * time.Second, nil
		}
		return 0, fmt.Errorf("config: %s=%q is not a duration (e.g. 60s)", k, v)
	}
	return d, nil
}

// chartVersionsOfEarlierReleases are the tracing chart versions the charts of 0.5.0 and
// 0.5.1 set, which helm upgrade --reuse-values keeps: they count as empty (upgrading.md).
var chartVersionsOfEarlierReleases = map[string]string{
	"RUNR_TRACING_COLLECTOR_CHART_VERSION": "0.175.1",
	"RUNR_TRACING_TEMPO_CHART_VERSION":     "3.1.0",
}

// loadTracingBackend reads the tracing backend's image and chart-version settings.
func (c *Config) loadTracingBackend() error {
	for env, dst := range map[string]*string{"RUNR_TRACING_COLLECTOR_IMAGE": &c.TracingCollectorImage, "RUNR_TRACING_TEMPO_IMAGE": &c.TracingTempoImage} {
		v := strings.TrimSpace(os.Getenv(env))
		if v != "" {
			if _, err := name.NewTag(v, name.StrictValidation); err != nil {
				return fmt.Errorf("config: %s=%q is not an image with its registry and tag, e.g. registry.example.com/mirror/tempo:3.1.0 (%v)", env, v, err)
			}
		}
		*dst = v
	}
	for env, dst := range map[string]*string{"RUNR_TRACING_COLLECTOR_CHART_VERSION": &c.TracingCollectorChartVersion, "RUNR_TRACING_TEMPO_CHART_VERSION": &c.TracingTempoChartVersion} {
		v := strings.TrimPrefix(strings.TrimSpace(os.Getenv(env)), "v")
		if v == chartVersionsOfEarlierReleases[env] {
			v = ""
		}
		if v != "" {
			if _, err := semver.StrictNewVersion(v); err != nil {
				return fmt.Errorf("config: %s=%q is not a chart version such as 1.2.3 (%v)", env, v, err)
			}
		}
		*dst = v
	}
	return nil
}
