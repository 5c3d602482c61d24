package testcluster

import (
	"context"
	"io"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"runr.dev/console/images"
)

// MailpitVersion is the Mailpit the harness builds from its Go module for the demo's SMTP
// catcher on the real node (the console's RUNR_DEMO_SMTP_IMAGE). Its web interface's
// compiled assets are not in the module, so its page is bare; SMTP and its API work.
const MailpitVersion = "v1.33.1"

var mailpitBuild = moduleBuild{What: "Mailpit " + MailpitVersion, Module: "github.com/axllent/mailpit", Version: MailpitVersion,
	Out: "mailpit-" + MailpitVersion + ".d", Packages: []string{"."},
	LDFlags: "-X github.com/axllent/mailpit/config.Version=" + MailpitVersion}

// BuildMailpit builds Mailpit from its Go module once into the cache dir (about a minute)
// and returns the binary.
func BuildMailpit(log io.Writer) (string, error) {
	dir, err := mailpitBuild.run(log)
	return filepath.Join(dir, "mailpit"), err
}

// PushMailpit builds Mailpit (BuildMailpit) and puts it into the cluster's registry as ref.
func (c *Cluster) PushMailpit(ctx context.Context, ref string, log io.Writer) error {
	bin, err := BuildMailpit(log)
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	// Mailpit keeps its messages in a database under the temporary directory.
	layer, err := images.Layer([]images.File{{Path: "mailpit", Data: raw, Mode: 0o755}, {Path: "tmp", Dir: true, Mode: 0o1777}})
	if err != nil {
		return err
	}
	img, err := images.Image([]v1.Layer{layer}, images.Config{Entrypoint: []string{"/mailpit"}})
	if err != nil {
		return err
	}
	return c.Registry.Push(ctx, ref, img)
}
