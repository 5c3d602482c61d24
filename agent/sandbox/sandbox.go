// Package sandbox is what the console's sandbox node installers do on a node: the KVM
// probe (is /dev/kvm there?) and gVisor's install (runsc and its containerd shim,
// registered as the runtime handler runsc).
package sandbox

import (
	"archive/tar"
	"bytes"
	"compress/bzip2"
	"context"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"runr.dev/console/agent/nodemirror"
)

// ProbeKVM reports whether the node whose / is mounted at root has /dev/kvm (a character
// device), with the evidence.
func ProbeKVM(root string) (bool, string) {
	st, err := os.Stat(filepath.Join(root, "/dev/kvm"))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return false, "/dev/kvm does not exist (no hardware virtualisation, or it is not exposed to this node)"
	case err != nil:
		return false, "/dev/kvm: " + err.Error()
	case st.Mode()&os.ModeCharDevice == 0:
		return false, "/dev/kvm is not a character device"
	}
	return true, "/dev/kvm is a character device"
}

// GVisorHandler is the runtime handler gVisor registers with containerd (RuntimeClass
// gvisor names it).
const GVisorHandler = "runsc"

// gvisorFiles are what gVisor's release archive holds that the node needs.
var gvisorFiles = []string{"runsc", "containerd-shim-runsc-v1"}

// Download fetches gVisor's release archive of an architecture and checks it against its
// .sha512 (base is e.g. https://storage.googleapis.com/gvisor/releases/release/latest).
func Download(ctx context.Context, client *http.Client, base, arch string) ([]byte, error) {
	url := strings.TrimRight(base, "/") + "/" + arch + "/gvisor.tar.bz2"
	archive, err := get(ctx, client, url)
	if err != nil {
		return nil, err
	}
	sum, err := get(ctx, client, url+".sha512")
	if err != nil {
		return nil, err
	}
	want, _, _ := strings.Cut(strings.TrimSpace(string(sum)), " ")
	got := sha512.Sum512(archive)
	if !strings.EqualFold(want, hex.EncodeToString(got[:])) {
		return nil, fmt.Errorf("%s: checksum mismatch (want %s)", url, want)
	}
	return archive, nil
}

func get(ctx context.Context, client *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("download %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("download %s: %s", url, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 512<<20))
}

// Extract writes runsc, its containerd shim and gvisor-bin/ (which must stay beside
// runsc) from the release archive into dir (the host's /usr/local/bin under root).
func Extract(archive []byte, dir string) error {
	tr := tar.NewReader(bzip2.NewReader(bytes.NewReader(archive)))
	found := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read gVisor's archive: %w", err)
		}
		name := filepath.Clean(strings.TrimPrefix(h.Name, "./"))
		if strings.HasPrefix(name, "..") || filepath.IsAbs(name) || h.Typeflag != tar.TypeReg {
			continue
		}
		if !strings.HasPrefix(name, "gvisor-bin/") && !slices.Contains(gvisorFiles, name) {
			continue
		}
		if slices.Contains(gvisorFiles, name) {
			found++
		}
		if err := writeFile(filepath.Join(dir, name), tr, 0o755); err != nil {
			return err
		}
	}
	if found != len(gvisorFiles) {
		return fmt.Errorf("gVisor's archive lacks %s", strings.Join(gvisorFiles, " or "))
	}
	return nil
}

func writeFile(p string, r io.Reader, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp := p + ".runr-tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", p, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// criRuntimeTables are where config.toml keeps the CRI runtimes: containerd 1.x (config
// version 2) and 2.x (version 3).
var criRuntimeTables = map[int64][]string{
	2: {"plugins", "io.containerd.grpc.v1.cri", "containerd", "runtimes"},
	3: {"plugins", "io.containerd.cri.v1.runtime", "containerd", "runtimes"},
}

// k3sTemplate is a containerd template of k3s and rke2: their generated configuration
// plus gVisor's runtime, in the tables of the configuration's version.
func k3sTemplate(version int64) string {
	table := `plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runsc`
	if version == 3 {
		table = `plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runsc`
	}
	return "{{ template \"base\" . }}\n\n[" + table + "]\n  runtime_type = \"io.containerd.runsc.v1\"\n"
}

// RegisterGVisor registers the runsc runtime handler with the node's containerd (under
// root): in config.toml for plain containerd, in config.toml.tmpl for k3s and rke2 (which
// generate config.toml from it). It reports whether containerd must restart to read it.
func RegisterGVisor(root string, f nodemirror.Flavor) (bool, error) {
	if f.NeedsConfigPath {
		return nodemirror.EditContainerdConfig(filepath.Join(root, f.ConfigDir, "config.toml"), func(cfg map[string]any, version int64) (bool, error) {
			rt := nodemirror.Table(cfg, append(criRuntimeTables[version], GVisorHandler)...)
			if rt["runtime_type"] == "io.containerd.runsc.v1" {
				return false, nil
			}
			rt["runtime_type"] = "io.containerd.runsc.v1"
			return true, nil
		})
	}
	// k3s and rke2 with containerd 2 read config-v3.toml.tmpl; with containerd 1.x,
	// config.toml.tmpl. The generated config.toml says which.
	version, name := int64(2), "config.toml.tmpl"
	if gen, err := os.ReadFile(filepath.Join(root, f.ConfigDir, "config.toml")); err == nil && bytes.Contains(gen, []byte("version = 3")) {
		version, name = 3, "config-v3.toml.tmpl"
	}
	tmpl := filepath.Join(root, f.ConfigDir, name)
	old, err := os.ReadFile(tmpl)
	switch {
	case err == nil && bytes.Contains(old, []byte("runtimes.runsc]")):
		return false, nil
	case err == nil:
		return false, fmt.Errorf("%s is a template of its own: add gVisor's runtime (runtime_type io.containerd.runsc.v1) to it", tmpl)
	case !errors.Is(err, os.ErrNotExist):
		return false, err
	}
	return true, writeFile(tmpl, strings.NewReader(k3sTemplate(version)), 0o644)
}
