package imagemirror

import (
	"bytes"
	"strings"
	"testing"
)

func TestMap(t *testing.T) {
	const m = "registry.corp.example:5000/mirror"
	for ref, want := range map[string]string{
		"ghcr.io/brf-tech/runr/agent:1.2.3":      m + "/ghcr.io/brf-tech/runr/agent:1.2.3",
		"redis:7":                                m + "/docker.io/library/redis:7",
		"grafana/loki:2.9.3":                     m + "/docker.io/grafana/loki:2.9.3",
		"docker.io/traefik:v3.7.4":               m + "/docker.io/library/traefik:v3.7.4",
		"index.docker.io/library/busybox":        m + "/docker.io/library/busybox",
		"registry.k8s.io/pause:3.10":             m + "/registry.k8s.io/pause:3.10",
		"localhost/x:1":                          m + "/localhost/x:1",
		"127.0.0.1:5000/a/b@sha256:" + hex64:     m + "/127.0.0.1:5000/a/b@sha256:" + hex64,
		"quay.io/p/q:v1@sha256:" + hex64:         m + "/quay.io/p/q:v1@sha256:" + hex64,
		m + "/ghcr.io/brf-tech/runr/agent:1.2.3": m + "/ghcr.io/brf-tech/runr/agent:1.2.3",
		"":                                       "",
	} {
		if got := Map(m, ref); got != want {
			t.Errorf("Map(%q) = %q, want %q", ref, got, want)
		}
	}
	if got := Map("", "redis:7"); got != "redis:7" {
		t.Errorf("no mirror: %q", got)
	}
}

const hex64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestValidate(t *testing.T) {
	for _, ok := range []string{"", "registry.example.com", "registry.example.com:5000", "10.0.0.5:5000/runr/mirror", "[fd00::1]:5000", "localhost:5000", "mirror"} {
		if msg := Validate(ok); msg != "" {
			t.Errorf("Validate(%q) = %q, want accepted", ok, msg)
		}
	}
	for bad, says := range map[string]string{
		"https://registry.example.com":      "scheme",
		"registry.example.com:99999":        "port",
		"registry.example.com:x":            "port",
		"Registry.Example.com":              "host name",
		"registry.example.com/Mirror":       "path",
		"registry.example.com//a":           "path",
		"reg istry":                         "host name",
		"[fd00::1":                          "IPv6",
		strings.Repeat("a", MaxLength+1):    "characters",
		"registry.example.com/a b":          "path",
		"registry.example.com/ghcr.io/../x": "path",
	} {
		if msg := Validate(bad); !strings.Contains(msg, says) {
			t.Errorf("Validate(%q) = %q, want a message about the %s", bad, msg, says)
		}
	}
	if got := Normalize("  registry.example.com:5000/mirror// "); got != "registry.example.com:5000/mirror" {
		t.Errorf("Normalize: %q", got)
	}
}

func FuzzMapIsStable(f *testing.F) {
	for _, s := range []string{"redis:7", "ghcr.io/a/b:1", "a/b", "x.y/z@sha256:" + hex64} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		const m = "mirror.example:5000/r"
		once := Map(m, ref)
		if twice := Map(m, once); twice != once {
			t.Fatalf("Map(Map(%q)) = %q, not %q", ref, twice, once)
		}
		if ref != "" && !strings.HasPrefix(once, m+"/") {
			t.Fatalf("Map(%q) = %q is not under the mirror", ref, once)
		}
	})
}

func TestPostRendererMapsWorkloadsAndKeepsTheRest(t *testing.T) {
	in := `---
# Source: chart/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: op
spec:
  replicas: 2
  template:
    spec:
      initContainers:
        - name: init
          image: busybox:1.36
      containers:
        - name: op
          image: quay.io/prometheus-operator/prometheus-operator:v0.80.0
          args:
            - --prometheus-config-reloader=quay.io/prometheus-operator/prometheus-config-reloader:v0.80.0
            - --log-level=info
          env:
            - name: OPERATOR_IMAGE_NAME
              value: ghcr.io/cloudnative-pg/cloudnative-pg:1.27.0
            - name: OTHER
              value: ghcr.io/not/an-image-setting:1
          resources:
            limits:
              memory: 128974848
---
# Source: chart/templates/configmap.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: c
data:
  image: ghcr.io/left/alone:1
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: cj
spec:
  jobTemplate:
    spec:
      template:
        spec:
          containers:
            - name: c
              image: registry.k8s.io/kubectl:v1.31.0
---
apiVersion: monitoring.coreos.com/v1
kind: Prometheus
metadata:
  name: p
spec:
  image: quay.io/prometheus/prometheus:v3.1.0
`
	out, err := PostRenderer{Mirror: "m.example:5000"}.Run(bytes.NewBufferString(in))
	if err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"image: m.example:5000/docker.io/library/busybox:1.36",
		"image: m.example:5000/quay.io/prometheus-operator/prometheus-operator:v0.80.0",
		"--prometheus-config-reloader=m.example:5000/quay.io/prometheus-operator/prometheus-config-reloader:v0.80.0",
		"- --log-level=info",
		"value: m.example:5000/ghcr.io/cloudnative-pg/cloudnative-pg:1.27.0",
		"value: ghcr.io/not/an-image-setting:1",
		"memory: 128974848",
		"# Source: chart/templates/deployment.yaml\n",
		"# Source: chart/templates/configmap.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  image: ghcr.io/left/alone:1\n",
		"image: m.example:5000/registry.k8s.io/kubectl:v1.31.0",
		"image: m.example:5000/quay.io/prometheus/prometheus:v3.1.0",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("post-rendered manifest lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "---\n"); n != 4 {
		t.Errorf("%d documents, want 4:\n%s", n, got)
	}
	same, err := PostRenderer{}.Run(bytes.NewBufferString(in))
	if err != nil || strings.Contains(same.String(), "m.example") {
		t.Fatalf("without a mirror: %v\n%s", err, same)
	}
}
