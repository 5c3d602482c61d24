// Package testcluster starts simulated Kubernetes clusters (etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler built from their Go modules, with kwok
// faking the kubelets) for the tests, the benchmarks and `make sandbox`.
package testcluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// Pinned versions of the simulated cluster's parts.
const (
	KubernetesVersion = "v1.36.3"
	EtcdVersion       = "v3.6.16"
	KwokVersion       = "v0.8.0"
)

// Binaries holds the paths of the built cluster binaries.
type Binaries struct {
	Dir               string
	Etcd              string
	Etcdctl           string
	APIServer         string
	ControllerManager string
	Scheduler         string
	Kwok              string
	// KwokModuleDir is the kwok module's source directory (it holds the Stage CRD).
	KwokModuleDir string
}

var (
	buildOnce sync.Once
	buildBins *Binaries
	buildErr  error
)

// CacheDir is where the binaries are kept between runs, keyed by the pinned versions.
// RUNR_TESTCLUSTER_CACHE overrides the user cache dir.
func CacheDir() (string, error) {
	base := os.Getenv("RUNR_TESTCLUSTER_CACHE")
	if base == "" {
		ucd, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("testcluster: user cache dir: %w", err)
		}
		base = filepath.Join(ucd, "runr-testcluster")
	}
	key := fmt.Sprintf("k8s-%s_etcd-%s_kwok-%s", KubernetesVersion, EtcdVersion, KwokVersion)
	return filepath.Join(base, key), nil
}

// Build builds the pinned binaries once into the cache dir and reuses them afterwards.
// Progress of a first build goes to log (may be nil).
func Build(log io.Writer) (*Binaries, error) {
	buildOnce.Do(func() { buildBins, buildErr = build(log) })
	return buildBins, buildErr
}

