package testcluster

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"runr.dev/console/images"
)

// Images of programs installed on this machine from Debian's packages, for the scripts the
// console runs in Jobs (a shell with curl, with redis-cli): each program with the shared
// libraries ldd names, and dash as /bin/sh. The cluster's registry serves them under the
// names the console uses; their versions are Debian bookworm's (curl 7.88, Redis 7.0), not
// the upstream images'. make test installs the packages.

// HostProgram is a program of this machine put into an image (at Path, or at As).
type HostProgram struct {
	Path string // on this machine
	As   string // its path in the image (default Path)
}

// HostImageSpec is an image of programs of this machine.
type HostImageSpec struct {
	Ref        string
	Programs   []HostProgram
	Entrypoint []string
	Cmd        []string
	// Trees are folders of this machine copied whole (a language's standard library), with
	// the libraries their shared objects load.
	Trees []HostTree
	// Scripts are shell scripts written into the image, by path.
	Scripts map[string]string
	// Packages are the Debian packages the programs come from (for the error when missing).
	Packages []string
}

// HostTree is a folder of this machine copied into an image, but for the entries named in Skip.
type HostTree struct {
	Path string
	Skip []string // patterns (filepath.Match) of names of files or folders left out wherever they are
}

// CurlImage is the image the console's registry checks run (curl, with a shell).
var CurlImage = HostImageSpec{Ref: "curlimages/curl:8.11.1", Entrypoint: []string{"/usr/bin/curl"},
	Programs: []HostProgram{{Path: "/usr/bin/curl"}}, Packages: []string{"curl"}}

// RedisImage is RunR's Redis image (RUNR_REDIS_IMAGE's default) as Debian's redis-tools
// gives it: the server (shipped as redis-check-rdb, which runs as the server under the name
// redis-server) and redis-cli, started as the official image starts: its entrypoint runs
// redis-server when the arguments begin with a flag (docker-library/redis,
// docker-entrypoint.sh), which is how the console's managed Redis passes its password.
var RedisImage = HostImageSpec{Ref: "ghcr.io/brf-tech/runr/reqs/redis:7.4",
	Entrypoint: []string{"docker-entrypoint.sh"}, Cmd: []string{"redis-server"},
	Programs: []HostProgram{{Path: "/usr/bin/redis-check-rdb", As: "/usr/bin/redis-server"}, {Path: "/usr/bin/redis-cli"}},
	Scripts: map[string]string{"/usr/local/bin/docker-entrypoint.sh": "#!/bin/sh\nset -e\n" +
		"if [ \"${1#-}\" != \"$1\" ] || [ \"${1%.conf}\" != \"$1\" ]; then set -- redis-server \"$@\"; fi\nexec \"$@\"\n"},
	Packages: []string{"redis-tools"}}

// PushHostImage builds an image of programs of this machine and puts it into the cluster's
// registry under spec.Ref (or ref, when given).
func (c *Cluster) PushHostImage(ctx context.Context, spec HostImageSpec, ref string) error {
	if ref == "" {
		ref = spec.Ref
	}
	img, err := HostImage(spec)
	if err != nil {
		return err
	}
	return c.Registry.Push(ctx, ref, img)
}

