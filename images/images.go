// Package images builds the console's OCI images without a container engine: the static
// `runr` binary in one layer with a CA bundle and the users it runs as, assembled with
// go-containerregistry. The same source and version give the same digests (every file has
// a fixed time and owner, the binary is built with -trimpath, and the CA bundle comes from
// a pinned Go module rather than from the machine).
package images

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"

	"runr.dev/console/config"
)

// Repository is where a release publishes the console's images.
const Repository = config.ImageRepository

// The console's images: one binary, two defaults.
const (
	// Console runs `runr serve` as an unprivileged user: the console, its migration and
	// bootstrap Jobs (deploy/chart).
	Console = "console"
	// Agent runs as root, for what the console deploys into a region: the runr-agent,
	// the node mirror, the image pre-pull, the status responder, the domain alias proxy,
	// the KVM probe, the gVisor installer and containerd's restart (the node helpers need
	// root; the Deployments among them set their own unprivileged user).
	Agent = "agent"
)

// Names are the console's images, in the order they are built.
var Names = []string{Console, Agent}

// Ref is the reference of one of the console's images under a repository at a version.
func Ref(repository, image, version string) string {
	return strings.TrimRight(repository, "/") + "/" + image + ":" + config.ImageTag(version)
}

// epoch is every file's and image's time: images of the same source are the same bytes.
var epoch = time.Unix(0, 0).UTC()

// NonRootUID is the console image's user (distroless's nonroot).
const NonRootUID = 65532

// Options say what Build builds.
type Options struct {
	// Version is stamped into the binary (main.version) and is the images' tag.
	Version string
	// ModuleDir is the console's source (the module root); default: found from the
	// working directory.
	ModuleDir string
	// OutDir receives the OCI image layout (default bin/images under ModuleDir).
	OutDir string
	// NoLayout writes no layout (the images are returned, and pushed with Push).
	NoLayout bool
	// Push, when set, is a repository the images are pushed to as well
	// (e.g. ghcr.io/brf-tech/runr, or 127.0.0.1:5000/brf-tech/runr).
	Push string
	// Arch is the CPU architecture (default this machine's).
	Arch string
	// Log receives progress lines (nil: none).
	Log io.Writer
}

// Built is one image that Build made.
type Built struct {
	Name   string // console or agent
	Ref    string // under Repository
	Digest string
	Image  v1.Image
}

// Build builds the runr binary and the console's images, writes them to an OCI image
// layout and, with Push, pushes them.
func Build(ctx context.Context, o Options) ([]Built, error) {
	if o.Version == "" {
		return nil, fmt.Errorf("images: a version is required")
	}
	if o.Arch == "" {
		o.Arch = runtime.GOARCH
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.ModuleDir == "" {
		dir, err := moduleRoot()
		if err != nil {
			return nil, err
		}
		o.ModuleDir = dir
	}
	if o.OutDir == "" {
		o.OutDir = filepath.Join(o.ModuleDir, "bin", "images")
	}
	tmp, err := os.MkdirTemp("", "runr-images-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "runr")
	fmt.Fprintf(o.Log, "images: building runr %s for linux/%s\n", o.Version, o.Arch)
	if err := GoBuild(ctx, o.ModuleDir, ".", bin, o.Arch, "-X main.version="+o.Version); err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	imgs, err := consoleImages(raw, o.Version, o.Arch)
	if err != nil {
		return nil, err
	}
	if !o.NoLayout {
		if err := WriteLayout(o.OutDir, imgs); err != nil {
			return nil, err
		}
	}
	for _, b := range imgs {
		fmt.Fprintf(o.Log, "images: %s %s\n", b.Ref, b.Digest)
	}
	if o.Push != "" {
		for _, b := range imgs {
			ref := Ref(o.Push, b.Name, o.Version)
			if err := Push(ctx, ref, b.Image); err != nil {
				return nil, err
			}
			fmt.Fprintf(o.Log, "images: pushed %s\n", ref)
		}
	}
	return imgs, nil
}

// consoleImages assembles the console and agent images around the binary.
func consoleImages(runr []byte, version, arch string) ([]Built, error) {
	ca, err := caBundle()
	if err != nil {
		return nil, err
	}
	layer, err := Layer([]File{
		{Path: "etc/passwd", Data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"), Mode: 0o644},
		{Path: "etc/group", Data: []byte("root:x:0:\nnonroot:x:65532:\n"), Mode: 0o644},
		{Path: "etc/ssl/certs/ca-certificates.crt", Data: ca, Mode: 0o644},
		{Path: "home/nonroot", Dir: true, Mode: 0o755, UID: NonRootUID},
		{Path: "root", Dir: true, Mode: 0o700},
		{Path: "tmp", Dir: true, Mode: 0o1777},
		{Path: "usr/local/bin/runr", Data: runr, Mode: 0o755},
	})
	if err != nil {
		return nil, err
	}
	var out []Built
	for _, n := range Names {
		cfg := Config{
			Arch: arch, Entrypoint: []string{"/usr/local/bin/runr"},
			Env: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
			Labels: map[string]string{
				"org.opencontainers.image.title":   "runr " + n,
				"org.opencontainers.image.source":  "https://github.com/brf-tech/runr",
				"org.opencontainers.image.version": config.ImageTag(version),
			},
		}
		switch n {
		case Console:
			cfg.User, cfg.Cmd, cfg.WorkDir = fmt.Sprintf("%d:%d", NonRootUID, NonRootUID), []string{"serve"}, "/home/nonroot"
		case Agent:
			cfg.User, cfg.Cmd, cfg.WorkDir = "0:0", []string{"agent"}, "/"
		}
		img, err := Image([]v1.Layer{layer}, cfg)
		if err != nil {
			return nil, err
		}
		d, err := img.Digest()
		if err != nil {
			return nil, err
		}
		out = append(out, Built{Name: n, Ref: Ref(Repository, n, version), Digest: d.String(), Image: img})
	}
	return out, nil
}

// caBundle is Mozilla's roots (golang.org/x/crypto/x509roots) as a PEM file; roots that
// carry constraints a file cannot express are left out, as distributions do.
func caBundle() ([]byte, error) {
	var b bytes.Buffer
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		if _, err := x509.ParseCertificate(r.Certificate); err != nil {
			return nil, fmt.Errorf("images: CA bundle: %w", err)
		}
		pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate})
	}
	return b.Bytes(), nil
}