func build(log io.Writer) (*Binaries, error) {
	if log == nil {
		log = io.Discard
	}
	dir, err := CacheDir()
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, "bin")
	b := &Binaries{
		Dir:               bin,
		Etcd:              filepath.Join(bin, "etcd"),
		Etcdctl:           filepath.Join(bin, "etcdctl"),
		APIServer:         filepath.Join(bin, "kube-apiserver"),
		ControllerManager: filepath.Join(bin, "kube-controller-manager"),
		Scheduler:         filepath.Join(bin, "kube-scheduler"),
		Kwok:              filepath.Join(bin, "kwok"),
	}
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return nil, fmt.Errorf("testcluster: %w", err)
	}
	// A lock file keeps parallel test packages from building the same thing twice.
	unlock, err := lockFile(filepath.Join(dir, "build.lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()

	kwokDir, err := moduleDir("sigs.k8s.io/kwok", KwokVersion)
	if err != nil {
		return nil, err
	}
	b.KwokModuleDir = kwokDir

	if !exists(b.Kwok) {
		fmt.Fprintf(log, "testcluster: building kwok %s (about a minute)\n", KwokVersion)
		cmd := exec.Command("go", "install", "sigs.k8s.io/kwok/cmd/kwok@"+KwokVersion)
		cmd.Env = append(goEnv(), "GOBIN="+bin)
		if err := run(cmd, log); err != nil {
			return nil, fmt.Errorf("testcluster: build kwok: %w", err)
		}
	}
	if !exists(b.Etcd) {
		fmt.Fprintf(log, "testcluster: building etcd %s (about a minute)\n", EtcdVersion)
		if err := buildEtcd(dir, "go.etcd.io/etcd/server/v3", b.Etcd, log); err != nil {
			return nil, err
		}
	}
	if !exists(b.Etcdctl) {
		fmt.Fprintf(log, "testcluster: building etcdctl %s (about a minute)\n", EtcdVersion)
		if err := buildEtcd(dir, "go.etcd.io/etcd/etcdctl/v3", b.Etcdctl, log); err != nil {
			return nil, err
		}
	}
	for _, c := range []struct{ pkg, out string }{
		{"k8s.io/kubernetes/cmd/kube-apiserver", b.APIServer},
		{"k8s.io/kubernetes/cmd/kube-controller-manager", b.ControllerManager},
		{"k8s.io/kubernetes/cmd/kube-scheduler", b.Scheduler},
	} {
		if exists(c.out) {
			continue
		}
		fmt.Fprintf(log, "testcluster: building %s %s (the first one takes about 8 minutes)\n", filepath.Base(c.out), KubernetesVersion)
		if err := BuildKubernetes(c.pkg, c.out, KubernetesVersion, log); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// BuildKubernetes builds one command of k8s.io/kubernetes at KubernetesVersion and stamps
// it with the given version (which may be older, to present an older cluster honestly).
func BuildKubernetes(pkg, out, stampVersion string, log io.Writer) error {
	dir, err := CacheDir()
	if err != nil {
		return err
	}
	wrapper := filepath.Join(dir, "wrapper-k8s")
	if err := writeK8sWrapper(wrapper); err != nil {
		return err
	}
	major, minor, err := majorMinor(stampVersion)
	if err != nil {
		return err
	}
	ldflags := fmt.Sprintf("-s -w -X k8s.io/component-base/version.gitVersion=%s -X k8s.io/component-base/version.gitMajor=%s -X k8s.io/component-base/version.gitMinor=%s -X k8s.io/component-base/version.gitTreeState=clean",
		stampVersion, major, minor)
	tmp := out + ".tmp"
	cmd := exec.Command("go", "build", "-mod=mod", "-o", tmp, "-ldflags", ldflags, pkg)
	cmd.Dir = wrapper
	cmd.Env = goEnv()
	if err := run(cmd, log); err != nil {
		return fmt.Errorf("testcluster: build %s: %w", pkg, err)
	}
	return os.Rename(tmp, out)
}

func writeK8sWrapper(wrapper string) error {
	if exists(filepath.Join(wrapper, "go.mod")) {
		return nil
	}
	kdir, err := moduleDir("k8s.io/kubernetes", KubernetesVersion)
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(filepath.Join(kdir, "go.mod"))
	if err != nil {
		return fmt.Errorf("testcluster: read kubernetes go.mod: %w", err)
	}
	staging := strings.TrimPrefix(KubernetesVersion, "v1.")
	var gomod bytes.Buffer
	fmt.Fprintf(&gomod, "module runr.dev/testcluster-k8s\n\ngo 1.26\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n", KubernetesVersion)
	for _, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if i := strings.Index(line, " => ./staging/"); i > 0 {
			fmt.Fprintf(&gomod, "\t%s => %s v0.%s\n", line[:i], line[:i], staging)
		}
	}
	gomod.WriteString(")\n")
	if err := os.MkdirAll(wrapper, 0o755); err != nil {
		return fmt.Errorf("testcluster: %w", err)
	}
	return os.WriteFile(filepath.Join(wrapper, "go.mod"), gomod.Bytes(), 0o644)
}

// buildEtcd builds a main module of etcd at EtcdVersion (its go.mod replaces its sibling
// modules with local paths, so go install refuses it: a wrapper module requires it).
func buildEtcd(dir, module, out string, log io.Writer) error {
	wrapper := filepath.Join(dir, "wrapper-"+filepath.Base(out))
	if err := os.MkdirAll(wrapper, 0o755); err != nil {
		return fmt.Errorf("testcluster: %w", err)
	}
	v := EtcdVersion
	gomod := fmt.Sprintf(`module runr.dev/testcluster-etcd

go 1.26

require %[2]s %[1]s

replace (
	go.etcd.io/etcd/api/v3 => go.etcd.io/etcd/api/v3 %[1]s
	go.etcd.io/etcd/client/pkg/v3 => go.etcd.io/etcd/client/pkg/v3 %[1]s
	go.etcd.io/etcd/client/v3 => go.etcd.io/etcd/client/v3 %[1]s
	go.etcd.io/etcd/pkg/v3 => go.etcd.io/etcd/pkg/v3 %[1]s
	go.etcd.io/etcd/server/v3 => go.etcd.io/etcd/server/v3 %[1]s
)
`, v, module)
	if err := os.WriteFile(filepath.Join(wrapper, "go.mod"), []byte(gomod), 0o644); err != nil {
		return fmt.Errorf("testcluster: %w", err)
	}
	tmp := out + ".tmp"
	cmd := exec.Command("go", "build", "-mod=mod", "-o", tmp, "-ldflags", "-s -w", module)
	cmd.Dir = wrapper
	cmd.Env = goEnv()
	if err := run(cmd, log); err != nil {
		return fmt.Errorf("testcluster: build %s: %w", module, err)
	}
	return os.Rename(tmp, out)
}

// moduleDir downloads a module (if needed) and returns its directory in the module cache.
func moduleDir(path, version string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", path+"@"+version)
	cmd.Env = goEnv()
	cmd.Dir = os.TempDir()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("testcluster: go mod download %s@%s: %w: %s", path, version, err, stderr.String())
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(raw, &info); err != nil {
		return "", fmt.Errorf("testcluster: go mod download %s: %w", path, err)
	}
	if info.Error != "" || info.Dir == "" {
		return "", fmt.Errorf("testcluster: go mod download %s@%s: %s", path, version, info.Error)
	}
	return info.Dir, nil
}

func goEnv() []string {
	env := []string{}
	for _, kv := range os.Environ() {
		// The wrapper modules are their own main modules; the project's settings must not leak in.
		if strings.HasPrefix(kv, "GOFLAGS=") || strings.HasPrefix(kv, "GOWORK=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "GOWORK=off", "CGO_ENABLED=0")
}

func run(cmd *exec.Cmd, log io.Writer) error {
	var tail bytes.Buffer
	cmd.Stdout = io.MultiWriter(log, &tail)
	cmd.Stderr = io.MultiWriter(log, &tail)
	if err := cmd.Run(); err != nil {
		t := tail.String()
		if len(t) > 4000 {
			t = t[len(t)-4000:]
		}
		return fmt.Errorf("%w: %s", err, t)
	}
	return nil
}

func majorMinor(v string) (string, string, error) {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 2 {
		return "", "", fmt.Errorf("testcluster: bad version %q", v)
	}
	return parts[0], parts[1], nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
