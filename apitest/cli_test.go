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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"runr.dev/console/ops/domains"
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

// TestCLIRegionSubcommands runs the `runr regions …` subcommands the spec names that
// TestCLIRegionOnCluster does not (create --inactive, registry test|set|rm, redis
// set|test|rm, function-tls set|rm, migration start|status|rollback with --data-location,
// demo rm, rm), each against the console's API, and checks what each changed.
func TestCLIRegionSubcommands(t *testing.T) {
	a := testcluster.New(t, testcluster.Options{})
	b := testcluster.New(t, testcluster.Options{})
	e := console(t, nil)
	_, tok := e.User("owner")
	ctx := context.Background()
	if err := e.Store.SetSetting(ctx, "base_domain", "example.test"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	kcA, kcB := file("a.yaml", a.Kubeconfig()), file("b.yaml", b.Kubeconfig())
	u := newCLIUser(t, e.Listen(), tok)
	region := func() *store.Region {
		t.Helper()
		r, err := e.Store.RegionByName(ctx, "lab")
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// fails runs a command that must exit 1 and returns what it wrote to stderr.
	fails := func(args ...string) string {
		t.Helper()
		out, errOut, code := u.run(args...)
		if code != 1 {
			t.Fatalf("runr %s: exit %d, want 1\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
		return errOut
	}

	u.must("regions", "create", "lab", "--kubeconfig", kcA, "--registry", "none", "--redis", "none", "--inactive", "--wait")
	if r := region(); r.Status != store.RegionInactive {
		t.Fatalf("create --inactive: status %s", r.Status)
	}

	// registry test (installs nothing), set, rm.
	storage := []string{"--registry", "internal", "--storage-class", "standard", "--storage-size", "5Gi"}
	if out := u.must(append([]string{"regions", "registry", "test", "lab"}, storage...)...); !strings.Contains(out, "succeeded") {
		t.Fatalf("registry test:\n%s", out)
	}
	if r := region(); r.RegistryMode != store.RegistryNone {
		t.Fatalf("registry test changed the registry: %s", r.RegistryMode)
	}
	u.must(append([]string{"regions", "registry", "set", "lab", "--wait"}, storage...)...)
	if r := region(); r.RegistryMode != store.RegistryInternal || r.RegistryStatus != store.ComponentReady {
		t.Fatalf("registry set: %s %s", r.RegistryMode, r.RegistryStatus)
	}
	u.must("regions", "registry", "rm", "lab", "--wait")
	if r := region(); r.RegistryMode != store.RegistryNone {
		t.Fatalf("registry rm: %s", r.RegistryMode)
	}

	// redis test without a Redis is refused; set an external one, test it, remove it.
	if errOut := fails("regions", "redis", "test", "lab"); !strings.Contains(errOut, "no Redis to test") {
		t.Fatalf("redis test without a Redis: %s", errOut)
	}
	u.must("regions", "redis", "set", "lab", "--mode", "external", "--address", "redis.example.test:6379", "--wait")
	if r := region(); r.RedisMode != store.RedisExternal || r.RedisAddress != "redis.example.test:6379" {
		t.Fatalf("redis set: %s %s", r.RedisMode, r.RedisAddress)
	}
	if out := u.must("regions", "redis", "test", "lab"); !strings.Contains(out, "Test the Redis of lab") {
		t.Fatalf("redis test:\n%s", out)
	}
	u.must("regions", "redis", "rm", "lab", "--wait")
	if r := region(); r.RedisAddress != "" {
		t.Fatalf("redis rm: %s %q", r.RedisMode, r.RedisAddress)
	}

	// function-tls set and rm, on the region's Traefik.
	u.must("regions", "knative", "install", "lab", "--wait")
	now := time.Now()
	cert, key := selfSigned(t, []string{"*.lab.example.test"}, now.Add(-time.Hour), now.Add(30*24*time.Hour))
	u.must("regions", "function-tls", "set", "lab", "--cert", file("tls.crt", []byte(cert)), "--key", file("tls.key", []byte(key)), "--wait")
	if r := region(); r.FunctionTLSCert == "" {
		t.Fatal("function-tls set stored no certificate")
	}
	if _, err := a.Client.CoreV1().Secrets("knative-serving").Get(ctx, domains.FunctionTLSSecret, metav1.GetOptions{}); err != nil {
		t.Fatalf("function-tls set: the Secret on the cluster: %v", err)
	}
	u.must("regions", "function-tls", "rm", "lab", "--wait")
	if r := region(); r.FunctionTLSCert != "" {
		t.Fatal("function-tls rm kept the certificate")
	}

	// migration start (refused outside the region's data location), status, rollback.
	if _, err := e.Store.DB.Exec(`UPDATE regions SET data_location = 'eu-central' WHERE name = 'lab'`); err != nil {
		t.Fatal(err)
	}
	if errOut := fails("regions", "migration", "start", "lab", "--kubeconfig", kcB, "--data-location", "us-east"); !strings.Contains(errOut, "data_location") {
		t.Fatalf("a move out of the data location: %s", errOut)
	}
	if r := region(); r.ClusterServer != a.Server || r.MigrationStatus != store.MigrationNone {
		t.Fatalf("the refused move changed the region: %s %s", r.ClusterServer, r.MigrationStatus)
	}
	u.must("regions", "migration", "start", "lab", "--kubeconfig", kcB, "--data-location", "eu-central", "--wait")
	if out := u.must("regions", "migration", "status", "lab"); !strings.Contains(out, "dns_check") {
		t.Fatalf("migration status:\n%s", out)
	}
	u.must("regions", "migration", "rollback", "lab", "--wait")
	if r := region(); r.MigrationStatus != store.MigrationRolledBack || r.ClusterServer != a.Server {
		t.Fatalf("migration rollback: %s %s", r.MigrationStatus, r.ClusterServer)
	}

	// demo rm with no demo removes nothing and succeeds; rm removes the record.
	u.must("regions", "demo", "rm", "lab", "--wait")
	if out := u.must("regions", "rm", "lab"); !strings.Contains(out, "Region lab removed") {
		t.Fatalf("rm:\n%s", out)
	}
	if _, err := e.Store.RegionByName(ctx, "lab"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after rm: %v", err)
	}
}
