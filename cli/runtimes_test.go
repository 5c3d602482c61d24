package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"runr.dev/console/ops"
	"runr.dev/console/ops/gpu"
	"runr.dev/console/ops/isolation"
	"runr.dev/console/store"
	"runr.dev/console/web/webtest"
)

// TestCLIRuntimes: the Isolation, GPU and Supply chain tabs have CLI commands (issue 34):
// each queues the tab's job with the flags as its parameters, and a refusal comes back
// as the API's sentence.
func TestCLIRuntimes(t *testing.T) {
	e := webtest.New(t, nil)
	base := e.Listen()
	_, owner := e.User("owner")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("RUNR_URL", base)
	t.Setenv("RUNR_TOKEN", owner)
	ctx := context.Background()
	r := &store.Region{Name: "eu-2", Kubeconfig: "not a kubeconfig", RedisMode: store.RedisNone}
	if err := e.Store.CreateRegion(ctx, r); err != nil {
		t.Fatal(err)
	}
	queued := func(out, kind string) map[string]any {
		t.Helper()
		i := strings.Index(out, "job ")
		if i < 0 {
			t.Fatalf("no job in %q", out)
		}
		j, err := e.Store.JobByID(ctx, strings.Fields(out[i+4:])[0])
		if err != nil || j.Kind != kind || j.Status != store.JobQueued {
			t.Fatalf("want a queued %s job: %v %+v", kind, err, j)
		}
		var p map[string]any
		_ = json.Unmarshal(j.Params, &p)
		return p
	}
	p := queued(mustCLI(t, "regions", "isolation", "install", "eu-2", "wasm", "--nodes", "worker-1,worker-2"), isolation.KindSandboxInstall)
	if nodes, _ := p["nodes"].([]any); p["runtime"] != "wasm" || len(nodes) != 2 {
		t.Fatalf("isolation install parameters: %v", p)
	}
	if _, _, err := cli(t, "", "regions", "isolation", "rm", "eu-2", "kata"); err == nil || !strings.Contains(err.Error(), "kata is not installed") {
		t.Fatalf("removing a runtime that is not installed: %v", err)
	}
	if p := queued(mustCLI(t, "regions", "gpu", "install", "eu-2", "--mode", "device-plugin"), gpu.KindGPUInstall); p["mode"] != "device-plugin" {
		t.Fatalf("gpu install parameters: %v", p)
	}
	if _, _, err := cli(t, "", "regions", "gpu", "install", "eu-2", "--mode", "magic"); err == nil || !strings.Contains(err.Error(), "Choose operator") {
		t.Fatalf("an unknown GPU mode: %v", err)
	}
	if _, _, err := cli(t, "", "regions", "supply-chain", "rm-admission", "eu-2"); err == nil || !strings.Contains(err.Error(), "has no admission policy") {
		t.Fatalf("removing an admission policy that is not there: %v", err)
	}
	// The region's removal with what RunR installed: refused while its jobs wait, queued
	// for a region without any (nothing installed: the record's step only).
	if _, _, err := cli(t, "", "regions", "rm", "eu-2", "--teardown"); err == nil || !strings.Contains(err.Error(), "A job of region eu-2 runs") {
		t.Fatalf("a teardown while jobs wait: %v", err)
	}
	idle := &store.Region{Name: "eu-3", Kubeconfig: "not a kubeconfig", RedisMode: store.RedisNone}
	if err := e.Store.CreateRegion(ctx, idle); err != nil {
		t.Fatal(err)
	}
	if p := queued(mustCLI(t, "regions", "rm", "eu-3", "--teardown"), ops.KindTeardown); p["parts"] != nil {
		t.Fatalf("a region with nothing installed has parts to remove: %v", p)
	}
}
