package nodemirror

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

const registry = "runr-zot.runr-registry.svc.cluster.local:5000"

func resolveTo(ip string) func(string) (string, error) {
	return func(string) (string, error) { return ip, nil }
}

func mkdir(t *testing.T, root, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
		t.Fatal(err)
	}
}

func readTOML(t *testing.T, p string) map[string]any {
	t.Helper()
	m := map[string]any{}
	if _, err := toml.DecodeFile(p, &m); err != nil {
		t.Fatalf("%s is not valid TOML: %v", p, err)
	}
	return m
}

func TestSyncPlainContainerdSetsConfigPathOnce(t *testing.T) {
	root := t.TempDir()
	mkdir(t, root, "/etc/containerd")
	cfg := filepath.Join(root, "/etc/containerd/config.toml")
	orig := "version = 2\n\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"registry.k8s.io/pause:3.10\"\n"
	if err := os.WriteFile(cfg, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Sync(root, registry, resolveTo("10.0.0.17"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Flavor.Name != "containerd" || !res.Changed || !res.ConfigChanged || res.CertsDir != "/etc/containerd/certs.d" {
		t.Fatalf("first round: %+v", res)
	}
	m := readTOML(t, cfg)
	cri := m["plugins"].(map[string]any)["io.containerd.grpc.v1.cri"].(map[string]any)
	if cri["sandbox_image"] != "registry.k8s.io/pause:3.10" {
		t.Errorf("an existing setting was lost: %v", cri)
	}
	if got := cri["registry"].(map[string]any)["config_path"]; got != "/etc/containerd/certs.d" {
		t.Errorf("config_path = %v", got)
	}
	if b, err := os.ReadFile(cfg + ".runr-backup"); err != nil || string(b) != orig {
		t.Errorf("the previous config.toml is not kept: %v", err)
	}
	gh := readTOML(t, filepath.Join(root, "/etc/containerd/certs.d/ghcr.io/hosts.toml"))
	if gh["server"] != "https://ghcr.io" {
		t.Errorf("ghcr.io server = %v", gh["server"])
	}
	host := gh["host"].(map[string]any)["http://10.0.0.17:5000/v2/ghcr.io"].(map[string]any)
	if host["override_path"] != true || len(host["capabilities"].([]any)) != 2 {
		t.Errorf("ghcr.io mirror = %v", host)
	}
	own := readTOML(t, filepath.Join(root, "/etc/containerd/certs.d", registry, "hosts.toml"))
	if _, ok := own["host"].(map[string]any)["http://10.0.0.17:5000"]; !ok || own["server"] != "http://"+registry {
		t.Errorf("the region registry's hosts.toml = %v", own)
	}
	if _, err := os.Stat(filepath.Join(root, "/etc/containerd/certs.d/docker.io/hosts.toml")); err != nil {
		t.Errorf("no Docker Hub hosts.toml: %v", err)
	}

	again, err := Sync(root, registry, resolveTo("10.0.0.17"))
	if err != nil || again.Changed || again.ConfigChanged {
		t.Fatalf("a second round changed something: %+v %v", again, err)
	}
	moved, err := Sync(root, registry, resolveTo("10.0.0.18"))
	if err != nil || !moved.Changed || moved.ConfigChanged {
		t.Fatalf("a new registry address is not written (or touched config.toml): %+v %v", moved, err)
	}
}

func TestSyncContainerd2WithoutConfig(t *testing.T) {
	root := t.TempDir()
	mkdir(t, root, "/etc/containerd")
	if _, err := Sync(root, registry, resolveTo("10.0.0.17")); err != nil {
		t.Fatal(err)
	}
	m := readTOML(t, filepath.Join(root, "/etc/containerd/config.toml"))
	if m["version"] != int64(2) {
		t.Errorf("version = %v", m["version"])
	}

	cfg := filepath.Join(root, "/etc/containerd/config.toml")
	if err := os.WriteFile(cfg, []byte("version = 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Sync(root, registry, resolveTo("10.0.0.17")); err != nil {
		t.Fatal(err)
	}
	m = readTOML(t, cfg)
	reg := m["plugins"].(map[string]any)["io.containerd.cri.v1.images"].(map[string]any)["registry"].(map[string]any)
	if reg["config_path"] != "/etc/containerd/certs.d" {
		t.Errorf("containerd 2 config_path = %v", reg)
	}
}

func TestSyncKeepsAnotherConfigPath(t *testing.T) {
	root := t.TempDir()
	mkdir(t, root, "/etc/containerd")
	cfg := filepath.Join(root, "/etc/containerd/config.toml")
	if err := os.WriteFile(cfg, []byte("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"/etc/containerd/hosts:/etc/docker/certs.d\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Sync(root, registry, resolveTo("10.0.0.17"))
	if err != nil || res.ConfigChanged || res.CertsDir != "/etc/containerd/hosts" {
		t.Fatalf("%+v %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(root, "/etc/containerd/hosts/ghcr.io/hosts.toml")); err != nil {
		t.Errorf("files not written to the configured directory: %v", err)
	}
}

func TestSyncRefusesInlineMirrors(t *testing.T) {
	root := t.TempDir()
	mkdir(t, root, "/etc/containerd")
	cfg := filepath.Join(root, "/etc/containerd/config.toml")
	body := "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry.mirrors.\"docker.io\"]\n  endpoint = [\"https://mirror.example\"]\n"
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Sync(root, registry, resolveTo("10.0.0.17")); !errors.Is(err, ErrMirrorsConfigured) {
		t.Fatalf("err = %v, want ErrMirrorsConfigured", err)
	}
	if b, _ := os.ReadFile(cfg); string(b) != body {
		t.Errorf("config.toml was changed: %s", b)
	}
}

func TestSyncK3sAndRKE2NeedNoRestart(t *testing.T) {
	for _, flavor := range []string{"k3s", "rke2"} {
		t.Run(flavor, func(t *testing.T) {
			root := t.TempDir()
			dir := "/var/lib/rancher/" + flavor + "/agent/etc/containerd"
			mkdir(t, root, dir)
			mkdir(t, root, "/etc/containerd") // a stray directory does not win over k3s/rke2
			res, err := Sync(root, registry, resolveTo("10.0.0.17"))
			if err != nil {
				t.Fatal(err)
			}
			if res.Flavor.Name != flavor || res.ConfigChanged || !strings.HasPrefix(res.CertsDir, dir) {
				t.Fatalf("%+v", res)
			}
			if _, err := os.Stat(filepath.Join(root, dir, "config.toml")); !os.IsNotExist(err) {
				t.Errorf("config.toml of %s was touched: %v", flavor, err)
			}
			if _, err := os.Stat(filepath.Join(root, dir, "certs.d/docker.io/hosts.toml")); err != nil {
				t.Errorf("no hosts.toml: %v", err)
			}
		})
	}
}

func TestDetectWithoutContainerd(t *testing.T) {
	if _, err := Detect(t.TempDir()); err == nil {
		t.Fatal("a node without containerd was not refused")
	}
}
