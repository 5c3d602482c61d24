package ops_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"runr.dev/console/config"
	"runr.dev/console/kube"
	"runr.dev/console/ops"
	"runr.dev/console/ops/gpu"
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/knative"
	"runr.dev/console/ops/moves"
	"runr.dev/console/ops/nodes"
	"runr.dev/console/ops/projects"
	"runr.dev/console/ops/redis"
	"runr.dev/console/ops/registry"
	"runr.dev/console/ops/statusblock"
	"runr.dev/console/problem"
	"runr.dev/console/store"
	"runr.dev/console/store/storetest"
)

// useCases is a service on a fresh database with one region, eu-2, on no cluster: its
// use cases refuse or queue jobs that no runner picks up.
func useCases(t *testing.T) (*ops.Service, *store.Region) {
	t.Helper()
	st := storetest.New(t)
	cfg := &config.Config{InstallTimeout: time.Minute, StatusTimeout: time.Second}
	s := ops.NewService(st, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx := context.Background()
	r := &store.Region{Name: "eu-2", Kubeconfig: "not a kubeconfig", RedisMode: store.RedisNone}
	if err := st.CreateRegion(ctx, r); err != nil {
		t.Fatal(err)
	}
	r, err := st.RegionByID(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	return s, r
}

var actor = kit.Actor{Email: "ada@example.com"}

// refusedWith checks that err is a *problem.Refused saying want (on field, when given).
func refusedWith(t *testing.T, err error, field, want string) {
	t.Helper()
	var rf *problem.Refused
	if !errors.As(err, &rf) || rf.Field != field || !strings.Contains(rf.Reason, want) {
		t.Fatalf("want a refusal %q on %q, got %v", want, field, err)
	}
}

// invalidOn checks that err is an *problem.Invalid with an error on field.
func invalidOn(t *testing.T, err error, field string) {
	t.Helper()
	var inv *problem.Invalid
	if !errors.As(err, &inv) || inv.Fields[field] == "" {
		t.Fatalf("want a field error on %q, got %v", field, err)
	}
}

// TestUseCaseRefusals: each use case turns down what the region's state does not allow,
// with a *problem.Refused (a 422 with its reason) or an *problem.Invalid (field errors), before it
// changes anything.
func TestUseCaseRefusals(t *testing.T) {
	s, r := useCases(t)
	ctx := context.Background()
	_, err := s.Redis.TestRedis(ctx, actor, r)
	refusedWith(t, err, "", "no Redis to test")
	_, err = s.Registry.Remove(ctx, actor, r)
	refusedWith(t, err, "", "no registry")
	_, err = s.Registry.StartRollingRestart(ctx, actor, r)
	refusedWith(t, err, "", "ready internal registry")
	_, err = s.Registry.Set(ctx, actor, r, registry.Input{RegistryMode: store.RegistryNone})
	invalidOn(t, err, "registry_mode")
	_, err = s.Knative.Start(ctx, actor, r, knative.KindUninstallServing, knative.Input{})
	refusedWith(t, err, "", "not installed")
	_, err = s.Knative.Start(ctx, actor, r, knative.KindInstallServing, knative.Input{Namespace: "Bad"})
	invalidOn(t, err, "namespace")
	_, err = s.SetFunctionTLS(ctx, actor, r, ops.TLSInput{})
	refusedWith(t, err, "", "needs Knative Serving ready")
	_, err = s.Nodes.RemoveWorker(ctx, actor, r, "w1")
	refusedWith(t, err, "", "not one of the region's dedicated workers")
	_, err = s.Domains.CompleteDomainMigration(ctx, actor, r)
	refusedWith(t, err, "", "no domain migration")
	_, err = s.Moves.Rollback(ctx, actor, r)
	refusedWith(t, err, "", "rolls back only in dns_check or failed")
	_, err = s.Moves.Start(ctx, actor, r, moves.Input{Kubeconfig: "nope"})
	refusedWith(t, err, "kubeconfig", "")
	moved := *r
	moved.DataLocation = "eu"
	_, err = s.Moves.Start(ctx, actor, &moved, moves.Input{DataLocation: "us"})
	refusedWith(t, err, "data_location", "stays in eu")
	invalidOn(t, s.Domains.SetBaseDomain(ctx, actor, "https://example.com"), "base_domain")
	_, err = s.Redis.SetRedis(ctx, actor, r, redis.Input{Mode: store.RedisExternal, Address: "redis"})
	invalidOn(t, err, "address")
	_, err = s.Redis.SetRedis(ctx, actor, r, redis.Input{Mode: store.RedisInCluster, Address: "redis.queues:6379"})
	invalidOn(t, err, "address")
	_, err = s.Redis.SetRedis(ctx, actor, r, redis.Input{Mode: store.RedisNone})
	invalidOn(t, err, "mode")
	invalidOn(t, s.Nodes.SetOvercommit(ctx, actor, r, nodes.OvercommitInput{}), "faas_cpu_overcommit")
	_, err = s.Nodes.SetWorkers(ctx, actor, r, nodes.WorkersInput{})
	invalidOn(t, err, "nodes")
}

// TestKnativeOneJobAtATime: a second Knative job of a region is refused while the
// first waits or runs.
func TestKnativeOneJobAtATime(t *testing.T) {
	s, r := useCases(t)
	ctx := context.Background()
	j, err := s.Knative.Start(ctx, actor, r, knative.KindUninstallOperator, knative.Input{})
	if err != nil || j.CreatedBy != actor.Email || !strings.Contains(j.Title, "eu-2") {
		t.Fatalf("the first job: %v %+v", err, j)
	}
	_, err = s.Knative.Start(ctx, actor, r, knative.KindUninstallOperator, knative.Input{})
	refusedWith(t, err, "", "runs already")
}

// TestUpdateRegionRefusalChangesNothing: a status and settings change with a wrong
// setting is refused as a whole; the status stays.
func TestUpdateRegionRefusalChangesNothing(t *testing.T) {
	s, r := useCases(t)
	ctx := context.Background()
	status, timeout := store.RegionMaintenance, 0
	_, err := s.UpdateRegion(ctx, actor, r, ops.RegionUpdate{RegionStatus: &status, SettingsInput: ops.SettingsInput{RequestTimeout: &timeout}})
	invalidOn(t, err, "request_timeout")
	bad := store.RegionStatus("closed")
	_, err = s.UpdateRegion(ctx, actor, r, ops.RegionUpdate{RegionStatus: &bad})
	invalidOn(t, err, "region_status")
	if now, _ := s.Store.RegionByID(ctx, r.ID); now.Status != store.RegionActive {
		t.Fatalf("a refused update changed the status to %s", now.Status)
	}
	j, err := s.UpdateRegion(ctx, actor, r, ops.RegionUpdate{RegionStatus: &status})
	if err != nil || j == nil || j.Kind != statusblock.KindRegionStatus {
		t.Fatalf("status change: %v %+v", err, j)
	}
	if j, err := s.UpdateSettings(ctx, actor, r, ops.SettingsInput{}); err != nil || j != nil {
		t.Fatalf("no change needs no job: %v %+v", err, j)
	}
}

// TestProjectUseCases: a project is checked when created, refuses the actions its state
// does not allow, and one without a region is deleted at once; a region with projects
// is not removed.
func TestProjectUseCases(t *testing.T) {
	s, r := useCases(t)
	ctx := context.Background()
	_, err := s.Projects.CreateProject(ctx, actor, projects.ProjectInput{Name: store.Ptr("shop"), RegionID: store.Ptr("missing"), Image: store.Ptr("a b")})
	var inv *problem.Invalid
	if !errors.As(err, &inv) || inv.Fields["region_id"] == "" || inv.Fields["image"] == "" {
		t.Fatalf("create: %v", err)
	}
	p, err := s.Projects.CreateProject(ctx, actor, projects.ProjectInput{Name: store.Ptr("shop"), RegionID: &r.ID, Image: store.Ptr("ghcr.io/acme/shop:1"),
		EnvVars: &map[string]string{"PORT": "8080"}})
	if err != nil || p.CPUm != 100 || p.MemoryMi != 128 {
		t.Fatalf("create: %v %+v", err, p)
	}
	_, err = s.Projects.ProjectAction(ctx, actor, p, "resume")
	refusedWith(t, err, "", "Only a stopped project resumes")
	if _, err := s.Projects.ProjectAction(ctx, actor, p, "explode"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an unknown action is not found: %v", err)
	}
	_, err = s.Projects.UpdateProject(ctx, actor, p, projects.ProjectInput{SecretEnvVars: &map[string]string{"PORT": "x"}})
	invalidOn(t, err, "secret_env_vars")
	if got, _ := s.Store.ProjectByID(ctx, p.ID); got.EnvVars.V["PORT"] != "8080" || len(got.Secrets) != 0 {
		t.Fatalf("a refused update changed the project: %v %v", got.EnvVars.V, got.Secrets)
	}
	// One request moves a variable from plain to secret (PUT {"config": {"env_vars", "secret_env_vars"}}).
	if _, err := s.Projects.UpdateProject(ctx, actor, p, projects.ProjectInput{EnvVars: &map[string]string{}, SecretEnvVars: &map[string]string{"PORT": "9090"}}); err != nil {
		t.Fatalf("move PORT to secret: %v", err)
	}
	if got, _ := s.Store.ProjectByID(ctx, p.ID); len(got.EnvVars.V) != 0 || got.Secrets["PORT"] != "9090" {
		t.Fatalf("after the move: %v %v", got.EnvVars.V, got.Secrets)
	}
	if j, err := s.Projects.UpdateProject(ctx, actor, p, projects.ProjectInput{RegionID: store.Ptr("")}); err != nil || j != nil {
		t.Fatalf("leaving the region: %v %+v", err, j)
	}
	_, err = s.Projects.ProjectAction(ctx, actor, p, "deploy")
	refusedWith(t, err, "", "no region")
	if j, err := s.Projects.ProjectAction(ctx, actor, p, "delete"); err != nil || j != nil {
		t.Fatalf("delete without a region: %v %+v", err, j)
	}
	if _, err := s.Store.ProjectByID(ctx, p.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the project is still there: %v", err)
	}
	if err := s.DeleteRegion(ctx, actor, r); err != nil {
		t.Fatalf("a region without projects is removed: %v", err)
	}
}

// TestOneInternalRegistryPerCluster: a cluster holds one internal registry (the Helm
// release runr-registry/runr-zot). A second region on the cluster of a region with one is
// refused an internal registry of its own, beside registry_mode and before anything is
// created (issue 34: its setup upgraded the first region's release and broke it); it may
// take an external registry or none.
func TestOneInternalRegistryPerCluster(t *testing.T) {
	st := storetest.New(t)
	cfg := &config.Config{InstallTimeout: time.Minute, StatusTimeout: time.Second}
	s := ops.NewService(st, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx := context.Background()
	const server = "https://203.0.113.10:6443"
	kc := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"" + server + "\"}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n"
	first := &store.Region{Name: "eu-2", Kubeconfig: kc, ClusterKey: kube.ClusterKey(server), RegistryMode: store.RegistryInternal, RedisMode: store.RedisNone}
	if err := st.CreateRegion(ctx, first); err != nil {
		t.Fatal(err)
	}
	second := func(mode store.RegistryMode) ops.SetupInput {
		return ops.SetupInput{RegionFields: ops.RegionFields{Name: "eu-3", Kubeconfig: kc, RedisMode: store.RedisNone}, Input: registry.Input{RegistryMode: mode}}
	}
	_, err := s.StartCheckedSetup(ctx, actor, second(store.RegistryInternal), nil)
	var inv *problem.Invalid
	if !errors.As(err, &inv) || !strings.Contains(inv.Fields["registry_mode"], "region eu-2's") {
		t.Fatalf("an internal registry beside eu-2's: want a refusal on registry_mode naming eu-2, got %v", err)
	}
	if pending, err := st.PendingSetups(ctx); err != nil || len(pending) != 0 {
		t.Fatalf("the refusal must create nothing: %d setups, %v", len(pending), err)
	}
	if _, err := s.StartCheckedSetup(ctx, actor, second(store.RegistryNone), nil); err != nil {
		t.Fatalf("a second region without a registry: %v", err)
	}

	// A region of the cluster without a registry cannot install an internal one either.
	other := &store.Region{Name: "eu-4", Kubeconfig: kc, ClusterKey: kube.ClusterKey(server), RegistryMode: store.RegistryNone, RedisMode: store.RedisNone}
	if err := st.CreateRegion(ctx, other); err != nil {
		t.Fatal(err)
	}
	_, err = s.Registry.Set(ctx, actor, other, registry.Input{RegistryMode: store.RegistryInternal})
	invalidOn(t, err, "registry_mode")
	if got, err := st.RegionByID(ctx, other.ID); err != nil || got.RegistryStatus == store.ComponentInstalling {
		t.Fatalf("the refused registry must change nothing: %v %+v", err, got)
	}
}

// A teardown is refused, queueing nothing, while the region has projects other than the
// demo ones or runs a job.
func TestTeardownRefusals(t *testing.T) {
	s, r := useCases(t)
	ctx := context.Background()
	p := &store.Project{Name: "shop", Slug: "shop", RegionID: &r.ID}
	if err := s.Store.CreateProject(ctx, p); err != nil {
		t.Fatal(err)
	}
	r, _ = s.Store.RegionByID(ctx, r.ID)
	_, err := s.Teardown(ctx, actor, r)
	refusedWith(t, err, "", "still has 1 project")
	if err := s.Store.DeleteProject(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	r, _ = s.Store.RegionByID(ctx, r.ID)
	if _, err := s.RemoveFunctionTLS(ctx, actor, r); err != nil {
		t.Fatal(err)
	}
	_, err = s.Teardown(ctx, actor, r)
	refusedWith(t, err, "", "A job of region eu-2 runs")
	if _, n, _ := s.Store.ListJobsPage(ctx, r.ID, 1, 0); n != 1 {
		t.Fatalf("the refused teardowns queued jobs: %d", n)
	}
}

// A second region on a cluster is refused GPU support of the other kind than its
// neighbour's (the operator and the device plugin both serve every node), before
// anything is queued; the same kind is accepted (shared).
func TestGPUModeFollowsTheNeighbour(t *testing.T) {
	s, r := useCases(t)
	ctx := context.Background()
	if err := s.Store.SetRegionGPU(ctx, r.ID, store.RegionGPU{Mode: store.GPUModeOperator, Status: store.ComponentReady}); err != nil {
		t.Fatal(err)
	}
	next := &store.Region{Name: "eu-3", Kubeconfig: "not a kubeconfig", ClusterKey: r.ClusterKey, RedisMode: store.RedisNone}
	if err := s.Store.CreateRegion(ctx, next); err != nil {
		t.Fatal(err)
	}
	next, _ = s.Store.RegionByID(ctx, next.ID)
	_, err := s.GPU.InstallGPU(ctx, actor, next, gpu.Params{Mode: store.GPUModeDevicePlugin})
	refusedWith(t, err, "mode", "installed with operator for region eu-2")
	if _, n, _ := s.Store.ListJobsPage(ctx, next.ID, 1, 0); n != 0 {
		t.Fatalf("the refusal queued %d job(s)", n)
	}
	if _, err := s.GPU.InstallGPU(ctx, actor, next, gpu.Params{Mode: store.GPUModeOperator}); err != nil {
		t.Fatalf("the neighbour's kind is refused: %v", err)
	}
}

// TestMoveHasItsDeadline: the engine stops a move after the spec's 30 minutes (the engine's
// TestDeadlineStopsAJob shows what a deadline does).
func TestMoveHasItsDeadline(t *testing.T) {
	s, _ := useCases(t)
	if k := s.Engine.Kind(moves.KindMove); k == nil || k.Deadline != 30*time.Minute {
		t.Fatalf("the move's kind: %+v, want a deadline of 30 minutes", k)
	}
}
