// Package upgradetest repeats an upgrade of the console: the previous release (a git tag)
// creates data through its API, then this checkout migrates the database and takes over
// while a prober calls the API every 100 ms. `make upgrade-test` runs it (RUNR_UPGRADE_TEST=1).
package upgradetest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
)

// git runs git in the repository and returns its trimmed output.
func git(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", ".."}, args...)...).Output()
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

// previousTag is the release to upgrade from: RUNR_UPGRADE_FROM, else the newest release
// tag (vX.Y.Z) reachable from HEAD that is not HEAD's own.
func previousTag(t *testing.T) string {
	if v := os.Getenv("RUNR_UPGRADE_FROM"); v != "" {
		return v
	}
	own := map[string]bool{}
	if out, err := exec.Command("git", "-C", "..", "tag", "--points-at", "HEAD").Output(); err == nil {
		for _, tag := range strings.Fields(string(out)) {
			own[tag] = true
		}
	}
	var tags []string
	versions := map[string]*semver.Version{}
	for _, tag := range strings.Fields(git(t, "tag", "--merged", "HEAD")) {
		v, err := semver.StrictNewVersion(strings.TrimPrefix(tag, "v"))
		if err == nil && strings.HasPrefix(tag, "v") && !own[tag] {
			tags, versions[tag] = append(tags, tag), v
		}
	}
	if len(tags) == 0 {
		t.Fatal("no release tag (vX.Y.Z) before HEAD to upgrade from: tag one, or set RUNR_UPGRADE_FROM")
	}
	sort.Slice(tags, func(i, j int) bool { return versions[tags[i]].GreaterThan(versions[tags[j]]) })
	return tags[0]
}

// goBuild builds the runr binary of a source tree into out, stamped with a version.
func goBuild(t *testing.T, dir, out, version string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-ldflags", "-X main.version="+version, "-o", out, ".")
	cmd.Dir = dir
	if raw, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", version, err, raw)
	}
}

// buildTag builds the binary of a release tag from `git archive`, once per commit and
// stamped version (kept in the user cache dir: the tag's source does not change; the same
// commit named by its tag or by its hash reports different versions).
func buildTag(t *testing.T, tag string) string {
	commit := git(t, "rev-parse", tag+"^{commit}")
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(cache, "runr-upgrade-test", commit, strings.NewReplacer("/", "_", "\\", "_").Replace(tag), "runr")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	src := t.TempDir()
	archive := exec.Command("git", "-C", "..", "archive", "--format=tar", commit)
	untar := exec.Command("tar", "-x", "-C", src)
	var stderr bytes.Buffer
	archive.Stderr, untar.Stderr = &stderr, &stderr
	pipe, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	untar.Stdin = pipe
	if err := untar.Start(); err != nil {
		t.Fatal(err)
	}
	if err := archive.Run(); err != nil {
		t.Fatalf("git archive %s: %v %s", tag, err, stderr.String())
	}
	if err := untar.Wait(); err != nil {
		t.Fatalf("untar %s: %v %s", tag, err, stderr.String())
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := bin + fmt.Sprintf(".%d", os.Getpid())
	goBuild(t, src, tmp, tag)
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// buildCurrent builds this checkout's binary.
func buildCurrent(t *testing.T) (string, string) {
	version := git(t, "describe", "--tags", "--always", "--dirty")
	bin := filepath.Join(t.TempDir(), "runr")
	goBuild(t, "..", bin, version)
	return bin, version
}
