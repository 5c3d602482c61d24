package images

import (
	"archive/tar"
	"context"
	"crypto/x509"
	"encoding/pem"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// TestBuildIsReproducible builds the images twice from this checkout into two layouts:
// the digests are the same, the layout names them as containerd's import expects, and the
// images hold what they promise (the runr binary that reports the version, a CA bundle,
// the users) and run it as they say.
func TestBuildIsReproducible(t *testing.T) {
	ctx := context.Background()
	dirs := []string{filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")}
	var digests [][]string
	for _, d := range dirs {
		built, err := Build(ctx, Options{Version: "v9.8.7", OutDir: d})
		if err != nil {
			t.Fatal(err)
		}
		var ds []string
		for _, b := range built {
			ds = append(ds, b.Ref+"@"+b.Digest)
		}
		digests = append(digests, ds)
	}
	if strings.Join(digests[0], " ") != strings.Join(digests[1], " ") {
		t.Fatalf("two builds of the same source differ:\n%v\n%v", digests[0], digests[1])
	}
	want := []string{"ghcr.io/brf-tech/runr/console:9.8.7", "ghcr.io/brf-tech/runr/agent:9.8.7"}
	p, err := layout.FromPath(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 2 {
		t.Fatalf("the layout holds %d images", len(im.Manifests))
	}
	for i, m := range im.Manifests {
		if m.Annotations["io.containerd.image.name"] != want[i] || m.Annotations["org.opencontainers.image.ref.name"] != "9.8.7" {
			t.Fatalf("image %d is named %v", i, m.Annotations)
		}
		img, err := p.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		user, cmd := "65532:65532", "serve"
		if i == 1 {
			user, cmd = "0:0", "agent"
		}
		if cf.Config.User != user || strings.Join(cf.Config.Entrypoint, " ") != "/usr/local/bin/runr" || strings.Join(cf.Config.Cmd, " ") != cmd || cf.OS != "linux" {
			t.Fatalf("%s runs %+v", want[i], cf.Config)
		}
		layers, err := img.Layers()
		if err != nil || len(layers) != 1 {
			t.Fatalf("layers: %d %v", len(layers), err)
		}
		files := layerFiles(t, layers[0])
		for _, f := range []string{"usr/local/bin/runr", "etc/ssl/certs/ca-certificates.crt", "etc/passwd", "etc/group", "tmp/", "home/nonroot/"} {
			if _, ok := files[f]; !ok {
				t.Fatalf("%s lacks %s", want[i], f)
			}
		}
		if !strings.Contains(string(files["etc/passwd"]), "nonroot:x:65532:65532") {
			t.Fatalf("/etc/passwd: %s", files["etc/passwd"])
		}
		block, _ := pem.Decode(files["etc/ssl/certs/ca-certificates.crt"])
		if block == nil {
			t.Fatal("the CA bundle holds no certificate")
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			// The binary in the image is the console at the version.
			bin := filepath.Join(t.TempDir(), "runr")
			if err := os.WriteFile(bin, files["usr/local/bin/runr"], 0o755); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(bin, "version").Output()
			if err != nil || strings.TrimSpace(string(out)) != "v9.8.7" {
				t.Fatalf("runr version in the image: %q %v", out, err)
			}
		}
	}
}

// layerFiles reads a layer's entries (directories end with /).
func layerFiles(t *testing.T, l interface{ Uncompressed() (io.ReadCloser, error) }) map[string][]byte {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	out := map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.ModTime.Unix() != 0 || h.Uid != 0 && h.Name != "home/nonroot/" {
			t.Fatalf("%s: time %v, owner %d: not reproducible", h.Name, h.ModTime, h.Uid)
		}
		raw, _ := io.ReadAll(tr)
		out[h.Name] = raw
	}
}
