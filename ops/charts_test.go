package ops

import (
	"encoding/json"
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
	for i := 1; i < len(KnativeCompat); i++ {
		if minorNumber(KnativeCompat[i].Knative) >= minorNumber(KnativeCompat[i-1].Knative) || KnativeCompat[i].MinK8s > KnativeCompat[i-1].MinK8s {
			t.Errorf("row %d (%v) is not older than row %d (%v)", i, KnativeCompat[i], i-1, KnativeCompat[i-1])
		}
	}
}

func TestTraefikValues(t *testing.T) {
	lb := TraefikValues(TraefikOptions{Image: "ghcr.io/brf-tech/runr/reqs/traefik:v3.7.4", Class: TraefikClass, Timeout: 130})
	if _, ok := lb["additionalArguments"]; ok {
		t.Error("the Knative provider is switched on through additionalArguments, which grants no RBAC")
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

func TestZotConfig(t *testing.T) {
	pvc := ZotValues(RegistryParams{Mode: store.RegistryInternal, StorageType: "pvc", StorageClass: "fast-ssd", Size: "20Gi"})
	if pvc["persistence"] != true || pvc["pvc"].(map[string]any)["storageClassName"] != "fast-ssd" || pvc["mountConfig"] != true {
		t.Errorf("PVC values = %v", pvc)
	}
	if _, ok := pvc["s3"]; ok {
		t.Error("the zot chart has no s3 values")
	}
	s3 := ZotValues(RegistryParams{Mode: store.RegistryInternal, StorageType: "s3", S3Endpoint: "https://minio.example.test:9000", S3Bucket: "images", S3Region: "eu-1"})
	var cfg struct {
		Storage struct {
			RootDirectory string         `json:"rootDirectory"`
			Dedupe        bool           `json:"dedupe"`
			StorageDriver map[string]any `json:"storageDriver"`
		} `json:"storage"`
		Extensions struct {
			Sync struct {
				Enable     bool `json:"enable"`
				Registries []struct {
					URLs     []string `json:"urls"`
					OnDemand bool     `json:"onDemand"`
					Content  []struct {
						Prefix, Destination string
					} `json:"content"`
				} `json:"registries"`
			} `json:"sync"`
		} `json:"extensions"`
	}
	if err := json.Unmarshal([]byte(s3["configFiles"].(map[string]any)["config.json"].(string)), &cfg); err != nil {
		t.Fatal(err)
	}
	d := cfg.Storage.StorageDriver
	if d["name"] != "s3" || d["bucket"] != "images" || d["regionendpoint"] != "https://minio.example.test:9000" || d["region"] != "eu-1" || cfg.Storage.Dedupe {
		t.Errorf("S3 storage = %+v", cfg.Storage)
	}
	if s3["persistence"] != false || len(s3["env"].([]any)) != 2 {
		t.Errorf("S3 values = %v", s3)
	}
	if !cfg.Extensions.Sync.Enable || len(cfg.Extensions.Sync.Registries) != 2 {
		t.Fatalf("sync = %+v", cfg.Extensions.Sync)
	}
	for _, r := range cfg.Extensions.Sync.Registries {
		if !r.OnDemand || len(r.Content) != 1 || r.Content[0].Prefix != "**" || !strings.HasPrefix(r.Content[0].Destination, "/") {
			t.Errorf("sync registry = %+v", r)
		}
	}
}

func TestPrepullNeedsNoShell(t *testing.T) {
	pulled := []string{"ghcr.io/brf-tech/runr/wrapper:1.0.0", "gcr.io/kaniko-project/executor:v1.23.2"}
	ds := prepullDaemonSet(map[string]string{"a": "b"}, "ghcr.io/brf-tech/runr/agent:1.0.0", pulled)
	inits := ds.Spec.Template.Spec.InitContainers
	if len(inits) != len(pulled)+1 || inits[0].Image != "ghcr.io/brf-tech/runr/agent:1.0.0" {
		t.Fatalf("init containers = %v", inits)
	}
	for _, c := range inits[1:] {
		if len(c.Command) != 1 || c.Command[0] != "/runr/runr" || len(c.VolumeMounts) != 1 {
			t.Errorf("%s runs %v: every image must run the copied static binary, not its own shell", c.Image, c.Command)
		}
	}
}
