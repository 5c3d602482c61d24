package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"runr.dev/console/store"
	"runr.dev/console/store/storetest"
)

func TestUsersAndTokens(t *testing.T) {
	st := storetest.New(t)
	ctx := context.Background()
	u, err := st.CreateUser(ctx, "Ada@Example.com", "Ada", "admin", "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateUser(ctx, "ada@example.com", "", "viewer", "another password"); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("duplicate e-mail (case-insensitive): want ErrConflict, got %v", err)
	}
	got, err := st.UserByEmail(ctx, "ADA@example.com")
	if err != nil || got.ID != u.ID {
		t.Fatalf("lookup by e-mail: %v %+v", err, got)
	}
	if !got.CheckPassword("correct horse battery") || got.CheckPassword("wrong") {
		t.Fatal("password check is wrong")
	}
	if strings.Contains(got.PasswordHash, "horse") {
		t.Fatal("password stored in plain text")
	}

	tok, plain, err := st.CreateAPIToken(ctx, u.ID, "ci", []string{"regions.view"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tok.TokenHash == plain || strings.Contains(tok.TokenHash, plain) {
		t.Fatal("token stored in plain text")
	}
	found, err := st.APITokenByPlain(ctx, plain)
	if err != nil || found.ID != tok.ID || found.LastUsedAt == nil {
		t.Fatalf("token lookup: %v %+v", err, found)
	}
	if _, err := st.APITokenByPlain(ctx, plain+"x"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("wrong token: want ErrNotFound, got %v", err)
	}
	if err := st.DeleteAPIToken(ctx, tok.ID, "someone-else"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("revoking another user's token must fail, got %v", err)
	}
	if err := st.DeleteAPIToken(ctx, tok.ID, u.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.APITokenByPlain(ctx, plain); !errors.Is(err, store.ErrNotFound) {
		t.Fatal("revoked token still works")
	}
}

func TestLoginThrottle(t *testing.T) {
	st := storetest.New(t)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if err := st.RecordLoginFailure(ctx, "k", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	n, last, err := st.LoginFailures(ctx, "k", time.Minute)
	if err != nil || n != 3 || time.Since(last) > time.Minute {
		t.Fatalf("failures: %d, last %s, %v; want 3 just now", n, last, err)
	}
	if err := st.ClearLoginFailures(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := st.LoginFailures(ctx, "k", time.Minute); n != 0 {
		t.Fatal("cleared failures still count")
	}
}

// TestProjectSlugsAndKinds: slugs are unique, never in the console's own runr-* names,
// and a project is an HTTP function unless created as another kind.
func TestProjectSlugsAndKinds(t *testing.T) {
	st := storetest.New(t)
	ctx := context.Background()
	var slugs []string
	for _, name := range []string{"Shop", "shop", "runr redis", "RunR"} {
		p := &store.Project{Name: name, Image: "ghcr.io/acme/x:1", CPUm: 100, MemoryMi: 128}
		if err := st.CreateProject(ctx, p); err != nil {
			t.Fatal(name, err)
		}
		slugs = append(slugs, p.Slug)
		if p.Kind != store.ProjectHTTP || p.Command.V == nil {
			t.Fatalf("%s: kind %q, command %v", name, p.Kind, p.Command.V)
		}
	}
	if got := strings.Join(slugs, ","); got != "shop,shop-2,p-runr-redis,runr" {
		t.Fatalf("slugs: %s", got)
	}
	w := &store.Project{Name: "worker", Image: "x", CPUm: 10, MemoryMi: 16, Kind: store.ProjectQueueWorker, QueueStream: "orders", Demo: true}
	w.Command.V = []string{"python3", "-c", "print(1)"}
	if err := st.CreateProject(ctx, w); err != nil {
		t.Fatal(err)
	}
	back, err := st.ProjectByID(ctx, w.ID)
	if err != nil || back.Kind != store.ProjectQueueWorker || back.QueueStream != "orders" || !back.Demo || len(back.Command.V) != 3 {
		t.Fatalf("read back: %v %+v", err, back)
	}
}

// TestMarkMovePendingAfterTheJobStarted: a move's "pending" mark that comes after its job
// recorded the move (a runner claimed the job at once) changes nothing; before, it marks.
func TestMarkMovePendingAfterTheJobStarted(t *testing.T) {
	st := storetest.New(t)
	ctx := context.Background()
	r := &store.Region{Name: "mv-eu", Kubeconfig: "kc"}
	if err := st.CreateRegion(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := st.MarkMovePending(ctx, r.ID, "job-1"); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.RegionByID(ctx, r.ID); got.MigrationStatus != store.MigrationPending || got.MigrationDetail.V.JobID != "job-1" {
		t.Fatalf("marked: %s %+v", got.MigrationStatus, got.MigrationDetail.V)
	}
	started := store.MigrationDetail{JobID: "job-1", Had: map[string]any{"serving": true}}
	if err := st.UpdateMove(ctx, r.ID, store.MoveUpdate{Status: store.Ptr(store.MigrationInProgress), Detail: &started}); err != nil {
		t.Fatal(err)
	}
	if err := st.MarkMovePending(ctx, r.ID, "job-1"); err != nil {
		t.Fatal(err)
	}
	got, _ := st.RegionByID(ctx, r.ID)
	if got.MigrationStatus != store.MigrationInProgress || got.MigrationDetail.V.Had["serving"] != true {
		t.Fatalf("a late pending mark overwrote the started move: %s %+v", got.MigrationStatus, got.MigrationDetail.V)
	}
}

// Two edits of different settings, each from its own earlier read of the region, both land:
// a settings update writes only the keys it names.
func TestRegionSettingsEditsOfDifferentKeysBothLand(t *testing.T) {
	st := storetest.New(t)
	ctx := context.Background()
	r := &store.Region{Name: "edits", Kubeconfig: "kc"}
	if err := st.CreateRegion(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := st.SetRegionSettings(ctx, r.ID, store.RegionSettings{RequestTimeout: 120, KnativeDomain: "edits.example.test"}); err != nil {
		t.Fatal(err)
	}
	timeout, ws := 900, "wss://runr.internal.example.com"
	if err := st.UpdateRegionSettings(ctx, r.ID, store.RegionSettingsUpdate{RequestTimeout: &timeout}); err != nil {
		t.Fatal(err)
	}
	if err := st.UpdateRegionSettings(ctx, r.ID, store.RegionSettingsUpdate{AgentWSURL: &ws, IngressTrustedIPs: &[]string{"10.0.0.0/24"}}); err != nil {
		t.Fatal(err)
	}
	got, err := st.RegionByID(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	v := got.Settings.V
	if v.RequestTimeout != 900 || v.AgentWSURL != ws || len(v.IngressTrustedIPs) != 1 || v.KnativeDomain != "edits.example.test" {
		t.Fatalf("settings after two edits of different keys: %+v", v)
	}
	if err := st.UpdateRegionSettings(ctx, "no-such-region", store.RegionSettingsUpdate{AgentWSURL: &ws}); err == nil {
		t.Fatal("an update of a missing region must fail")
	}
}
