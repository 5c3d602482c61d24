package sandbox

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha512"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"runr.dev/console/agent/nodemirror"
)

func TestProbeKVM(t *testing.T) {
	root := t.TempDir()
	if ok, why := ProbeKVM(root); ok || !strings.Contains(why, "does not exist") {
		t.Fatalf("no /dev/kvm: %v %s", ok, why)
	}
	os.MkdirAll(filepath.Join(root, "dev"), 0o755)
	os.WriteFile(filepath.Join(root, "dev/kvm"), nil, 0o644)
	if ok, why := ProbeKVM(root); ok || !strings.Contains(why, "not a character device") {
		t.Fatalf("a plain file: %v %s", ok, why)
	}
	if ok, _ := ProbeKVM("/"); ok {
		if st, err := os.Stat("/dev/kvm"); err != nil || st.Mode()&os.ModeCharDevice == 0 {
			t.Fatal("the probe found a /dev/kvm that is not there")
		}
	}
}

// gvisorArchive builds a release archive like gVisor's (bzip2 tar), with the bzip2 tool.
func gvisorArchive(t *testing.T) []byte {
	t.Helper()
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	for _, f := range []string{"runsc", "containerd-shim-runsc-v1", "gvisor-bin/helper", "README"} {
		tw.WriteHeader(&tar.Header{Name: f, Mode: 0o755, Size: int64(len(f)), Typeflag: tar.TypeReg})
		tw.Write([]byte(f))
	}
	tw.Close()
	cmd := exec.Command("bzip2", "-c")
	cmd.Stdin = &tb
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bzip2 (make test installs it): %v", err)
	}
	return out
}

func TestDownloadAndExtract(t *testing.T) {
	archive := gvisorArchive(t)
	sum := sha512.Sum512(archive)
	good := hex.EncodeToString(sum[:]) + "  gvisor.tar.bz2\n"
	var served string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/release/latest/x86_64/gvisor.tar.bz2":
			w.Write(archive)
		case "/release/latest/x86_64/gvisor.tar.bz2.sha512":
			w.Write([]byte(served))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	served = strings.Repeat("0", 128)
	if _, err := Download(context.Background(), srv.Client(), srv.URL+"/release/latest", "x86_64"); err == nil || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Fatalf("a wrong checksum: %v", err)
	}
	served = good
	got, err := Download(context.Background(), srv.Client(), srv.URL+"/release/latest", "x86_64")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := Extract(got, dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"runsc", "containerd-shim-runsc-v1", "gvisor-bin/helper"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Mode().Perm()&0o100 == 0 {
			t.Errorf("%s not extracted as an executable: %v", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "README")); err == nil {
		t.Error("only gVisor's binaries are extracted")
	}
}

func TestRegisterGVisor(t *testing.T) {
	t.Run("plain containerd", func(t *testing.T) {
		root := t.TempDir()
		os.MkdirAll(filepath.Join(root, "etc/containerd"), 0o755)
		f := nodemirror.Flavor{Name: "containerd", ConfigDir: "/etc/containerd", NeedsConfigPath: true}
		if restart, err := RegisterGVisor(root, f); err != nil || !restart {
			t.Fatalf("first registration: %v %v", restart, err)
		}
		cfg := map[string]any{}
		if _, err := toml.DecodeFile(filepath.Join(root, "etc/containerd/config.toml"), &cfg); err != nil {
			t.Fatal(err)
		}
		rt := nodemirror.Table(cfg, "plugins", "io.containerd.grpc.v1.cri", "containerd", "runtimes", "runsc")
		if rt["runtime_type"] != "io.containerd.runsc.v1" {
			t.Fatalf("runsc runtime = %v", rt)
		}
		if restart, err := RegisterGVisor(root, f); err != nil || restart {
			t.Fatalf("a second registration changes nothing: %v %v", restart, err)
		}
	})
	t.Run("k3s with containerd 2", func(t *testing.T) {
		root := t.TempDir()
		dir := "/var/lib/rancher/k3s/agent/etc/containerd"
		os.MkdirAll(filepath.Join(root, dir), 0o755)
		os.WriteFile(filepath.Join(root, dir, "config.toml"), []byte("version = 3\n"), 0o644)
		f := nodemirror.Flavor{Name: "k3s", ConfigDir: dir}
		if restart, err := RegisterGVisor(root, f); err != nil || !restart {
			t.Fatalf("registration: %v %v", restart, err)
		}
		b, err := os.ReadFile(filepath.Join(root, dir, "config-v3.toml.tmpl"))
		if err != nil || !strings.Contains(string(b), `{{ template "base" . }}`) || !strings.Contains(string(b), "io.containerd.cri.v1.runtime") {
			t.Fatalf("template: %v %s", err, b)
		}
		if restart, err := RegisterGVisor(root, f); err != nil || restart {
			t.Fatalf("again: %v %v", restart, err)
		}
	})
	t.Run("a template of its own is left alone", func(t *testing.T) {
		root := t.TempDir()
		dir := "/var/lib/rancher/rke2/agent/etc/containerd"
		os.MkdirAll(filepath.Join(root, dir), 0o755)
		os.WriteFile(filepath.Join(root, dir, "config.toml.tmpl"), []byte("# mine\n"), 0o644)
		if _, err := RegisterGVisor(root, nodemirror.Flavor{Name: "rke2", ConfigDir: dir}); err == nil {
			t.Fatal("an administrator's template was overwritten")
		}
	})
}
