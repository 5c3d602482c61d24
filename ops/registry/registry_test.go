package registry

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"runr.dev/console/ops/kit"
	"runr.dev/console/store"
)

func TestZotConfig(t *testing.T) {
	pvc := ZotValues(Params{Mode: store.RegistryInternal, StorageType: "pvc", StorageClass: "fast-ssd", Size: "20Gi"})
	if pvc["persistence"] != true || pvc["pvc"].(map[string]any)["storageClassName"] != "fast-ssd" || pvc["mountConfig"] != true {
		t.Errorf("PVC values = %v", pvc)
	}
	if _, ok := pvc["s3"]; ok {
		t.Error("the zot chart has no s3 values")
	}
	s3 := ZotValues(Params{Mode: store.RegistryInternal, StorageType: "s3", S3Endpoint: "https://minio.example.test:9000", S3Bucket: "images", S3Region: "eu-1"})
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

func TestValidateRegistry(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Input
		want []string // the fields with errors
	}{
		{"internal on a PVC by default", Input{RegistryMode: store.RegistryInternal}, nil},
		{"internal PVC size and class", Input{RegistryMode: store.RegistryInternal, PVCConfig: PVCConfig{StorageClass: "fast.ssd", Size: "10Gi"}}, nil},
		{"bad PVC", Input{RegistryMode: store.RegistryInternal, PVCConfig: PVCConfig{StorageClass: "Fast SSD", Size: "-1Gi"}},
			[]string{"pvc_config.size", "pvc_config.storageClass"}},
		{"s3 complete", Input{RegistryMode: store.RegistryInternal, StorageType: "s3",
			S3Config: S3Config{Endpoint: "https://s3.example.com", Bucket: "b", AccessKey: "a", SecretKey: "s"}}, nil},
		{"s3 empty", Input{RegistryMode: store.RegistryInternal, StorageType: "s3"},
			[]string{"s3_config.access_key", "s3_config.bucket", "s3_config.endpoint", "s3_config.secret_key"}},
		{"unknown storage", Input{RegistryMode: store.RegistryInternal, StorageType: "nfs"}, []string{"storage_type"}},
		{"external", Input{RegistryMode: store.RegistryExternal, ExternalAddress: "registry.example.com:5000"}, nil},
		{"external half credentials", Input{RegistryMode: store.RegistryExternal, ExternalAddress: "r.example.com", ExternalUsername: "u"},
			[]string{"external_password"}},
		{"external without address", Input{RegistryMode: store.RegistryExternal, ExternalAddress: "a b"}, []string{"external_address"}},
		{"none", Input{RegistryMode: store.RegistryNone}, nil},
		{"unknown mode", Input{RegistryMode: "cloud"}, []string{"registry_mode"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := map[string]string{}
			p, sec := tc.in.Params()
			Validate(p, sec, errs)
			if got := kit.SortedKeys(errs); len(got)+len(tc.want) > 0 && !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("fields %v, want %v (%v)", got, tc.want, errs)
			}
		})
	}
}
