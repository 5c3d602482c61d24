package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"runr.dev/console/apiclient"
	"runr.dev/console/config"
	"runr.dev/console/ops/domains"
	"runr.dev/console/ops/observability"
	"runr.dev/console/ops/redis"
	"runr.dev/console/perm"
	"runr.dev/console/store"
	"runr.dev/console/web/webtest"
)

// cli runs `runr args…` in this process, with stdin, and returns stdout, stderr and the error.
func cli(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := NewRoot()
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetIn(strings.NewReader(stdin))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := root.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

// consoleForCLI starts a console and points the CLI at it with an owner's token.
func consoleForCLI(t *testing.T, tweaks ...func(*config.Config)) *webtest.Env {
	t.Helper()
	e := webtest.New(t, func(c *config.Config) {
		for _, tw := range tweaks {
			tw(c)
		}
	})
	base := e.Listen()
	_, owner := e.User("owner")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("RUNR_URL", base)
	t.Setenv("RUNR_TOKEN", owner)
	return e
}

// mustCLI runs `runr args…` and fails the test when it fails.
func mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := cli(t, "", args...)
	if err != nil {
		t.Fatalf("runr %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// TestCLILoginAndOutput: `runr login` checks the token and keeps it 0600; RUNR_URL and
// RUNR_TOKEN override it; the region commands read the API in table, JSON and YAML; a
// 422 prints each field; a token without the permission gets the console's 403 sentence.
func TestCLILoginAndOutput(t *testing.T) {
	e := webtest.New(t, nil)
	base := e.Listen()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	t.Setenv("RUNR_URL", "")
	t.Setenv("RUNR_TOKEN", "")
	_, owner := e.User("owner")
	_, viewer := e.User("viewer", perm.RegionsView)

	if _, _, err := cli(t, "", "regions", "list"); err == nil || !strings.Contains(err.Error(), "runr login") {
		t.Fatalf("without a login: %v", err)
	}
	if _, _, err := cli(t, "", "login", "--url", base, "--token", "runr_wrong"); err == nil {
		t.Fatal("a wrong token must not be saved")
	}
	// The token from stdin (no terminal): it is checked, then kept readable by the user alone.
	out, _, err := cli(t, owner+"\n", "login", "--url", base)
	if err != nil || !strings.Contains(out, "Logged in to "+base+" as owner-") {
		t.Fatalf("login: %v %s", err, out)
	}
	path := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "runr", "config.json")
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("config file: %v %v", err, fi)
	}
	if raw, _ := os.ReadFile(path); !strings.Contains(string(raw), owner) {
		t.Fatal("the token is not kept")
	}

	r := &store.Region{Name: "eu-2", Kubeconfig: "not a kubeconfig", RedisMode: store.RedisNone}
	if err := e.Store.CreateRegion(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if out := mustCLI(t, "regions", "list"); !strings.Contains(out, "NAME") || !strings.Contains(out, "eu-2") {
		t.Fatalf("table:\n%s", out)
	}
	var list []map[string]any
	if err := json.Unmarshal([]byte(mustCLI(t, "regions", "list", "-o", "json")), &list); err != nil || len(list) != 1 || list[0]["name"] != "eu-2" {
		t.Fatalf("json: %v %v", err, list)
	}
	var shown map[string]any
	if err := yaml.Unmarshal([]byte(mustCLI(t, "regions", "show", "eu-2", "-o", "yaml")), &shown); err != nil || shown["id"] != r.ID {
		t.Fatalf("yaml: %v %v", err, shown)
	}
	if strings.Contains(mustCLI(t, "regions", "show", r.ID, "-o", "json"), "not a kubeconfig") {
		t.Fatal("the kubeconfig must never be shown")
	}
	if _, _, err := cli(t, "", "regions", "show", "nowhere"); err == nil || !strings.Contains(err.Error(), `no region "nowhere"`) {
		t.Fatalf("unknown region: %v", err)
	}

	// Health at a glance: the list and show say it with its reason; the list filters to
	// what needs attention and sorts the worst first; a filter it does not know is refused.
	down := &store.Region{Name: "eu-3", Kubeconfig: "not a kubeconfig", RedisMode: store.RedisNone}
	if err := e.Store.CreateRegion(context.Background(), down); err != nil {
		t.Fatal(err)
	}
	if err := e.Store.SaveCheck(context.Background(), down.ID, store.CheckUpdate{CheckedAt: time.Now(),
		Health: store.Health{API: store.HealthLayer{State: store.HealthDown, Reason: "no answer within 10s"}}}); err != nil {
		t.Fatal(err)
	}
	if out := mustCLI(t, "regions", "list"); !regexp.MustCompile(`(?m)^eu-3\s+down\s.*Cluster API: no answer within 10s$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^eu-2\s+unknown\s.*not checked yet$`).MatchString(out) {
		t.Fatalf("health column:\n%s", out)
	}
	if out := mustCLI(t, "regions", "list", "--health", "attention"); !strings.Contains(out, "eu-3") || strings.Contains(out, "eu-2") {
		t.Fatalf("--health attention:\n%s", out)
	}
	if out := mustCLI(t, "regions", "list", "--sort", "health"); strings.Index(out, "eu-3") > strings.Index(out, "eu-2") {
		t.Fatalf("--sort health puts the worst first:\n%s", out)
	}
	if _, _, err := cli(t, "", "regions", "list", "--health", "broken"); err == nil || !strings.Contains(err.Error(), "health: Use one of attention") {
		t.Fatalf("unknown health filter: %v", err)
	}
	if out := mustCLI(t, "regions", "show", "eu-3"); !regexp.MustCompile(`Health:\s+down: Cluster API: no answer within 10s`).MatchString(out) {
		t.Fatalf("show:\n%s", out)
	}

	// A 422: one line per field.
	kc := filepath.Join(t.TempDir(), "kc.yaml")
	os.WriteFile(kc, []byte("not: a kubeconfig\n"), 0o600)
	_, _, err = cli(t, "", "regions", "create", "Bad_Name", "--kubeconfig", kc, "--redis", "none")
	if err == nil || !strings.Contains(err.Error(), "\n  name: ") || !strings.Contains(err.Error(), "\n  kubeconfig: ") {
		t.Fatalf("field errors: %v", err)
	}
	_, _, err = cli(t, "", "regions", "set", "eu-2", "--set", "request_timeout=99999")
	if err == nil || !strings.Contains(err.Error(), "request_timeout: ") {
		t.Fatalf("settings field error: %v", err)
	}
	if _, _, err := cli(t, "", "regions", "set", "eu-2", "--set", "color=blue"); err == nil || !strings.Contains(err.Error(), "KEY one of") {
		t.Fatalf("unknown key: %v", err)
	}

	// RUNR_URL and RUNR_TOKEN override the saved login: the viewer may read, not change.
	t.Setenv("RUNR_TOKEN", viewer)
	if out := mustCLI(t, "regions", "list"); !strings.Contains(out, "eu-2") {
		t.Fatalf("viewer list: %s", out)
	}
	if _, _, err := cli(t, "", "regions", "set", "eu-2", "--set", "status=maintenance"); err == nil || !strings.Contains(err.Error(), "permission regions.manage") {
		t.Fatalf("viewer set: %v", err)
	}
	t.Setenv("RUNR_TOKEN", "")
	if out := mustCLI(t, "logout"); !strings.Contains(out, "removed") {
		t.Fatal(out)
	}
	if _, _, err := cli(t, "", "regions", "list"); err == nil || !strings.Contains(err.Error(), "no token") {
		t.Fatalf("after logout: %v", err)
	}
}

// TestCLIJobs: --wait follows a job to its end and exits non-zero when it fails; jobs
// show, logs, retry and cancel work on it.
func TestCLIJobs(t *testing.T) {
	e := consoleForCLI(t)
	ctx := context.Background()
	r := &store.Region{Name: "eu-2", Kubeconfig: "not a kubeconfig", RedisMode: store.RedisNone}
	if err := e.Store.CreateRegion(ctx, r); err != nil {
		t.Fatal(err)
	}

	// No runner yet: the job stays queued, and a cancel ends it at once.
	out := mustCLI(t, "regions", "redis", "rm", "eu-2")
	jobID := strings.Fields(out[strings.Index(out, "job ")+4:])[0]
	if j, _ := e.Store.JobByID(ctx, jobID); j.Status != store.JobQueued || j.Kind != redis.KindRedisRemove {
		t.Fatalf("queued job: %+v", j)
	}
	if out := mustCLI(t, "jobs", "cancel", jobID, "--wait"); !strings.Contains(out, "cancelled") {
		t.Fatalf("cancel: %s", out)
	}

	// A Redis in the cluster: an outside name is refused with what to give instead, a
	// Service's address is queued with its mode.
	if _, _, err := cli(t, "", "regions", "redis", "set", "eu-2", "--mode", "in_cluster", "--address", "redis.example.com:6379"); err == nil || !strings.Contains(err.Error(), "<service>.<namespace>.svc") {
		t.Fatalf("an outside name as a Redis in the cluster: %v", err)
	}
	out = mustCLI(t, "regions", "redis", "set", "eu-2", "--mode", "in_cluster", "--address", "redis.queues.svc:6379")
	setID := strings.Fields(out[strings.Index(out, "job ")+4:])[0]
	j, _ := e.Store.JobByID(ctx, setID)
	var set redis.Params
	if err := json.Unmarshal(j.Params, &set); err != nil || j.Kind != redis.KindRedisInstall || set.Mode != store.RedisInCluster || set.Address != "redis.queues.svc:6379" {
		t.Fatalf("queued Redis job: %s %s %v", j.Kind, j.Params, err)
	}
	mustCLI(t, "jobs", "cancel", setID, "--wait")

	// `migration complete --domain`: refused without a domain migration, queued during one.
	if _, _, err := cli(t, "", "regions", "migration", "complete", "eu-2", "--domain"); err == nil || !strings.Contains(err.Error(), "no domain migration") {
		t.Fatalf("completing a domain migration that is not under way: %v", err)
	}
	if _, err := e.Store.DB.Exec(`UPDATE regions SET domain_migration_status = 'dns_check', domain_migration_target = 'eu-2.new.test' WHERE id = $1`, r.ID); err != nil {
		t.Fatal(err)
	}
	out = mustCLI(t, "regions", "migration", "complete", "eu-2", "--domain")
	domainID := strings.Fields(out[strings.Index(out, "job ")+4:])[0]
	if j, _ := e.Store.JobByID(ctx, domainID); j.Kind != domains.KindDomainMigration || !strings.Contains(string(j.Params), "eu-2.new.test") {
		t.Fatalf("queued domain migration job: %s %s", j.Kind, j.Params)
	}
	mustCLI(t, "jobs", "cancel", domainID, "--wait")

	// `regions tracing set|rm`: the region's mode is recorded and its job queued; a bad
	// mode is refused.
	if _, _, err := cli(t, "", "regions", "tracing", "set", "eu-2", "--mode", "sometimes"); err == nil || !strings.Contains(err.Error(), "Choose on, off or default") {
		t.Fatalf("a bad tracing mode: %v", err)
	}
	for _, args := range [][]string{{"set", "eu-2", "--mode", "on"}, {"rm", "eu-2"}} {
		out = mustCLI(t, append([]string{"regions", "tracing"}, args...)...)
		id := strings.Fields(out[strings.Index(out, "job ")+4:])[0]
		if j, _ := e.Store.JobByID(ctx, id); j.Kind != observability.KindTracing {
			t.Fatalf("runr regions tracing %v queued %s", args, j.Kind)
		}
		mustCLI(t, "jobs", "cancel", id, "--wait")
	}
	if got, _ := e.Store.RegionByID(ctx, r.ID); got.TracingMode != store.TracingOff {
		t.Fatalf("the tracing mode after runr regions tracing rm: %q", got.TracingMode)
	}

	e.Run()
	// The job fails (the kubeconfig is no kubeconfig): plain progress lines, exit non-zero.
	out, _, err := cli(t, "", "regions", "redis", "rm", "eu-2", "--wait")
	if err == nil || !strings.Contains(err.Error(), "failed") {
		t.Fatalf("a failed job must fail the command: %v\n%s", err, out)
	}
	t.Logf("runr regions redis rm eu-2 --wait:\n%s", out)
	if !strings.Contains(out, "[1/1] ") || !strings.Contains(out, ": failed") || strings.Contains(out, "\r") {
		t.Fatalf("plain progress:\n%s", out)
	}
	js, _, _ := e.Store.ListJobsPage(ctx, r.ID, 1, 0)
	failed := js[0].ID
	if out := mustCLI(t, "jobs", "show", failed); !strings.Contains(out, "Status:  failed") && !strings.Contains(out, "failed") {
		t.Fatalf("show: %s", out)
	}
	if out := mustCLI(t, "jobs", "logs", failed); !strings.Contains(out, "step 1 failed") {
		t.Fatalf("logs: %s", out)
	}
	if out := mustCLI(t, "jobs", "list", "--region", "eu-2"); !strings.Contains(out, failed) {
		t.Fatalf("list: %s", out)
	}
	// A retry runs it again (and fails again); -o json prints the ended job on stdout.
	out, _, err = cli(t, "", "jobs", "retry", failed, "--wait", "-o", "json")
	var ended []map[string]any
	if err == nil || json.Unmarshal([]byte(out), &ended) != nil || len(ended) != 1 || ended[0]["status"] != "failed" {
		t.Fatalf("retry: %v %s", err, out)
	}
	if _, _, err := cli(t, "", "jobs", "retry", jobID); err != nil {
		t.Fatalf("a cancelled job can be retried: %v", err)
	}
	if _, _, err := cli(t, "", "jobs", "show", "01NOTAJOB0000000000000000"); err == nil || !strings.Contains(err.Error(), "Not found") {
		t.Fatalf("unknown job: %v", err)
	}
}

// TestCLICompletion: Cobra's shell completion, with the region names from the console.
func TestCLICompletion(t *testing.T) {
	e := consoleForCLI(t)
	if err := e.Store.CreateRegion(context.Background(), &store.Region{Name: "eu-2", Kubeconfig: "x", RedisMode: store.RedisNone}); err != nil {
		t.Fatal(err)
	}
	// `runr` alone lists the commands; it never starts a console.
	if out := mustCLI(t); !strings.Contains(out, "Available Commands:") || !strings.Contains(out, "serve") {
		t.Fatalf("runr alone: %s", out)
	}
	if out := mustCLI(t, "completion", "bash"); !strings.Contains(out, "__start_runr") {
		t.Fatal("no bash completion")
	}
	if out := mustCLI(t, "__complete", "regions", "show", ""); !strings.Contains(out, "eu-2") {
		t.Fatalf("region names: %s", out)
	}
	if out := mustCLI(t, "__complete", "regions", "knative", "install", "eu-2", ""); !strings.Contains(out, "operator") {
		t.Fatalf("knative targets: %s", out)
	}
	if out := mustCLI(t, "__complete", "regions", "list", "-o", ""); !strings.Contains(out, "yaml") {
		t.Fatalf("output formats: %s", out)
	}
}

// TestCLIProgressOnTerminal: on a terminal the running step and its wait are one status
// line redrawn in place; finished steps and log lines scroll above it.
func TestCLIProgressOnTerminal(t *testing.T) {
	var out bytes.Buffer
	p := &progress{out: &out, tty: true, steps: []apiclient.Step{{Idx: 0, Title: "Install Zot"}, {Idx: 1, Title: "Node mirror"}}}
	step := func(idx int, status, wait, msg string) apiclient.Event {
		raw, _ := json.Marshal(apiclient.Step{Idx: idx, Title: p.steps[idx].Title, Status: status, Wait: wait, Message: msg})
		return apiclient.Event{Kind: apiclient.EventStep, StepIdx: idx, Data: raw}
	}
	p.event(step(0, apiclient.StepRunning, "", ""))
	p.event(apiclient.Event{Kind: apiclient.EventLog, StepIdx: 0, Message: "Installing Helm release runr-registry/runr-zot"})
	p.event(step(0, apiclient.StepRunning, "waiting for StatefulSet runr-registry/runr-zot (90 s)", ""))
	p.event(step(0, apiclient.StepDone, "", "Zot serves"))
	p.event(step(1, apiclient.StepRunning, "", ""))
	p.event(step(1, apiclient.StepFailed, "", "no nodes"))
	p.clear()
	got := out.String()
	for _, want := range []string{
		"… [1/2] Install Zot",
		"\r\033[K    Installing Helm release runr-registry/runr-zot\n… [1/2] Install Zot",
		"… [1/2] Install Zot — waiting for StatefulSet runr-registry/runr-zot (90 s)",
		"\r\033[K✓ [1/2] Install Zot — Zot serves\n",
		"✗ [2/2] Node mirror — no nodes\n",
	} {
		if !strings.Contains(got, want) {
			t.Fatalf("missing %q in %q", want, got)
		}
	}
}

// A bad number in --set says what to give, not Go's parser error.
func TestSetBodiesRefuseBadNumbersInWords(t *testing.T) {
	for _, kv := range []string{"request_timeout=abc", "faas_cpu_overcommit=lots"} {
		_, _, err := setBodies([]string{kv})
		if err == nil || strings.Contains(err.Error(), "strconv") || !strings.Contains(err.Error(), "e.g.") {
			t.Fatalf("--set %s: %v", kv, err)
		}
	}
}