// HostImage builds the image of a spec: its programs, the libraries they load, /bin/sh.
func HostImage(spec HostImageSpec) (v1.Image, error) {
	progs := append([]HostProgram{{Path: "/usr/bin/dash", As: "/bin/sh"}}, spec.Programs...)
	files := map[string]images.File{}
	for _, p := range progs {
		if !exists(p.Path) {
			return nil, fmt.Errorf("testcluster: image %s needs %s (apt-get install %s)", spec.Ref, p.Path, strings.Join(spec.Packages, " "))
		}
		as := p.As
		if as == "" {
			as = p.Path
		}
		if err := addHostFile(files, p.Path, as, 0o755); err != nil {
			return nil, err
		}
		libs, err := sharedLibraries(p.Path)
		if err != nil {
			return nil, err
		}
		for _, lib := range libs {
			if err := addHostFile(files, lib, lib, 0o755); err != nil {
				return nil, err
			}
		}
	}
	for _, tree := range spec.Trees {
		if err := addHostTree(files, tree); err != nil {
			return nil, err
		}
	}
	for path, script := range spec.Scripts {
		as := strings.TrimPrefix(path, "/")
		files[as] = images.File{Path: as, Data: []byte(script), Mode: 0o755}
	}
	list := make([]images.File, 0, len(files))
	for _, f := range files {
		list = append(list, f)
	}
	layer, err := images.Layer(append(list, images.File{Path: "tmp", Dir: true, Mode: 0o1777}))
	if err != nil {
		return nil, err
	}
	return images.Image([]v1.Layer{layer}, images.Config{Entrypoint: spec.Entrypoint, Cmd: spec.Cmd,
		Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}})
}

// addHostTree adds a folder's files (through their symbolic links; broken ones left out)
// and the libraries its shared objects load.
func addHostTree(files map[string]images.File, tree HostTree) error {
	return filepath.WalkDir(tree.Path, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if slices.ContainsFunc(tree.Skip, func(p string) bool { ok, _ := filepath.Match(p, d.Name()); return ok }) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		if _, err := os.Stat(path); err != nil {
			return nil // a broken link
		}
		if err := addHostFile(files, path, path, 0o644); err != nil {
			return err
		}
		if !strings.HasSuffix(path, ".so") {
			return nil
		}
		libs, err := sharedLibraries(path)
		if err != nil {
			return err
		}
		for _, lib := range libs {
			if err := addHostFile(files, lib, lib, 0o755); err != nil {
				return err
			}
		}
		return nil
	})
}

// PythonImage is the image the demo projects' Python programs run in (the console's
// RUNR_DEMO_IMAGE, python:3.13-alpine upstream) as Debian's python3 gives it: the
// interpreter at /usr/bin/python3 and its standard library (without the parts for
// building, packaging, documentation and Tk). Its version is Debian bookworm's (3.11).
func PythonImage() (HostImageSpec, error) {
	bin, err := filepath.EvalSymlinks("/usr/bin/python3")
	if err != nil {
		return HostImageSpec{}, fmt.Errorf("testcluster: the Python image needs /usr/bin/python3 (apt-get install python3): %w", err)
	}
	return HostImageSpec{Ref: "ghcr.io/brf-tech/runr/reqs/python:3.13-alpine", Entrypoint: []string{"/usr/bin/python3"},
		Programs: []HostProgram{{Path: bin, As: "/usr/bin/python3"}},
		Trees:    []HostTree{{Path: "/usr/lib/" + filepath.Base(bin), Skip: []string{"config-*", "lib2to3", "pydoc_data", "distutils", "ensurepip", "idlelib", "tkinter", "turtledemo", "test", "tests", "site-packages", "dist-packages"}}},
		Packages: []string{"python3"}}, nil
}

// addHostFile reads a file of this machine (through its symbolic links) into the layer at as.
func addHostFile(files map[string]images.File, path, as string, mode int64) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("testcluster: %w", err)
	}
	as = strings.TrimPrefix(filepath.Clean(as), "/")
	files[as] = images.File{Path: as, Data: raw, Mode: mode}
	return nil
}

// sharedLibraries are the libraries ldd says a program loads, the dynamic loader included.
func sharedLibraries(program string) ([]string, error) {
	out, err := exec.Command("ldd", program).Output()
	if err != nil {
		if bytes.Contains(out, []byte("not a dynamic executable")) {
			return nil, nil
		}
		return nil, fmt.Errorf("testcluster: ldd %s: %w", program, err)
	}
	var libs []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
			libs = append(libs, f[2])
		case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
			libs = append(libs, f[0])
		}
	}
	return libs, nil
}
