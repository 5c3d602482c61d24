package knative

import (
	"strings"
	"testing"

	"runr.dev/console/store"
)

func TestServingRelease(t *testing.T) {
	for op, want := range map[string]string{
		"1.18.3":  "1.18.2", // operator and Serving patches differ: there is no Serving 1.18.3
		"v1.17.8": "1.17.1",
		"1.20.2":  "1.20.3",
		"1.23.0":  "1.23.0",
		"1.24.5":  "1.24.0", // an operator newer than the table: the minor's first release
	} {
		if got := ServingRelease(op); got != want {
			t.Errorf("ServingRelease(%s) = %s, want %s", op, got, want)
		}
	}
}

func TestKnativeCompatNewestFirst(t *testing.T) {
	for i := 1; i < len(Compat); i++ {
		if minorNumber(Compat[i].Knative) >= minorNumber(Compat[i-1].Knative) || Compat[i].MinK8s > Compat[i-1].MinK8s {
			t.Errorf("row %d (%v) is not older than row %d (%v)", i, Compat[i], i-1, Compat[i-1])
		}
	}
}

func TestTraefikValues(t *testing.T) {
	lb := TraefikValues(TraefikOptions{Namespace: "knative-serving", Image: "ghcr.io/brf-tech/runr/reqs/traefik:v3.7.4", Class: TraefikClass, Timeout: 130})
	// The provider is switched on by the chart's values (which grant its RBAC), never by an
	// argument; the arguments give its entry points and the private Service.
	args := map[string]bool{}
	for _, a := range lb["additionalArguments"].([]any) {
		args[a.(string)] = true
	}
	for _, want := range []string{"--providers.knative.privateService.name=traefik-internal", "--providers.knative.privateService.namespace=knative-serving",
		"--providers.knative.privateEntrypoints=local"} {
		if !args[want] {
			t.Errorf("additionalArguments %v lack %s", args, want)
		}
	}
	if args["--providers.knative"] || args["--experimental.knative"] || args["--experimental.knative=true"] {
		t.Errorf("additionalArguments %v switch the provider on (without its RBAC)", args)
	}
	providers := lb["providers"].(map[string]any)
	if providers["knative"].(map[string]any)["enabled"] != true || lb["experimental"].(map[string]any)["knative"] != true {
		t.Errorf("the chart's Knative switch is off: %v / %v", providers, lb["experimental"])
	}
	if lb["service"].(map[string]any)["spec"].(map[string]any)["type"] != "LoadBalancer" {
		t.Errorf("service = %v", lb["service"])
	}
	img := lb["image"].(map[string]any)
	if img["registry"] != "ghcr.io" || img["repository"] != "brf-tech/runr/reqs/traefik" || img["tag"] != "v3.7.4" {
		t.Errorf("image = %v", img)
	}

	host := TraefikValues(TraefikOptions{Image: "traefik:v3.7.4", Class: TraefikClass, Timeout: 130, HostNetwork: true})
	if host["hostNetwork"] != true || host["deployment"].(map[string]any)["kind"] != "DaemonSet" ||
		host["service"].(map[string]any)["spec"].(map[string]any)["type"] != "ClusterIP" {
		t.Errorf("host network values = %v", host)
	}
	ports := host["ports"].(map[string]any)
	if ports["web"].(map[string]any)["port"] != 80 || ports["websecure"].(map[string]any)["port"] != 443 || ports["metrics"].(map[string]any)["port"] == 9100 {
		t.Errorf("host network ports = %v", ports)
	}
	ru := host["updateStrategy"].(map[string]any)["rollingUpdate"].(map[string]any)
	if ru["maxUnavailable"] != 1 || ru["maxSurge"] != 0 {
		t.Errorf("a host-network DaemonSet must replace pods node by node: %v", ru)
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
			if got != tc.want || (tc.msg == "") != (msg == "") || !strings.Contains(msg, tc.msg) {
				t.Fatalf("%q: %q %q", tc.ns, got, msg)
			}
		})
	}
}

func TestResolveVersion(t *testing.T) {
	vs := []Version{{Version: "1.20", Minor: "1.20"}, {Version: "1.19", Minor: "1.19"}}
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
			if v != nil && v.Version != tc.got || v == nil && tc.got != "" || (tc.msg == "") != (msg == "") || !strings.Contains(msg, tc.msg) {
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
