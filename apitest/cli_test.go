package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"runr.dev/console/store"
	"runr.dev/console/testcluster"
)

// cliUser runs the `runr` binary as an operator's terminal would, against a console's
// API (RUNR_URL and RUNR_TOKEN, a config directory of its own).
type cliUser struct {
	t   *testing.T
	env []string
}

func newCLIUser(t *testing.T, url, token string) *cliUser {
	env := []string{"HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"),
		"RUNR_URL=" + url, "RUNR_TOKEN=" + token}
	return &cliUser{t: t, env: env}
}

// run runs `runr args…` and returns stdout, stderr and the exit code.
func (u *cliUser) run(args ...string) (string, string, int) {
	u.t.Helper()
	cmd := exec.Command(runrBinary(u.t), args...)
	cmd.Env = u.env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return out.String(), errOut.String(), ee.ExitCode()
	case err != nil:
		u.t.Fatalf("runr %v: %v", args, err)
	}
	return out.String(), errOut.String(), 0
}

// must runs `runr args…` and fails the test unless it exits 0.
func (u *cliUser) must(args ...string) string {
	u.t.Helper()
	out, errOut, code := u.run(args...)
	if code != 0 {
		u.t.Fatalf("runr %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// TestCLIRegionOnCluster: an operator connects a cluster with the CLI alone, as the spec's
// terminal session does: check, create with an internal registry and --wait, Knative's
// versions and install, the status set to maintenance, all through the console's API.
func TestCLIRegionOnCluster(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	e := console(t, nil)
	base := e.Listen()
	_, tok := e.User("owner")
	ctx := context.Background()
	if err := e.Store.SetSetting(ctx, "base_domain", "example.test"); err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(t.TempDir(), "eu-2.yaml")
	if err := os.WriteFile(kc, c.Kubeconfig(), 0o600); err != nil {
		t.Fatal(err)
	}
	u := newCLIUser(t, base, tok)

	if out := u.must("regions", "check", "eu-2", "--kubeconfig", kc); !strings.Contains(out, "Kubernetes") || !strings.Contains(out, "standard") {
		t.Fatalf("check:\n%s", out)
	}
	out := u.must("regions", "create", "eu-2", "--kubeconfig", kc, "--registry", "internal", "--storage-class", "standard",
		"--storage-size", "5Gi", "--redis", "none", "--wait")
	t.Logf("runr regions create … --wait:\n%s", out)
	if !strings.Contains(out, "Region eu-2 created") || strings.Count(out, ": succeeded") != 2 || !strings.Contains(out, "✓") == strings.Contains(out, "\r") {
		t.Fatalf("create --wait:\n%s", out)
	}
	r, err := e.Store.RegionByName(ctx, "eu-2")
	if err != nil || r.RegistryStatus != store.ComponentReady || r.RegistryMode != store.RegistryInternal {
		t.Fatalf("registry after create --wait: %v %+v", err, r)
	}
	// A second create of the name: the console's 422, field by field, exit 1.
	_, errOut, code := u.run("regions", "create", "eu-2", "--kubeconfig", kc, "--redis", "none")
	if code != 1 || !strings.Contains(errOut, "  name: A region with this name exists already") {
		t.Fatalf("duplicate: exit %d %s", code, errOut)
	}

	if out := u.must("regions", "knative", "versions", "eu-2"); !strings.Contains(out, "1.23") || !strings.Contains(out, "yes") {
		t.Fatalf("versions:\n%s", out)
	}
	u.must("regions", "knative", "install", "eu-2", "--wait")
	var shown map[string]any
	if err := json.Unmarshal([]byte(u.must("regions", "show", "eu-2", "-o", "json")), &shown); err != nil || shown["serving_status"] != "ready" {
		t.Fatalf("after knative install: %v %v", err, shown["serving_status"])
	}
	out = u.must("regions", "set", "eu-2", "--set", "status=maintenance", "--set", "request_timeout=900", "--wait")
	if strings.Count(out, ": succeeded") != 2 {
		t.Fatalf("set --wait follows the status job and the settings job:\n%s", out)
	}
	ir := schema.GroupVersionResource{Group: "traefik.io", Version: "v1alpha1", Resource: "ingressroutes"}
	if _, err := c.DynamicGet(ctx, ir, "knative-serving", "runr-region-block-eu-2"); err != nil {
		t.Fatalf("the status block: %v", err)
	}
	if out := u.must("regions", "list"); !strings.Contains(out, "maintenance") {
		t.Fatalf("list:\n%s", out)
	}
	if out := u.must("jobs", "list", "--region", "eu-2"); strings.Count(out, "succeeded") < 4 {
		t.Fatalf("jobs:\n%s", out)
	}
}
