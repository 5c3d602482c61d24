package ops

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/nodes"
	"runr.dev/console/ops/registry"
	"runr.dev/console/store"
)

func TestValidateRegionName(t *testing.T) {
	for _, tc := range []struct {
		name, want string
	}{
		{"eu-2", ""},
		{"a", ""},
		{"", "Give the region a name"},
		{strings.Repeat("a", 64), "at most 63"},
		{"2eu", "start with a letter"},
		{"eu-", "end with a letter or digit"},
		{"EU", "lowercase"},
		{"eu_2", "lowercase"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ValidateRegionName(tc.name); !contains(got, tc.want) {
				t.Fatalf("%q: %q, want %q", tc.name, got, tc.want)
			}
		})
	}
}

func TestValidateMonitoringURL(t *testing.T) {
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"", true},
		{"http://prometheus.monitoring.svc:9090", true},
		{"https://loki.logs.svc.cluster.local:3100/loki", true},
		{"http://prometheus.example.com:9090", false},
		{"http://prometheus.monitoring.svc", false},
		{"ftp://p.m.svc:1", false},
	} {
		t.Run(tc.url, func(t *testing.T) {
			if got := ValidateMonitoringURL(tc.url); (got == "") != tc.ok {
				t.Fatalf("%q: %q", tc.url, got)
			}
		})
	}
}

func TestValidateDomain(t *testing.T) {
	for _, tc := range []struct {
		domain string
		ok     bool
	}{
		{"", true},
		{"functions.example.com", true},
		{"example.com", true},
		{"Example.com", false},
		{"https://example.com", false},
		{"example.com.", false},
		{"localhost", false},
		{strings.Repeat("a.", 100) + "com", false},
	} {
		t.Run(tc.domain, func(t *testing.T) {
			if got := kit.ValidateDomain(tc.domain); (got == "") != tc.ok {
				t.Fatalf("%q: %q", tc.domain, got)
			}
		})
	}
}

func TestValidateHostPort(t *testing.T) {
	for _, tc := range []struct {
		addr, want string
	}{
		{"redis.example.com:6379", ""},
		{"10.0.0.1:1", ""},
		{"[::1]:65535", ""},
		{"redis.example.com", "host:port"},
		{":6379", "host:port"},
		{"redis:0", "1 to 65535"},
		{"redis:65536", "1 to 65535"},
		{"redis:x", "1 to 65535"},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			if got := kit.ValidateHostPort(tc.addr); !contains(got, tc.want) {
				t.Fatalf("%q: %q, want %q", tc.addr, got, tc.want)
			}
		})
	}
}

func TestValidNamespace(t *testing.T) {
	for _, tc := range []struct {
		ns, def, want, msg string
	}{
		{"", "knative-serving", "knative-serving", ""},
		{"serving", "knative-serving", "serving", ""},
		{"Serving", "knative-serving", "", "Not a valid namespace name"},
	} {
		t.Run(tc.ns, func(t *testing.T) {
			got, msg := validNamespace(tc.ns, tc.def)
			if got != tc.want || !contains(msg, tc.msg) {
				t.Fatalf("%q: %q %q", tc.ns, got, msg)
			}
		})
	}
}

func TestSetupInputValidate(t *testing.T) {
	kc := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"https://203.0.113.10:6443\"}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n"
	good := func() SetupInput {
		return SetupInput{RegionFields: RegionFields{Name: " eu-2 ", Kubeconfig: kc}, Input: registry.Input{RegistryMode: store.RegistryNone}}
	}
	for _, tc := range []struct {
		name string
		edit func(in *SetupInput)
		want []string
	}{
		{"valid", func(*SetupInput) {}, nil},
		{"bad name and kubeconfig", func(in *SetupInput) { in.Name, in.Kubeconfig = "EU", "nope" }, []string{"kubeconfig", "name"}},
		{"monitoring", func(in *SetupInput) { in.PrometheusURL, in.LokiURL = "http://x", "http://loki.l.svc:3100" }, []string{"prometheus_url"}},
		{"external redis", func(in *SetupInput) { in.RedisMode, in.RedisAddress = store.RedisExternal, "redis" }, []string{"redis_address"}},
		{"unknown redis", func(in *SetupInput) { in.RedisMode = "cloud" }, []string{"redis_mode"}},
		{"empty node", func(in *SetupInput) { in.Nodes = []string{"w1", ""} }, []string{"nodes"}},
		{"registry", func(in *SetupInput) { in.RegistryMode = store.RegistryExternal }, []string{"external_address"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := good()
			tc.edit(&in)
			errs := in.validate()
			if got := keys(errs); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("fields %v, want %v (%v)", got, tc.want, errs)
			}
			if tc.want == nil && in.Name != "eu-2" {
				t.Fatalf("the name is not trimmed: %q", in.Name)
			}
		})
	}
}

