package store_test

import (
	"context"
	"strings"
	"testing"

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
		RedisPassword: vals["redis_password"], AgentToken: vals["agent_token"], AgentTokenHash: store.HashToken(vals["agent_token"])}
	if err := st.CreateRegion(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := st.SetRegion(ctx, r.ID, map[string]any{"function_tls_key": vals["function_tls_key"], "old_kubeconfig": vals["old_kubeconfig"]}); err != nil {
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
	next, _ := store.NewCipher(store.GenerateKey())
	if _, err := st.RotateKey(ctx, next); err != nil {
		t.Fatal(err)
	}
	// The old key no longer opens anything; the new one opens everything.
	oldCipher, _ := store.NewCipher(storetest.AppKey)
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
