package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"runr.dev/console/crypt"
	"runr.dev/console/store"
	"runr.dev/console/store/storetest"
)

// secretValues writes one value into every kind of secret column and returns them.
func secretValues(t *testing.T, st *store.Store) (*store.Region, map[string]string) {
	ctx := context.Background()
	vals := map[string]string{
		"kubeconfig":       "apiVersion: v1\nkind: Config\n# KUBECONFIG-SECRET-1",
		"registry_secret":  "REGISTRY-SECRET-2",
		"redis_password":   "REDIS-SECRET-3",
		"function_tls_key": "-----BEGIN PRIVATE KEY-----TLS-SECRET-4",
		"agent_token":      "AGENT-SECRET-5",
		"old_kubeconfig":   "OLD-KUBECONFIG-SECRET-6",
	}
	r := &store.Region{Name: "eu-2", Kubeconfig: vals["kubeconfig"], RegistrySecret: vals["registry_secret"],
		RedisPassword: vals["redis_password"], AgentToken: vals["agent_token"], AgentTokenHash: crypt.HashToken(vals["agent_token"])}
	if err := st.CreateRegion(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := st.SetFunctionTLS(ctx, r.ID, "", vals["function_tls_key"], nil); err != nil {
		t.Fatal(err)
	}
	if err := st.UpdateMove(ctx, r.ID, store.MoveUpdate{OldKubeconfig: store.Ptr(vals["old_kubeconfig"])}); err != nil {
		t.Fatal(err)
	}
	return r, vals
}

// dumpAll returns every row of every table as text.
func dumpAll(t *testing.T, st *store.Store) string {
	var tables []string
	if err := st.DB.Select(&tables, `SELECT tablename FROM pg_tables WHERE schemaname = 'public'`); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, tb := range tables {
		var rows []string
		if err := st.DB.Select(&rows, `SELECT t::text FROM `+tb+` t`); err != nil {
			t.Fatal(err)
		}
		b.WriteString(strings.Join(rows, "\n"))
	}
	return b.String()
}

func TestSecretsAreEncryptedAtRest(t *testing.T) {
	st := storetest.New(t)
	r, vals := secretValues(t, st)
	dump := dumpAll(t, st)
	for k, v := range vals {
		if strings.Contains(dump, v) {
			t.Errorf("%s found in plain text in the database", k)
		}
	}
	got, err := st.RegionByID(context.Background(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Kubeconfig != vals["kubeconfig"] || got.RedisPassword != vals["redis_password"] || got.FunctionTLSKey != vals["function_tls_key"] {
		t.Fatal("secrets do not read back")
	}
}

func TestEncryptPlaintextAndRotateKey(t *testing.T) {
	st := storetest.New(t)
	ctx := context.Background()
	r, vals := secretValues(t, st)
	// Plaintext left behind by an older version.
	if _, err := st.DB.Exec(`UPDATE regions SET redis_password = 'PLAIN-LEFT-BEHIND' WHERE id = $1`, r.ID); err != nil {
		t.Fatal(err)
	}
	n, err := st.EncryptPlaintext(ctx)
	if err != nil || n != 1 {
		t.Fatalf("EncryptPlaintext: n=%d err=%v, want 1", n, err)
	}
	if n, _ := st.EncryptPlaintext(ctx); n != 0 {
		t.Fatalf("second run encrypted %d, want 0", n)
	}
	if strings.Contains(dumpAll(t, st), "PLAIN-LEFT-BEHIND") {
		t.Fatal("plaintext still stored")
	}
	old := dumpAll(t, st)
	// The console restarts with the new key and the old one as previous: it reads both.
	oldCipher, _ := crypt.NewCipher(storetest.AppKey)
	next, err := crypt.NewCipher(crypt.GenerateKey(), storetest.AppKey)
	if err != nil {
		t.Fatal(err)
	}
	st.Cipher = next
	if got, err := st.RegionByID(ctx, r.ID); err != nil || got.Kubeconfig != vals["kubeconfig"] || got.SecretError != "" {
		t.Fatalf("the previous key must still read: %v %q", err, got.SecretError)
	}
	rep, err := st.RotateKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Reencrypted != len(vals) || rep.InUse[oldCipher.KeyID()] != 0 || rep.InUse[next.KeyID()] != len(vals) || len(rep.Undecryptable) != 0 {
		t.Fatalf("report: %+v, want %d values moved to %s", rep, len(vals), next.KeyID())
	}
	// The old key no longer opens anything; the new one opens everything.
	got, err := st.RegionByID(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Kubeconfig != vals["kubeconfig"] || got.RedisPassword != "PLAIN-LEFT-BEHIND" || got.AgentToken != vals["agent_token"] {
		t.Fatal("values lost in rotation")
	}
	var raw string
	st.DB.Get(&raw, `SELECT kubeconfig FROM regions WHERE id = $1`, r.ID)
	if _, err := oldCipher.Decrypt(raw); err == nil {
		t.Fatal("value still under the old key")
	}
	if old == dumpAll(t, st) {
		t.Fatal("rotation changed nothing")
	}
}

// TestCipherKeyring: values carry their key's id, previous keys still read, legacy v1
// values open with any key, and a value no key opens is ErrUndecryptable.
func TestCipherKeyring(t *testing.T) {
	k1, k2 := crypt.GenerateKey(), crypt.GenerateKey()
	c1, _ := crypt.NewCipher(k1)
	c21, _ := crypt.NewCipher(k2, k1)
	c2, _ := crypt.NewCipher(k2)
	v := c1.Encrypt("secret")
	if !strings.HasPrefix(v, "enc:v2:"+c1.KeyID()+":") {
		t.Fatalf("no key id in %q", v)
	}
	if got, err := c21.Decrypt(v); err != nil || got != "secret" {
		t.Fatalf("previous key: %q %v", got, err)
	}
	if _, err := c2.Decrypt(v); !errors.Is(err, crypt.ErrUndecryptable) {
		t.Fatalf("unknown key: %v, want ErrUndecryptable", err)
	}
	if _, err := c1.Decrypt("enc:v2:" + c1.KeyID() + ":!!!"); !errors.Is(err, crypt.ErrUndecryptable) {
		t.Fatalf("damaged value: %v", err)
	}
	sealed := c1.Seal("state", "purpose|user-1")
	if _, err := c1.Open(sealed, "purpose|user-2"); err == nil {
		t.Fatal("associated data must bind the value")
	}
	if got, err := c1.Open(sealed, "purpose|user-1"); err != nil || got != "state" {
		t.Fatalf("open with its associated data: %q %v", got, err)
	}
}

// TestUndecryptableRegion: a region whose secrets no key opens reads with a clear
// error of its own and blank secrets; the other regions and the list are unaffected.
func TestUndecryptableRegion(t *testing.T) {
	st := storetest.New(t)
	ctx := context.Background()
	good := &store.Region{Name: "good", Kubeconfig: "KC-GOOD"}
	bad := &store.Region{Name: "bad", Kubeconfig: "KC-BAD"}
	for _, r := range []*store.Region{good, bad} {
		if err := st.CreateRegion(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	other, _ := crypt.NewCipher(crypt.GenerateKey())
	if _, err := st.DB.Exec(`UPDATE regions SET kubeconfig = $2 WHERE id = $1`, bad.ID, other.Encrypt("KC-BAD")); err != nil {
		t.Fatal(err)
	}
	got, err := st.RegionByID(ctx, bad.ID)
	if err != nil {
		t.Fatalf("an undecryptable region must still read: %v", err)
	}
	if got.SecretError == "" || got.Kubeconfig != "" {
		t.Fatalf("want a secret error and no kubeconfig, got %q / %q", got.SecretError, got.Kubeconfig)
	}
	rs, err := st.ListRegions(ctx, store.RegionFilter{}, true)
	if err != nil || len(rs) != 2 {
		t.Fatalf("list with secrets: %d %v", len(rs), err)
	}
	for _, r := range rs {
		if r.Name == "good" && (r.Kubeconfig != "KC-GOOD" || r.SecretError != "") {
			t.Fatalf("the good region suffers: %+v", r.SecretError)
		}
	}
}

// TestEnvVarsAreSealed: a project's plain env vars are stored encrypted (no value in any
// row); env vars an earlier version wrote in plain text stay readable, win over sealed
// ones (only an earlier version writes them, after the seal), and `runr secrets encrypt`
// (EncryptPlaintext) seals them once.
func TestEnvVarsAreSealed(t *testing.T) {
	ctx := context.Background()
	st := storetest.New(t)
	p := &store.Project{Name: "orders", Image: "example/orders:1"}
	p.EnvVars.V = map[string]string{"GREETING": "ENV-VALUE-1"}
	if err := st.CreateProject(ctx, p); err != nil {
		t.Fatal(err)
	}
	if p.EnvVars.V["GREETING"] != "ENV-VALUE-1" {
		t.Fatalf("created project's env: %v", p.EnvVars.V)
	}
	p.EnvVars.V["MODE"] = "ENV-VALUE-2"
	if err := st.UpdateProject(ctx, p); err != nil {
		t.Fatal(err)
	}
	if dump := dumpAll(t, st); strings.Contains(dump, "ENV-VALUE") {
		t.Fatal("an env var's value is stored in plain text")
	}
	got, err := st.ProjectByID(ctx, p.ID)
	if err != nil || got.EnvVars.V["GREETING"] != "ENV-VALUE-1" || got.EnvVars.V["MODE"] != "ENV-VALUE-2" {
		t.Fatalf("read back: %v %v", err, got.EnvVars.V)
	}
	if n, err := st.EncryptPlaintext(ctx); err != nil || n != 0 {
		t.Fatalf("nothing is plain yet: %d %v", n, err)
	}

	// The previous version, during an upgrade, writes env_vars as it always did.
	if _, err := st.DB.Exec(`UPDATE projects SET env_vars = '{"GREETING": "ENV-VALUE-3"}' WHERE id = $1`, p.ID); err != nil {
		t.Fatal(err)
	}
	list, err := st.ListProjects(ctx, "")
	if err != nil || len(list) != 1 || list[0].EnvVars.V["GREETING"] != "ENV-VALUE-3" || len(list[0].EnvVars.V) != 1 {
		t.Fatalf("the plain env vars do not win: %v %+v", err, list)
	}
	if n, err := st.EncryptPlaintext(ctx); err != nil || n != 1 {
		t.Fatalf("secrets encrypt sealed %d (%v), want 1", n, err)
	}
	if n, err := st.EncryptPlaintext(ctx); err != nil || n != 0 {
		t.Fatalf("a second run sealed %d (%v)", n, err)
	}
	if dump := dumpAll(t, st); strings.Contains(dump, "ENV-VALUE") {
		t.Fatal("secrets encrypt left an env var in plain text")
	}
	if got, err = st.ProjectByID(ctx, p.ID); err != nil || got.EnvVars.V["GREETING"] != "ENV-VALUE-3" || len(got.EnvVars.V) != 1 {
		t.Fatalf("after the seal: %v %v", err, got.EnvVars.V)
	}
}
