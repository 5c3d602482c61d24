package testcluster

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"runr.dev/console/images"
)

// KnativeRelease is the Knative the harness builds for the real node: the newest minor the
// console offers, from the Go modules knative.dev/operator and knative.dev/serving at
// knativeModuleVersion (Knative 1.23's modules; the operator's kodata carries Serving
// 1.23.0's release manifests).
const KnativeRelease = "1.23.0"

const knativeModuleVersion = "v0.50.0"

// KnativeImages is where Knative's release images live: the release manifests name them
// gcr.io/knative-releases/<import path of the program>.
const KnativeImages = "gcr.io/knative-releases/"

// knativeOperatorBuild and knativeServingBuild build the operator (and its webhook) and
// Serving's programs, each in its module's own directory. The storage version migration
// (a post-install Job of Serving) is knative.dev/pkg's, at the version Serving requires.
var (
	knativeOperatorBuild = moduleBuild{What: "the Knative Operator " + KnativeRelease, Module: "knative.dev/operator", Version: knativeModuleVersion,
		Out: "knative-operator-" + knativeModuleVersion, Packages: []string{"./cmd/operator", "./cmd/webhook"}}
	knativeServingBuild = moduleBuild{What: "Knative Serving " + KnativeRelease, Module: "knative.dev/serving", Version: knativeModuleVersion,
		Out: "knative-serving-" + knativeModuleVersion, Packages: []string{"./cmd/activator", "./cmd/autoscaler", "./cmd/autoscaler-hpa",
			"./cmd/controller", "./cmd/webhook", "./cmd/queue", "./pkg/cleanup/cmd/cleanup", "knative.dev/pkg/apiextensions/storageversion/cmd/migrate"}}
)

// knativeImagePaths are the image paths (under KnativeImages) of the programs built, by
// build and program name.
var knativeImagePaths = []struct {
	build         *moduleBuild
	program, path string
}{
	{&knativeOperatorBuild, "operator", "knative.dev/operator/cmd/operator"},
	{&knativeOperatorBuild, "webhook", "knative.dev/operator/cmd/webhook"},
	{&knativeServingBuild, "activator", "knative.dev/serving/cmd/activator"},
	{&knativeServingBuild, "autoscaler", "knative.dev/serving/cmd/autoscaler"},
	{&knativeServingBuild, "autoscaler-hpa", "knative.dev/serving/cmd/autoscaler-hpa"},
	{&knativeServingBuild, "controller", "knative.dev/serving/cmd/controller"},
	{&knativeServingBuild, "webhook", "knative.dev/serving/cmd/webhook"},
	{&knativeServingBuild, "queue", "knative.dev/serving/cmd/queue"},
	{&knativeServingBuild, "cleanup", "knative.dev/serving/pkg/cleanup/cmd/cleanup"},
	{&knativeServingBuild, "migrate", "knative.dev/pkg/apiextensions/storageversion/cmd/migrate"},
}

// KnativeBuilt reports whether this machine has Knative built (BuildKnative), or is told to
// build it (RUNR_TEST_REAL=1, make test-real).
func KnativeBuilt() bool {
	return os.Getenv("RUNR_TEST_REAL") != "" || knativeOperatorBuild.built() && knativeServingBuild.built()
}

// BuildKnative builds the Knative Operator and Serving from their Go modules once into the
// cache dir.
func BuildKnative(log io.Writer) error {
	for _, b := range []moduleBuild{knativeOperatorBuild, knativeServingBuild} {
		if _, err := b.run(log); err != nil {
			return err
		}
	}
	return nil
}

// PushKnative builds Knative (BuildKnative) and puts its images into the cluster's registry
// under the names its release manifests and its chart give them, tagged v<release>, as
// ko builds them: the program at /ko-app/<name> run as the non-root user 65532, and the
// operator's kodata (the release manifests it installs) at KO_DATA_PATH.
func (c *Cluster) PushKnative(ctx context.Context, log io.Writer) error {
	if err := BuildKnative(log); err != nil {
		return err
	}
	operatorSrc, err := moduleDir(knativeOperatorBuild.Module, knativeOperatorBuild.Version)
	if err != nil {
		return err
	}
	for _, p := range knativeImagePaths {
		dir, err := p.build.dir()
		if err != nil {
			return err
		}
		var kodata string
		if p.program == "operator" {
			kodata = filepath.Join(operatorSrc, "cmd", "operator", "kodata")
		}
		img, err := koImage(filepath.Join(dir, p.program), kodata)
		if err != nil {
			return err
		}
		if err := c.Registry.Push(ctx, KnativeImages+p.path+":v"+KnativeRelease, img); err != nil {
			return err
		}
	}
	return nil
}

// koImage is an image of a program as ko lays it out, with a kodata folder when given.
func koImage(bin, kodata string) (v1.Image, error) {
	raw, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	name := filepath.Base(bin)
	files := []images.File{{Path: "ko-app/" + name, Data: raw, Mode: 0o755}}
	if kodata != "" {
		err := filepath.WalkDir(kodata, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(kodata, p)
			files = append(files, images.File{Path: path.Join("var/run/ko", filepath.ToSlash(rel)), Data: data, Mode: 0o644})
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("testcluster: kodata of %s: %w", name, err)
		}
	}
	layer, err := images.Layer(files)
	if err != nil {
		return nil, err
	}
	return images.Image([]v1.Layer{layer}, images.Config{User: "65532", Entrypoint: []string{"/ko-app/" + name},
		Env: []string{"PATH=/ko-app", "KO_DATA_PATH=/var/run/ko"}})
}
