package web_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"runr.dev/console/config"
	"runr.dev/console/crypt"
	"runr.dev/console/handlers/lifecycle"
	"runr.dev/console/ops"
	"runr.dev/console/ops/kit"
	"runr.dev/console/store"
	"runr.dev/console/store/storetest"
	"runr.dev/console/web"
	"runr.dev/console/web/webtest"
)

const testKubeconfig = `apiVersion: v1
kind: Config
current-context: c
contexts:
- name: c
  context: {cluster: k, user: u}
clusters:
- name: k
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: u
  user: {token: abc}
`

// secondConsole is another console on the same database with its own keys (another
// replica, mid-rotation).
func secondConsole(t *testing.T, e *webtest.Env, key string, previous ...string) *webtest.Env {
	t.Helper()
	cipher, err := crypt.NewCipher(key, previous...)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), e.Store.URL, cipher)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := *e.Cfg
	cfg.AppKey, cfg.PreviousAppKeys = key, previous
	log := webtest.Logger()
	svc := ops.NewService(st, &cfg, log)
	return &webtest.Env{T: t, Store: st, Cfg: &cfg, Kube: svc, S: web.New(st, &cfg, svc, log, "test")}
}

// TestKeyRotationWhileConsolesRun: console A still has only the old key, console B the
// new one with the old as previous. Whatever is written meanwhile, and after
// rotate-key, nothing answers 500, an unreadable region says so on its own, the sweep
// goes on for every region, and state sealed by one console opens on the other.
func TestKeyRotationWhileConsolesRun(t *testing.T) {
	ctx := context.Background()
	a := webtest.New(t, nil)
	newKey := crypt.GenerateKey()
	b := secondConsole(t, a, newKey, storetest.AppKey)
	_, tokA := a.User("owner")
	owner, tokB := b.User("owner")

	mk := func(e *webtest.Env, name string) (*store.Region, *store.Project) {
		r := &store.Region{Name: name, Kubeconfig: testKubeconfig, AgentToken: "agent-" + name, AgentTokenHash: crypt.HashToken("agent-" + name)}
		if err := e.Store.CreateRegion(ctx, r); err != nil {
			t.Fatal(err)
		}
		p := &store.Project{Name: "p-" + name, Image: "nginx", RegionID: &r.ID, Secrets: map[string]string{"API_KEY": "s3cr3t-" + name}}
		if err := e.Store.CreateProject(ctx, p); err != nil {
			t.Fatal(err)
		}
		return r, p
	}
	r1, p1 := mk(a, "old-key") // written by A under the old key
	r2, p2 := mk(b, "new-key") // written by B under the new key

	get := func(e *webtest.Env, tok, path string) map[string]any {
		t.Helper()
		var out struct{ Data any }
		if got := e.JSON("GET", path, tok, nil, &out); got != 200 {
			t.Fatalf("GET %s: %d, want 200 (never a 500)", path, got)
		}
		m, _ := out.Data.(map[string]any)
		return m
	}
	if d := get(a, tokA, "/api/knative-regions/"+r2.ID); d["secret_error"] == nil {
		t.Fatal("A must say the new-key region's secrets are unreadable")
	}
	if d := get(a, tokA, "/api/knative-regions/"+r1.ID); d["secret_error"] != nil {
		t.Fatal("A reads its own region")
	}
	if d := get(a, tokA, "/api/projects/"+p2.ID); d["secret_error"] == nil {
		t.Fatal("A must say the new-key project's secrets are unreadable")
	}
	if code, page := a.Raw("GET", "/regions/"+r2.ID, tokA, ""); code != 200 || !strings.Contains(page, `data-testid="secret-error"`) {
		t.Fatalf("A's region page: %d, without the secret error", code)
	}
	for _, tab := range []string{"overview", "workers", "settings"} {
		if code, _ := a.Raw("GET", "/regions/"+r2.ID+"/tabs/"+tab, tokA, ""); code >= 500 {
			t.Fatalf("A's %s tab: %d", tab, code)
		}
	}
	get(a, tokA, "/api/knative-regions")
	get(a, tokA, "/api/projects")
	for _, id := range []string{r1.ID, r2.ID} {
		if d := get(b, tokB, "/api/knative-regions/"+id); d["secret_error"] != nil {
			t.Fatalf("B reads both keys: %v", d["secret_error"])
		}
	}
	// A cannot save a project whose secrets it cannot read (it would lose them).
	before := digest(t, a.Store)
	if got := a.JSON("PUT", "/api/projects/"+p2.ID, tokA, map[string]any{"image": "nginx:2"}, nil); got != 409 {
		t.Fatalf("A updates an unreadable project: %d, want 409", got)
	}
	if digest(t, a.Store) != before {
		t.Fatal("the refused update changed something")
	}

	// The wizard's state sealed by A opens on B.
	sealed := lifecycle.SealStep1(a.Store.Cipher, owner.ID, lifecycle.SealedStep1{Name: "x"}, time.Now())
	if _, err := lifecycle.UnsealStep1(b.Store.Cipher, owner.ID, sealed, time.Now()); err != nil {
		t.Fatalf("B opens A's sealed state: %v", err)
	}

	// rotate-key with B's keys: everything moves to the new key.
	rep, err := b.Store.RotateKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	oldID, _ := crypt.NewCipher(storetest.AppKey)
	if rep.InUse[oldID.KeyID()] != 0 || len(rep.Undecryptable) != 0 || rep.Reencrypted == 0 {
		t.Fatalf("rotation report: %+v", rep)
	}
	// A now reads nothing, and still answers; its sweep goes on for every region.
	if d := get(a, tokA, "/api/knative-regions/"+r1.ID); d["secret_error"] == nil {
		t.Fatal("after the rotation A must say so")
	}
	for _, e := range []*webtest.Env{a, b} {
		if _, err := e.Store.DB.Exec(`UPDATE regions SET health = '{}'`); err != nil {
			t.Fatal(err)
		}
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := e.Kube.Status.Sweep(sctx)
		cancel()
		if err != nil {
			t.Fatalf("sweep: %v", err)
		}
		for _, id := range []string{r1.ID, r2.ID} {
			var h string
			e.Store.DB.Get(&h, `SELECT health::text FROM regions WHERE id = $1`, id)
			if !strings.Contains(h, `"reason"`) || h == "{}" {
				t.Fatalf("the sweep skipped region %s: %s", id, h)
			}
			if e == a && !strings.Contains(h, "decrypt") {
				t.Fatalf("A's sweep must name the key problem for %s: %s", id, h)
			}
		}
	}
	_ = p1
}

