package testcluster

import (
	"context"
	"io"
	"os"
	"path/filepath"
)

// TraefikVersion is the Traefik the harness builds from its Go module for the real node:
// the newest these machines can build. The console's pin (the traefik chart's appVersion,
// v3.7.4) is refused by the module proxy, and v3.7's newer releases need modules it
// refuses too (lego v5's DNS providers) and a nested module its zip lacks.
const TraefikVersion = "v3.6.12"

// TraefikImage is the harness's Traefik image in the cluster's registry (a test points
// the console's RUNR_TRAEFIK_IMAGE at it): the static binary as its entrypoint.
const TraefikImage = "ghcr.io/brf-tech/runr-testing/traefik:" + TraefikVersion

// traefikBuild builds Traefik in its module's own directory: its go.mod holds replace
// directives that a wrapper module would not apply.
var traefikBuild = moduleBuild{What: "Traefik " + TraefikVersion, Module: "github.com/traefik/traefik/v3", Version: TraefikVersion,
	Out: "traefik-" + TraefikVersion + ".d", Packages: []string{"./cmd/traefik"},
	LDFlags: "-X github.com/traefik/traefik/v3/pkg/version.Version=" + TraefikVersion}

// TraefikBuilt reports whether this machine has Traefik built (BuildTraefik), or is told to
// build it (RUNR_TEST_REAL=1, make test-real): its first build takes about 10 minutes,
// beyond what `make test` on a fresh machine has room for.
func TraefikBuilt() bool {
	return os.Getenv("RUNR_TEST_REAL") != "" || traefikBuild.built()
}

// BuildTraefik builds Traefik from its Go module once into the cache dir (about 10 minutes
// on a machine's first run, 3 with a warm build cache) and returns the binary.
func BuildTraefik(log io.Writer) (string, error) {
	dir, err := traefikBuild.run(log)
	return filepath.Join(dir, "traefik"), err
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