// File is one entry of a layer.
type File struct {
	Path string // without a leading slash
	Data []byte
	Mode int64
	Dir  bool
	UID  int
	// Link, when set, makes the entry a symbolic link to it.
	Link string
}

// Layer is a reproducible layer of files: sorted, with the parent directories, owned by
// root unless said otherwise, all at the same time.
func Layer(files []File) (v1.Layer, error) {
	dirs := map[string]bool{}
	entries := map[string]File{}
	for _, f := range files {
		f.Path = strings.Trim(f.Path, "/")
		entries[f.Path] = f
		for d := filepath.Dir(f.Path); d != "." && d != "/"; d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	for d := range dirs {
		if _, ok := entries[d]; !ok {
			entries[d] = File{Path: d, Dir: true, Mode: 0o755}
		}
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		f := entries[n]
		h := &tar.Header{Name: f.Path, Mode: f.Mode, ModTime: epoch, Uid: f.UID, Gid: f.UID, Format: tar.FormatPAX}
		switch {
		case f.Dir:
			h.Typeflag, h.Name = tar.TypeDir, f.Path+"/"
		case f.Link != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, f.Link
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("images: layer %s: %w", f.Path, err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, fmt.Errorf("images: layer %s: %w", f.Path, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	raw := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil },
		tarball.WithMediaType(types.OCILayer))
}

// Config is what an image runs.
type Config struct {
	Arch       string
	User       string
	Entrypoint []string
	Cmd        []string
	Env        []string
	WorkDir    string
	Labels     map[string]string
}

// Image is an OCI image of layers and a configuration, at the fixed time.
func Image(layers []v1.Layer, c Config) (v1.Image, error) {
	if c.Arch == "" {
		c.Arch = runtime.GOARCH
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layers...)
	if err != nil {
		return nil, fmt.Errorf("images: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS, cf.Created = c.Arch, "linux", v1.Time{Time: epoch}
	cf.Config.User, cf.Config.Entrypoint, cf.Config.Cmd, cf.Config.Env, cf.Config.WorkingDir, cf.Config.Labels =
		c.User, c.Entrypoint, c.Cmd, c.Env, c.WorkDir, c.Labels
	cf.History = nil
	return mutate.ConfigFile(img, cf)
}

// WriteLayout writes images to an OCI image layout at dir (replacing what was there), each
// named as containerd's import and the OCI spec expect.
func WriteLayout(dir string, imgs []Built) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("images: write the layout %s: %w", dir, err)
	}
	for _, b := range imgs {
		_, tag, _ := strings.Cut(b.Ref[strings.LastIndex(b.Ref, "/")+1:], ":")
		if err := p.AppendImage(b.Image, layout.WithAnnotations(map[string]string{
			"org.opencontainers.image.ref.name": tag,
			"io.containerd.image.name":          b.Ref,
		})); err != nil {
			return fmt.Errorf("images: write %s: %w", b.Ref, err)
		}
	}
	return nil
}

// Push pushes an image to ref; a registry on a loopback address is spoken to over plain HTTP.
func Push(ctx context.Context, ref string, img v1.Image) error {
	var opts []name.Option
	if host := strings.SplitN(ref, "/", 2)[0]; strings.HasPrefix(host, "127.") || strings.HasPrefix(host, "localhost") || strings.HasPrefix(host, "[::1]") {
		opts = append(opts, name.Insecure)
	}
	r, err := name.ParseReference(ref, opts...)
	if err != nil {
		return fmt.Errorf("images: %s: %w", ref, err)
	}
	if err := remote.Write(r, img, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return fmt.Errorf("images: push %s: %w", ref, err)
	}
	return nil
}

// GoBuild builds a package of the module at dir (the working directory when empty) as a
// static Linux binary, reproducibly.
func GoBuild(ctx context.Context, dir, pkg, out, arch, ldflags string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags", "-s -w "+ldflags, "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if raw, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("images: go build %s: %w\n%s", pkg, err, raw)
	}
	return nil
}

// moduleRoot is the directory of the main module of the working directory.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("images: go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("images: not inside the console's module")
	}
	return filepath.Dir(gomod), nil
}
