// Package nodemirror is what the registry's node mirror (DaemonSet runr-registry-mirror)
// does on each node: it finds the node's containerd (plain, k3s or rke2), writes
// containerd's hosts.toml so that pulls of the region's registry, ghcr.io and Docker Hub
// go to the region's Zot, and on plain containerd points config_path at those files.
package nodemirror

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// Flavor is a node's containerd.
type Flavor struct {
	// Name is containerd, k3s or rke2.
	Name string
	// ConfigDir is containerd's configuration directory on the host (config.toml).
	ConfigDir string
	// NeedsConfigPath is true for plain containerd: config.toml has to name the certs.d
	// directory (config_path) and containerd restarted once. k3s and rke2 set it already.
	NeedsConfigPath bool
}

// CertsDir is where containerd reads hosts.toml files, on the host.
func (f Flavor) CertsDir() string { return filepath.Join(f.ConfigDir, "certs.d") }

// Detect finds the node's containerd under root, the host's / as the pod mounts it.
func Detect(root string) (Flavor, error) {
	for _, f := range []Flavor{
		{Name: "k3s", ConfigDir: "/var/lib/rancher/k3s/agent/etc/containerd"},
		{Name: "rke2", ConfigDir: "/var/lib/rancher/rke2/agent/etc/containerd"},
	} {
		if isDir(filepath.Join(root, f.ConfigDir)) {
			return f, nil
		}
	}
	if isDir(filepath.Join(root, "/etc/containerd")) {
		return Flavor{Name: "containerd", ConfigDir: "/etc/containerd", NeedsConfigPath: true}, nil
	}
	return Flavor{}, errors.New("no containerd configuration on this node (looked for k3s, rke2 and /etc/containerd): CRI-O and other runtimes are not mirrored")
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// Upstream is a registry the region's Zot caches on demand, under a path of its name.
type Upstream struct {
	Host   string // as image references name it: ghcr.io, docker.io
	Server string // the registry's own address
}

// Upstreams are the registries Zot caches (the same list as its sync configuration).
var Upstreams = []Upstream{{"ghcr.io", "https://ghcr.io"}, {"docker.io", "https://registry-1.docker.io"}}

// Files are the hosts.toml files for a registry that pods name registry (host:port) and
// that the nodes reach at ip (its Service's cluster IP: nodes do not resolve cluster
// names), relative to the certs.d directory.
func Files(registry, ip string) (map[string]string, error) {
	_, port, err := net.SplitHostPort(registry)
	if err != nil {
		return nil, fmt.Errorf("registry address %q: %w", registry, err)
	}
	zot := "http://" + net.JoinHostPort(ip, port)
	files := map[string]string{
		// containerd looks up certs.d/<host:port> for a registry with a port.
		filepath.Join(registry, "hosts.toml"): hostsTOML("http://"+registry, zot, false),
	}
	for _, u := range Upstreams {
		files[filepath.Join(u.Host, "hosts.toml")] = hostsTOML(u.Server, zot+"/v2/"+u.Host, true)
	}
	return files, nil
}

func hostsTOML(server, mirror string, overridePath bool) string {
	var b strings.Builder
	b.WriteString("# Written by RunR's node mirror (DaemonSet runr-registry-mirror): pulls go to the region's Zot first.\n")
	fmt.Fprintf(&b, "server = %q\n\n", server)
	fmt.Fprintf(&b, "[host.%q]\n", mirror)
	b.WriteString("  capabilities = [\"pull\", \"resolve\"]\n")
	if overridePath {
		// The mirror's path already names the upstream (Zot keeps it under /<host>/...).
		b.WriteString("  override_path = true\n")
	}
	return b.String()
}

// WriteFiles writes files under dir (atomically, each) and reports whether any changed.
func WriteFiles(dir string, files map[string]string) (bool, error) {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	changed := false
	for _, n := range names {
		p := filepath.Join(dir, n)
		if old, err := os.ReadFile(p); err == nil && string(old) == files[n] {
			continue
		}
		if err := writeAtomic(p, []byte(files[n])); err != nil {
			return changed, err
		}
		changed = true
	}
	return changed, nil
}

func writeAtomic(p string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(p), err)
	}
	tmp := p + ".runr-tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return fmt.Errorf("replace %s: %w", p, err)
	}
	return nil
}

// criRegistryTables are where config.toml keeps the CRI registry settings: containerd
// 1.x (config version 2) and 2.x (version 3).
var criRegistryTables = map[int64][]string{
	2: {"plugins", "io.containerd.grpc.v1.cri", "registry"},
	3: {"plugins", "io.containerd.cri.v1.images", "registry"},
}

// ErrMirrorsConfigured refuses to set config_path where config.toml configures registry
// mirrors the old way: containerd refuses both at once.
var ErrMirrorsConfigured = errors.New("config.toml configures registry mirrors or configs inline; containerd refuses those together with config_path")

