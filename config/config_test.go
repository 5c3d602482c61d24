package config

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

// TestSecurityAndWaitSettings: the settings of connection limits, trusted proxies and the
// GPU waits read their defaults and their values, and refuse what they cannot use.
func TestSecurityAndWaitSettings(t *testing.T) {
	c, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if c.GPUDiscoveryTimeout != 30*time.Minute || c.SocketsPerUser != DefaultSocketsPerUser || len(c.TrustedProxies) != 0 || c.MaxConnections != 0 {
		t.Fatalf("defaults: %v %d %v %d", c.GPUDiscoveryTimeout, c.SocketsPerUser, c.TrustedProxies, c.MaxConnections)
	}
	t.Setenv("RUNR_GPU_DISCOVERY_TIMEOUT", "45m")
	t.Setenv("RUNR_TRUSTED_PROXIES", "10.0.0.0/8, 192.0.2.7,::ffff:198.51.100.1")
	t.Setenv("RUNR_SOCKETS_PER_USER", "5")
	if c, err = FromEnv(); err != nil {
		t.Fatal(err)
	}
	if c.GPUDiscoveryTimeout != 45*time.Minute || c.SocketsPerUser != 5 || len(c.TrustedProxies) != 3 {
		t.Fatalf("values: %v %d %v", c.GPUDiscoveryTimeout, c.SocketsPerUser, c.TrustedProxies)
	}
	for addr, want := range map[string]bool{"10.1.2.3": true, "192.0.2.7": true, "192.0.2.8": false, "198.51.100.1": true, "::ffff:10.0.0.1": true, "2001:db8::1": false} {
		if got := c.TrustsProxy(netip.MustParseAddr(addr)); got != want {
			t.Errorf("TrustsProxy(%s) = %v, want %v", addr, got, want)
		}
	}
	for k, v := range map[string]string{"RUNR_TRUSTED_PROXIES": "not-an-address", "RUNR_SOCKETS_PER_USER": "0", "RUNR_MAX_CONNECTIONS": "-1"} {
		t.Run(k, func(t *testing.T) {
			t.Setenv(k, v)
			if _, err := FromEnv(); err == nil {
				t.Errorf("%s=%s is accepted", k, v)
			}
		})
	}
}

// TestTracingDefaultMode: tracing is on unless RUNR_TRACING_DEFAULT_MODE says off, and
// anything but on or off is refused.
func TestTracingDefaultMode(t *testing.T) {
	for v, off := range map[string]bool{"": false, "on": false, "off": true, " OFF ": true} {
		t.Setenv("RUNR_TRACING_DEFAULT_MODE", v)
		c, err := FromEnv()
		if err != nil || c.TracingOff != off {
			t.Errorf("RUNR_TRACING_DEFAULT_MODE=%q: %v off=%v", v, err, c != nil && c.TracingOff)
		}
	}
	t.Setenv("RUNR_TRACING_DEFAULT_MODE", "sometimes")
	if _, err := FromEnv(); err == nil {
		t.Error("RUNR_TRACING_DEFAULT_MODE=sometimes is accepted")
	}
}

// TestTracingBackendSettings: the backend's images need their registry and tag; a chart
// version is a version, and the ones the charts of 0.5.0 and 0.5.1 set count as empty.
func TestTracingBackendSettings(t *testing.T) {
	for env, tc := range map[string]struct{ good, bad, want string }{
		"RUNR_TRACING_TEMPO_IMAGE":             {"registry.example.com:5000/mirror/tempo:3.1.0", "tempo", "registry.example.com:5000/mirror/tempo:3.1.0"},
		"RUNR_TRACING_COLLECTOR_IMAGE":         {"registry.example.com/otel:0.162.0", "registry.example.com/otel", "registry.example.com/otel:0.162.0"},
		"RUNR_TRACING_TEMPO_CHART_VERSION":     {"3.1.0", "latest", ""},
		"RUNR_TRACING_COLLECTOR_CHART_VERSION": {"v0.180.0", "0.180", "0.180.0"},
	} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, tc.bad)
			if _, err := FromEnv(); err == nil {
				t.Errorf("%s=%s is accepted", env, tc.bad)
			}
			t.Setenv(env, tc.good)
			c, err := FromEnv()
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{"RUNR_TRACING_TEMPO_IMAGE": c.TracingTempoImage, "RUNR_TRACING_COLLECTOR_IMAGE": c.TracingCollectorImage,
				"RUNR_TRACING_TEMPO_CHART_VERSION": c.TracingTempoChartVersion, "RUNR_TRACING_COLLECTOR_CHART_VERSION": c.TracingCollectorChartVersion}[env]
			if got != tc.want {
				t.Errorf("%s=%s reads as %q, want %q", env, tc.good, got, tc.want)
			}
		})
	}
}

// TestOwnImagesAtTheConsolesVersion: every image of the console's own is referenced at the
// console's version, never :latest.
func TestOwnImagesAtTheConsolesVersion(t *testing.T) {
	c, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range append([]string{c.AgentImage, c.ResponderImage}, c.PrepullImages[0]) {
		if !strings.HasSuffix(ref, ":"+Version) || strings.HasSuffix(ref, ":latest") {
			t.Errorf("%s is not at the console's version %s", ref, Version)
		}
	}
}