// TestSealedStateBoundAndSingleUse: step 1's sealed state opens only for its user and
// purpose, expires, and replaying it (even at once) starts one setup of a name.
func TestSealedStateBoundAndSingleUse(t *testing.T) {
	e := webtest.New(t, func(c *config.Config) {})
	br, u := signIn(e, "owner")
	other, _ := e.User("owner")
	c := e.Store.Cipher
	now := time.Now()
	st := lifecycle.SealedStep1{Name: "eu-9", Kubeconfig: testKubeconfig, IsActive: true, Nodes: []kit.NodeInfo{{Name: "n1", Ready: true}}}
	sealed := lifecycle.SealStep1(c, u.ID, st, now)
	if _, err := lifecycle.UnsealStep1(c, other.ID, sealed, now); err == nil {
		t.Fatal("another user's sealed state opened")
	}
	if _, err := lifecycle.UnsealStep1(c, u.ID, c.Seal("{}", "another purpose"), now); err == nil {
		t.Fatal("a value sealed for another purpose opened")
	}
	if _, err := lifecycle.UnsealStep1(c, u.ID, sealed, now.Add(2*time.Hour)); err == nil {
		t.Fatal("an expired sealed state opened")
	}
	// Replays of one form, at once: one setup.
	form := url.Values{"sealed": {sealed}, "registry_mode": {"none"}, "redis_mode": {"none"}, "nodes": {"n1"}, "_csrf": {br.CSRF}}
	var wg sync.WaitGroup
	codes := make([]int, 4)
	for i := range codes {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			req := httptest.NewRequest("POST", "/regions/new/setup", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			for k, v := range br.Cookies {
				req.AddCookie(&http.Cookie{Name: k, Value: v})
			}
			resp := e.Do(req)
			codes[i] = resp.StatusCode
		}(i)
	}
	wg.Wait()
	ok := 0
	for _, code := range codes {
		switch code {
		case 303:
			ok++
		case 422:
		default:
			t.Fatalf("replay answered %d", code)
		}
	}
	var n int
	e.Store.DB.Get(&n, `SELECT count(*) FROM registry_setups`)
	if ok != 1 || n != 1 {
		t.Fatalf("%d accepted, %d setups; want one of each (codes %v)", ok, n, codes)
	}
	// Another user cannot use it at all.
	b2 := e.NewBrowser()
	b2.Login(other.Email, "password-of-owner")
	b2.Get("/regions/new")
	form.Set("_csrf", b2.CSRF)
	before := digest(t, e.Store)
	if resp, _ := b2.PostForm("/regions/new/setup", form, false); resp.StatusCode != 422 {
		t.Fatalf("another user's sealed state: %d", resp.StatusCode)
	}
	if digest(t, e.Store) != before {
		t.Fatal("changed something")
	}
}
