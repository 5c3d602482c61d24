package ops

import (
	"reflect"
	"sort"
	"testing"

	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/nodes"
	"runr.dev/console/ops/preflight"
	"runr.dev/console/ops/registry"
	"runr.dev/console/store"
)

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
		{"redis in the cluster", func(in *SetupInput) { in.RedisMode, in.RedisAddress = store.RedisInCluster, "redis.queues.svc:6379" }, nil},
		{"redis in the cluster at an outside name", func(in *SetupInput) { in.RedisMode, in.RedisAddress = store.RedisInCluster, "redis.example.com:6379" }, []string{"redis_address"}},
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
	chk := &preflight.Result{Items: []kit.CheckItem{
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

// keys are the sorted fields of errors (nil when none).
func keys(errs map[string]string) []string {
	var out []string
	for k := range errs {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
