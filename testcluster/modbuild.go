package testcluster

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

// moduleBuild is a build of programs of a Go module at a version, once per machine, into a
// folder of the cache dir: Traefik and Knative, which the real node runs.
type moduleBuild struct {
	// What is the build, as the log says it ("Traefik v3.6.12").
	What string
	// Module and Version name the module built; its own directory in the module cache is
	// the main module (its go.mod's replace directives apply, as upstream builds).
	Module, Version string
	// Out is the folder of the cache dir the programs land in.
	Out string
	// Packages are the packages built (relative to the module, or import paths of its
	// dependencies); each program is named after its package's last element.
	Packages []string
	// LDFlags are the linker flags ("-s -w" is always added).
	LDFlags string
}

// dir returns the build's folder in the cache dir.
func (b moduleBuild) dir() (string, error) {
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, "bin", b.Out), nil
}

// built reports whether this machine has the build.
func (b moduleBuild) built() bool {
	dir, err := b.dir()
	return err == nil && exists(filepath.Join(dir, ".complete"))
}

// run builds the programs unless the cache has them, and returns their folder.
func (b moduleBuild) run(log io.Writer) (string, error) {
	if log == nil {
		log = io.Discard
	}
	dir, err := b.dir()
	if err != nil {
		return "", err
	}
	done := filepath.Join(dir, ".complete")
	if exists(done) {
		return dir, nil
	}
	cache, _ := CacheDir()
	unlock, err := lockFile(filepath.Join(cache, "build.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if exists(done) {
		return dir, nil
	}
	src, err := moduleDir(b.Module, b.Version)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(log, "testcluster: building %s (a few minutes the first time)\n", b.What)
	tmp := dir + ".tmp"
	os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", err
	}
	args := append([]string{"build", "-mod=mod", "-trimpath", "-o", tmp + "/", "-ldflags", "-s -w " + b.LDFlags}, b.Packages...)
	cmd := exec.Command("go", args...)
	cmd.Dir = src
	cmd.Env = goEnv()
	if err := run(cmd, log); err != nil {
		return "", fmt.Errorf("testcluster: build %s: %w", b.What, err)
	}
	if err := os.WriteFile(filepath.Join(tmp, ".complete"), nil, 0o644); err != nil {
		return "", err
	}
	os.RemoveAll(dir)
	return dir, os.Rename(tmp, dir)
}