// EditContainerdConfig edits containerd's config.toml (file, created when missing) with
// edit, which gets the parsed configuration and its version (2 for containerd 1.x, 3 for
// 2.x; a file without one is version 2) and reports whether it changed anything. The
// previous file is kept beside it (.runr-backup); containerd reads the change after a
// restart.
func EditContainerdConfig(file string, edit func(cfg map[string]any, version int64) (bool, error)) (bool, error) {
	raw, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("read %s: %w", file, err)
	}
	cfg := map[string]any{}
	if len(raw) > 0 {
		if _, err := toml.Decode(string(raw), &cfg); err != nil {
			return false, fmt.Errorf("parse %s: %w", file, err)
		}
	}
	version, _ := cfg["version"].(int64)
	if version == 0 {
		version = 2
		cfg["version"] = version
	}
	if version != 2 && version != 3 {
		return false, fmt.Errorf("%s: config version %d is not one RunR knows (2 or 3)", file, version)
	}
	changed, err := edit(cfg, version)
	if err != nil || !changed {
		return false, err
	}
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(cfg); err != nil {
		return false, fmt.Errorf("encode %s: %w", file, err)
	}
	if len(raw) > 0 {
		if err := os.WriteFile(file+".runr-backup", raw, 0o644); err != nil {
			return false, fmt.Errorf("keep a copy of %s: %w", file, err)
		}
	}
	if err := writeAtomic(file, buf.Bytes()); err != nil {
		return false, err
	}
	return true, nil
}

// Table returns the nested table of cfg at path, creating the missing ones.
func Table(cfg map[string]any, path ...string) map[string]any {
	t := cfg
	for _, k := range path {
		next, ok := t[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			t[k] = next
		}
		t = next
	}
	return t
}

// SetConfigPath makes plain containerd's config.toml (file) read hosts.toml from certsDir
// (a host path). It reports whether config.toml changed: containerd then needs one
// restart (runr registry rolling-restart).
func SetConfigPath(file, certsDir string) (bool, error) {
	return EditContainerdConfig(file, func(cfg map[string]any, version int64) (bool, error) {
		reg := Table(cfg, criRegistryTables[version]...)
		if reg["config_path"] == certsDir {
			return false, nil
		}
		if reg["mirrors"] != nil || reg["configs"] != nil {
			return false, ErrMirrorsConfigured
		}
		if cur, ok := reg["config_path"].(string); ok && cur != "" {
			// Another directory is configured: RunR's files go there instead.
			return false, nil
		}
		reg["config_path"] = certsDir
		return true, nil
	})
}

// ConfiguredCertsDir is the config_path plain containerd's config.toml already names
// ("" when none): hosts.toml files go there.
func ConfiguredCertsDir(file string) string {
	cfg := map[string]any{}
	if _, err := toml.DecodeFile(file, &cfg); err != nil {
		return ""
	}
	version, _ := cfg["version"].(int64)
	if version == 0 {
		version = 2
	}
	reg := cfg
	for _, k := range criRegistryTables[version] {
		next, ok := reg[k].(map[string]any)
		if !ok {
			return ""
		}
		reg = next
	}
	p, _ := reg["config_path"].(string)
	// config_path may list several directories; the first is where RunR writes.
	first, _, _ := strings.Cut(p, ":")
	return first
}

// Result is what one round of the node mirror did.
type Result struct {
	Flavor     Flavor
	CertsDir   string // on the host
	RegistryIP string
	// Changed says whether a hosts.toml file changed; ConfigChanged whether config.toml
	// did (containerd then needs one restart).
	Changed, ConfigChanged bool
}

// Sync does one round on the node whose / is mounted at root: find containerd, resolve
// the registry's address, write the hosts.toml files and, on plain containerd, set
// config_path.
func Sync(root, registry string, resolve func(host string) (string, error)) (Result, error) {
	f, err := Detect(root)
	if err != nil {
		return Result{}, err
	}
	res := Result{Flavor: f, CertsDir: f.CertsDir()}
	host, _, err := net.SplitHostPort(registry)
	if err != nil {
		return res, fmt.Errorf("registry address %q: %w", registry, err)
	}
	if res.RegistryIP, err = resolve(host); err != nil {
		return res, fmt.Errorf("resolve %s: %w", host, err)
	}
	cfgFile := filepath.Join(root, f.ConfigDir, "config.toml")
	if f.NeedsConfigPath {
		if dir := ConfiguredCertsDir(cfgFile); dir != "" {
			res.CertsDir = dir
		}
	}
	files, err := Files(registry, res.RegistryIP)
	if err != nil {
		return res, err
	}
	if res.Changed, err = WriteFiles(filepath.Join(root, res.CertsDir), files); err != nil {
		return res, err
	}
	if f.NeedsConfigPath {
		if res.ConfigChanged, err = SetConfigPath(cfgFile, res.CertsDir); err != nil {
			return res, err
		}
	}
	return res, nil
}