func TestValidateSettings(t *testing.T) {
	n := func(v int) *int { return &v }
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		name string
		in   SettingsInput
		want []string
		ips  []string // the trusted addresses once normalised
	}{
		{"nothing", SettingsInput{}, nil, nil},
		{"timeout", SettingsInput{RequestTimeout: n(3600)}, nil, nil},
		{"timeout out of range", SettingsInput{RequestTimeout: n(0)}, []string{"request_timeout"}, nil},
		{"agent address", SettingsInput{AgentWSURL: s("wss://runr.example.com")}, nil, nil},
		{"agent address cleared", SettingsInput{AgentWSURL: s("")}, nil, nil},
		{"agent address without host", SettingsInput{AgentWSURL: s("ftp://x")}, []string{"agent_ws_url"}, nil},
		{"trusted addresses", SettingsInput{IngressTrustedIPs: &[]string{" 10.0.0.7 ", "", "10.1.0.0/16", "2001:db8::1"}}, nil,
			[]string{"10.0.0.7/32", "10.1.0.0/16", "2001:db8::1/128"}},
		{"none trusted", SettingsInput{IngressTrustedIPs: &[]string{}}, nil, []string{}},
		{"not a CIDR", SettingsInput{IngressTrustedIPs: &[]string{"10.0.0.0/33"}}, []string{"ingress_trusted_ips"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := validateSettings(&tc.in)
			if got := keys(errs); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("fields %v, want %v (%v)", got, tc.want, errs)
			}
			if tc.ips != nil && !reflect.DeepEqual(*tc.in.IngressTrustedIPs, tc.ips) {
				t.Fatalf("trusted addresses %v, want %v", *tc.in.IngressTrustedIPs, tc.ips)
			}
		})
	}
}

func TestNodesExistAndCheckRefusal(t *testing.T) {
	found := []kit.NodeInfo{{Name: "w1"}, {Name: "w2"}}
	if m := nodes.NodesExist([]string{"w2", "w1"}, found); m != "" {
		t.Fatal(m)
	}
	if m := nodes.NodesExist([]string{"w3"}, found); m != `The cluster has no node "w3".` {
		t.Fatal(m)
	}
	chk := &CheckResult{Items: []kit.CheckItem{
		{Key: "connect", Title: "Connection", Status: kit.CheckFail, Evidence: "refused"},
		{Key: "namespace", Title: "Namespace", Status: kit.CheckFail, Evidence: "exists"},
		{Key: "version", Title: "Version", Status: kit.CheckFail, Evidence: "too old"},
		{Key: "rights", Title: "Rights", Status: kit.CheckPass},
	}}
	want := map[string]string{"kubeconfig": "Connection: refused", "name": "Namespace: exists"}
	if got := checkRefusal(chk); !reflect.DeepEqual(got, want) {
		t.Fatalf("%v, want %v", got, want)
	}
}

func TestResolveVersion(t *testing.T) {
	vs := []KnativeVersion{{Version: "1.20", Minor: "1.20"}, {Version: "1.19", Minor: "1.19"}}
	for _, tc := range []struct {
		want, got, msg string
	}{
		{"", "1.20", ""},
		{"1.19", "1.19", ""},
		{"1.19.4", "1.19", ""},
		{"1.15", "", "choose one of 1.20, 1.19"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			v, msg := resolveVersion(vs, tc.want)
			if v != nil && v.Version != tc.got || v == nil && tc.got != "" || !contains(msg, tc.msg) {
				t.Fatalf("%q: %v %q", tc.want, v, msg)
			}
		})
	}
	if _, msg := resolveVersion(nil, ""); !strings.Contains(msg, "No Knative version is offered") {
		t.Fatal(msg)
	}
	for v, want := range map[string]int{"v1.32.4": 32, "1.30": 30, "": 0, "v1": 0} {
		if got := K8sMinor(&store.Region{K8sVersion: v}); got != want {
			t.Errorf("%q: %d, want %d", v, got, want)
		}
	}
}

// contains reports whether got says want ("" wants nothing said).
func contains(got, want string) bool {
	if want == "" {
		return got == ""
	}
	return strings.Contains(got, want)
}

// keys are the sorted fields of errors (nil when none).
func keys(errs map[string]string) []string {
	var out []string
	for k := range errs {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
