package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"runr.dev/console/ops"
	"runr.dev/console/ops/admission"
	"runr.dev/console/ops/gpu"
	"runr.dev/console/ops/isolation"
	"runr.dev/console/store"
	"runr.dev/console/supplychain/sigtest"
	"runr.dev/console/testcluster"
)

// TestCLIRuntimes: the Isolation, GPU and Supply chain tabs have CLI commands (issue 34):
// each queues the tab's job with the flags as its parameters, and a refusal comes back
// as the API's sentence.
func TestCLIRuntimes(t *testing.T) {
	e := consoleForCLI(t)
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

// TestCLISettingsCommands: the settings of the Isolation, GPU and Supply chain tabs and
// the Sandbox API's have CLI commands (issue 35): set sends only the flags given and shows
// what was kept, show prints the settings, and a refusal comes back as the API's sentence
// with nothing changed.
func TestCLISettingsCommands(t *testing.T) {
	e := consoleForCLI(t)
	ctx := context.Background()
	cl := testcluster.New(t, testcluster.Options{})
	r := &store.Region{Name: "eu-4", Kubeconfig: string(cl.Kubeconfig()), RedisMode: store.RedisNone}
	if err := e.Store.CreateRegion(ctx, r); err != nil {
		t.Fatal(err)
	}
	region := func() *store.Region {
		t.Helper()
		got, err := e.Store.RegionByID(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	// The Sandbox API's settings.
	before := isolation.SandboxSettingsOf(region())
	mustCLI(t, "sandbox", "regions", "set", "eu-4", "--max-ttl-seconds", "3600", "--allow-runc")
	after := isolation.SandboxSettingsOf(region())
	if after.MaxTTLSeconds != 3600 || !after.AllowRunc || after.Enabled != before.Enabled || after.DefaultTTLSeconds != before.DefaultTTLSeconds {
		t.Fatalf("sandbox settings after set: %+v (before %+v)", after, before)
	}
	if _, _, err := cli(t, "", "sandbox", "regions", "set", "eu-4", "--max-cpu-m", "10"); err == nil || !strings.Contains(err.Error(), "max_cpu_m") {
		t.Fatalf("a CPU ceiling under 50m: %v", err)
	}
	if got := isolation.SandboxSettingsOf(region()); got.MaxCPUm != after.MaxCPUm {
		t.Fatalf("the refused ceiling changed the settings: %d", got.MaxCPUm)
	}
	if _, _, err := cli(t, "", "sandbox", "regions", "set", "eu-4"); err == nil || !strings.Contains(err.Error(), "nothing to change") {
		t.Fatalf("set without a setting: %v", err)
	}
	var shown map[string]any
	if err := json.Unmarshal([]byte(mustCLI(t, "sandbox", "regions", "show", "eu-4", "-o", "json")), &shown); err != nil || shown["max_ttl_seconds"] != float64(3600) {
		t.Fatalf("sandbox regions show: %v %v", err, shown)
	}

	// The Supply chain tab's settings, a key from a file.
	key := sigtest.NewKey(t)
	keyFile := filepath.Join(t.TempDir(), "cosign.pub")
	if err := os.WriteFile(keyFile, []byte(key.PublicPEM), 0o600); err != nil {
		t.Fatal(err)
	}
	mustCLI(t, "regions", "supply-chain", "set", "eu-4", "--data-location", "eu-central", "--fail-severity", "high", "--public-key-file", keyFile)
	sc := admission.SupplyChainOf(region())
	if region().DataLocation != "eu-central" || sc.FailSeverity != "high" || len(sc.PublicKeys) != 1 || sc.RequireSBOM {
		t.Fatalf("supply chain after set: %q %+v", region().DataLocation, sc)
	}
	if _, _, err := cli(t, "not a key", "regions", "supply-chain", "set", "eu-4", "--public-key-file", "-", "--fail-severity", "low"); err == nil || !strings.Contains(err.Error(), "public_keys") {
		t.Fatalf("a key that is not one, from standard input: %v", err)
	}
	if got := admission.SupplyChainOf(region()); got.FailSeverity != "high" || len(got.PublicKeys) != 1 {
		t.Fatalf("the refused change changed the supply chain: %+v", got)
	}
	if out := mustCLI(t, "regions", "supply-chain", "show", "eu-4"); !strings.Contains(out, "eu-central") {
		t.Fatalf("supply-chain show: %s", out)
	}

	// The volumes and retention of RunR's own Prometheus, Loki and Tempo (Serving is not
	// ready: saved, installed with Serving).
	if _, _, err := cli(t, "", "regions", "monitoring", "set", "eu-4", "--storage-class", "gold"); err == nil || !strings.Contains(err.Error(), "no StorageClass gold") {
		t.Fatalf("a StorageClass the cluster lacks: %v", err)
	}
	mustCLI(t, "regions", "monitoring", "set", "eu-4", "--storage-class", "fast-ssd", "--loki-retention-days", "30", "--prometheus-size-gi", "50")
	if m := region().Monitoring.V; m.StorageClass != "fast-ssd" || m.LokiRetentionDays != 30 || m.PrometheusSizeGi != 50 || m.LokiSizeGi != 0 {
		t.Fatalf("monitoring after set: %+v", m)
	}
	if _, _, err := cli(t, "", "regions", "monitoring", "set", "eu-4", "--loki-retention-days", "5000"); err == nil || !strings.Contains(err.Error(), "loki_retention_days") {
		t.Fatalf("a retention of 5000 days: %v", err)
	}
	if m := region().Monitoring.V; m.LokiRetentionDays != 30 {
		t.Fatalf("the refused retention changed the monitoring: %+v", m)
	}

	// The GPU tab's model storage and the Isolation tab's classes.
	if _, _, err := cli(t, "", "regions", "gpu", "storage", "eu-4", "--size-gi", "0"); err == nil || !strings.Contains(err.Error(), "size_gi") {
		t.Fatalf("a volume of 0 GiB: %v", err)
	}
	if _, _, err := cli(t, "", "regions", "gpu", "storage", "eu-4", "--size-gi", "100", "--storage-class", "shared"); err == nil || !strings.Contains(err.Error(), "no StorageClass shared") {
		t.Fatalf("a StorageClass the cluster lacks: %v", err)
	}
	out := mustCLI(t, "regions", "gpu", "storage", "eu-4", "--size-gi", "100", "--storage-class", "standard")
	j, err := e.Store.JobByID(ctx, strings.Fields(out[strings.Index(out, "job ")+4:])[0])
	var ms gpu.ModelStorageParams
	if err != nil || j.Kind != gpu.KindModelStorage || json.Unmarshal(j.Params, &ms) != nil || ms.SizeGi != 100 || ms.StorageClass != "standard" {
		t.Fatalf("gpu storage: %v %+v %+v", err, j, ms)
	}
	if _, _, err := cli(t, "", "regions", "isolation", "classes", "eu-4", "functions=gvisor"); err == nil || !strings.Contains(err.Error(), "not installed on this region") {
		t.Fatalf("a class that is not installed: %v", err)
	}
	if _, _, err := cli(t, "", "regions", "isolation", "classes", "eu-4", "functions"); err == nil || !strings.Contains(err.Error(), "KIND=CLASS") {
		t.Fatalf("an argument without a class: %v", err)
	}
	if out := mustCLI(t, "regions", "isolation", "classes", "eu-4", "functions=runc"); !strings.Contains(out, "runtime_classes") {
		t.Fatalf("isolation classes: %s", out)
	}
}
