package apitest

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"runr.dev/console/crypt"
	"runr.dev/console/store"
	"runr.dev/console/store/storetest"
)

// envWith returns env with the given settings replaced.
func envWith(env []string, kv ...string) []string {
	out := []string{}
	for _, e := range env {
		k, _, _ := strings.Cut(e, "=")
		keep := true
		for _, x := range kv {
			if xk, _, _ := strings.Cut(x, "="); xk == k {
				keep = false
			}
		}
		if keep {
			out = append(out, e)
		}
	}
	return append(out, kv...)
}

// TestKeyRotationWithTwoConsoleProcesses rotates the key while two `runr serve`
// processes share the database, one still on the old key alone: nothing answers 500,
// an unreadable region says so on its own, the old key's console keeps sweeping every
// region, and `runr secrets rotate-key` reports which keys are still in use.
func TestKeyRotationWithTwoConsoleProcesses(t *testing.T) {
	ctx := context.Background()
	a := newProcess(t, "RUNR_STATUS_INTERVAL=1s", "RUNR_STATUS_TIMEOUT=2s")
	a.run("migrate")
	a.run("user", "create", "--email", "owner@example.com", "--role", "owner", "--password", "correct horse battery")
	tok := a.run("token", "create", "--email", "owner@example.com", "--name", "t", "--scopes", "*")
	dbURL := ""
	for _, e := range a.env {
		if v, ok := strings.CutPrefix(e, "DATABASE_URL="); ok {
			dbURL = v
		}
	}
	newKey := a.run("secrets", "generate-key")
	b := &process{t: t, addr: fmt.Sprintf("127.0.0.1:%d", closedPort(t))}
	b.env = envWith(a.env, "RUNR_ADDR="+b.addr, "RUNR_APP_KEY="+newKey, "RUNR_PREVIOUS_APP_KEYS="+storetest.AppKey)
	t.Cleanup(func() {
		if b.cmd != nil && b.cmd.ProcessState == nil {
			b.kill()
		}
	})

	open := func(key string, prev ...string) *store.Store {
		c, err := crypt.NewCipher(key, prev...)
		if err != nil {
			t.Fatal(err)
		}
		st, err := store.Open(ctx, dbURL, c)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	stOld, stNew := open(storetest.AppKey), open(newKey, storetest.AppKey)
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: c
contexts: [{name: c, context: {cluster: k, user: u}}]
clusters: [{name: k, cluster: {server: "https://127.0.0.1:%d"}}]
users: [{name: u, user: {token: abc}}]
`, closedPort(t))
	// Two clusters as far as the sweep's grouping (and its circuit breaker) goes.
	r1 := &store.Region{Name: "under-old", Kubeconfig: kc, ClusterKey: "cluster-1"}
	r2 := &store.Region{Name: "under-new", Kubeconfig: kc, ClusterKey: "cluster-2"}
	if err := stOld.CreateRegion(ctx, r1); err != nil {
		t.Fatal(err)
	}
	if err := stNew.CreateRegion(ctx, r2); err != nil {
		t.Fatal(err)
	}
	a.start()
	b.start()

	region := func(p *process, id string) map[string]any {
		t.Helper()
		var out struct{ Data map[string]any }
		if got := p.api("GET", "/api/knative-regions/"+id, tok, nil, &out); got != 200 {
			t.Fatalf("GET region %s on %s: %d, want 200", id, p.addr, got)
		}
		return out.Data
	}
	if region(a, r2.ID)["secret_error"] == nil || region(a, r1.ID)["secret_error"] != nil {
		t.Fatal("console A (old key) must flag only the region under the new key")
	}
	if region(b, r1.ID)["secret_error"] != nil || region(b, r2.ID)["secret_error"] != nil {
		t.Fatal("console B reads with both keys")
	}

	cmd := exec.Command(runrBinary(t), "secrets", "rotate-key")
	cmd.Env = b.env
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "no longer in use") {
		t.Fatalf("rotate-key: %v: %s", err, out)
	}
	for _, p := range []*process{a, b} {
		for _, id := range []string{r1.ID, r2.ID} {
			region(p, id)
		}
		if got := p.api("GET", "/api/knative-regions", tok, nil, nil); got != 200 {
			t.Fatalf("list on %s: %d", p.addr, got)
		}
	}
	if region(a, r1.ID)["secret_error"] == nil {
		t.Fatal("after the rotation console A must say it cannot read the region")
	}

	// Console A keeps sweeping: the region it could read before the rotation is checked
	// again and says why it cannot be looked at (B, which reads it, is gone).
	b.kill()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var h string
		stOld.DB.Get(&h, `SELECT health::text FROM regions WHERE id = $1`, r1.ID)
		if strings.Contains(h, "decrypt") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("console A's sweep did not check %s again: %s\n%s", r1.Name, h, a.log)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// An on-demand check of an unreadable region answers, and records why.
	if got := a.api("POST", "/api/knative-regions/"+r2.ID+"/check-status", tok, nil, nil); got >= 500 {
		t.Fatalf("check-status on A: %d", got)
	}
	// A restarted with the new keys reads everything again.
	a.kill()
	a.env = envWith(a.env, "RUNR_APP_KEY="+newKey, "RUNR_PREVIOUS_APP_KEYS="+storetest.AppKey)
	a.start()
	if region(a, r1.ID)["secret_error"] != nil {
		t.Fatal("console A with the new key still cannot read")
	}
	for _, p := range []*process{a, b} {
		if strings.Contains(p.log.String(), "status=500") {
			t.Fatalf("a 500 in the log of %s", p.addr)
		}
	}
}
