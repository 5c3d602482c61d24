package testcluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// TraefikVersion is the Traefik the harness builds from its Go module for the real node:
// the newest these machines can build. The console's pin (the traefik chart's appVersion,
// v3.7.4) is refused by the module proxy, and v3.7's newer releases need modules it
// refuses too (lego v5's DNS providers) and a nested module its zip lacks.
const TraefikVersion = "v3.6.12"

// TraefikImage is the harness's Traefik image in the cluster's registry (a test points
// the console's RUNR_TRAEFIK_IMAGE at it): the static binary as its entrypoint.
const TraefikImage = "ghcr.io/brf-tech/runr-testing/traefik:" + TraefikVersion

var (
	traefikOnce sync.Once
	traefikBin  string
	traefikErr  error
)

// TraefikBuilt reports whether this machine has Traefik built (BuildTraefik), or is told to
// build it (RUNR_TEST_REAL=1, make test-real): its first build takes about 10 minutes,
// beyond what `make test` on a fresh machine has room for.
func TraefikBuilt() bool {
	if os.Getenv("RUNR_TEST_REAL") != "" {
		return true
	}
	dir, err := CacheDir()
	return err == nil && exists(filepath.Join(dir, "bin", "traefik-"+TraefikVersion))
}

// BuildTraefik builds Traefik from its Go module once into the cache dir (about 10 minutes
// on a machine's first run, 3 with a warm build cache) and returns the binary.
func BuildTraefik(log io.Writer) (string, error) {
	traefikOnce.Do(func() { traefikBin, traefikErr = buildTraefik(log) })
	return traefikBin, traefikErr
}

func buildTraefik(log io.Writer) (string, error) {
	if log == nil {
		log = io.Discard
	}
	dir, err := CacheDir()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "bin", "traefik-"+TraefikVersion)
	if exists(out) {
		return out, nil
	}
	unlock, err := lockFile(filepath.Join(dir, "build.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if exists(out) {
		return out, nil
	}
	src, err := moduleDir("github.com/traefik/traefik/v3", TraefikVersion)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(log, "testcluster: building Traefik %s (a few minutes)\n", TraefikVersion)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", err
	}
	tmp := out + ".tmp"
	// Built in the module's own directory: its go.mod holds replace directives that a
	// wrapper module would not apply.
	cmd := exec.Command("go", "build", "-mod=mod", "-trimpath", "-o", tmp,
		"-ldflags", "-s -w -X github.com/traefik/traefik/v3/pkg/version.Version="+TraefikVersion, "./cmd/traefik")
	cmd.Dir = src
	cmd.Env = goEnv()
	if err := run(cmd, log); err != nil {
		return "", fmt.Errorf("testcluster: build Traefik %s: %w", TraefikVersion, err)
	}
	return out, os.Rename(tmp, out)
}

// PushTraefik builds Traefik (BuildTraefik) and puts it into the cluster's registry as
// TraefikImage.
func (c *Cluster) PushTraefik(ctx context.Context, log io.Writer) error {
	bin, err := BuildTraefik(log)
	if err != nil {
		return err
	}
	return c.pushProgram(ctx, TraefikImage, bin)
}
