package supplychain_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"runr.dev/console/supplychain"
	"runr.dev/console/supplychain/sigtest"
)

func keysOf(t *testing.T, pems ...string) []supplychain.Key {
	t.Helper()
	ks, err := supplychain.ParseKeys(pems)
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

func TestGateWithRealSignatures(t *testing.T) {
	reg := sigtest.NewRegistry(t)
	key, other := sigtest.NewKey(t), sigtest.NewKey(t)
	ctx := context.Background()
	opts := remote.WithTransport(reg.Transport())

	signed, sd := reg.Push(t, "acme/shop:1.0")
	sigtest.Sign(t, key, signed, sd)
	unsigned, _ := reg.Push(t, "acme/shop:unsigned")
	foreign, fd := reg.Push(t, "acme/shop:foreign")
	sigtest.Sign(t, other, foreign, fd)
	full, fud := reg.Push(t, "acme/shop:full")
	sigtest.Sign(t, key, full, fud)
	sigtest.Attest(t, key, full, fud, supplychain.PredicateCycloneDX, sigtest.CycloneDX("openssl", "zlib"))
	sigtest.Attest(t, key, full, fud, supplychain.PredicateVuln, sigtest.TrivyScan(map[string]string{"CVE-2026-1": "MEDIUM"}))
	crit, cd := reg.Push(t, "acme/shop:critical")
	sigtest.Sign(t, key, crit, cd)
	sigtest.Attest(t, key, crit, cd, supplychain.PredicateCycloneDX, sigtest.CycloneDX("openssl"))
	sigtest.Attest(t, key, crit, cd, supplychain.PredicateVuln, sigtest.TrivyScan(map[string]string{"CVE-2026-9": "CRITICAL", "CVE-2026-2": "LOW"}))
	// An SBOM signed with another key does not count.
	otherSBOM, od := reg.Push(t, "acme/shop:other-sbom")
	sigtest.Sign(t, key, otherSBOM, od)
	sigtest.Attest(t, other, otherSBOM, od, supplychain.PredicateCycloneDX, sigtest.CycloneDX("openssl"))

	sigOnly := supplychain.Requirements{Keys: keysOf(t, key.PublicPEM)}
	all := supplychain.Requirements{Keys: keysOf(t, key.PublicPEM), RequireSBOM: true, RequireScan: true, FailAt: "high"}
	for _, tc := range []struct {
		name   string
		image  string
		req    supplychain.Requirements
		ok     bool
		reason string
	}{
		{"signed", signed, sigOnly, true, ""},
		{"unsigned", unsigned, sigOnly, false, "no cosign signature"},
		{"signed by another key", foreign, sigOnly, false, "no signature of the image verifies"},
		{"signed, no SBOM or scan", signed, all, false, "no SBOM attestation"},
		{"signed with SBOM and a medium finding", full, all, true, ""},
		{"critical finding at threshold high", crit, all, false, "CVE-2026-9 (critical)"},
		{"SBOM by another key", otherSBOM, all, false, "no SBOM attestation"},
		{"no such image", reg.Host + "/acme/none:1", sigOnly, false, "did not give the image's digest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := supplychain.Check(ctx, tc.image, tc.req, opts)
			if err != nil {
				t.Fatal(err)
			}
			if v.Accepted != tc.ok || !strings.Contains(v.Reason(), tc.reason) {
				t.Fatalf("verdict %+v, want accepted=%v with %q", v, tc.ok, tc.reason)
			}
		})
	}
	v, _ := supplychain.Check(ctx, full, all, opts)
	if v.SBOM != "CycloneDX 1.5, 2 components" || v.Scan == nil || v.Scan.Counts()["medium"] != 1 || v.SignedBy == "" {
		t.Fatalf("what the verdict says of the attestations: %+v", v)
	}
}

func TestParseKey(t *testing.T) {
	k := sigtest.NewKey(t)
	if _, err := supplychain.ParseKey(k.PublicPEM); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "hello", "-----BEGIN EC PRIVATE KEY-----\nMHc=\n-----END EC PRIVATE KEY-----\n", k.PublicPEM + k.PublicPEM} {
		if _, err := supplychain.ParseKey(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestSeverities(t *testing.T) {
	for _, tc := range []struct {
		sev, at string
		want    bool
	}{{"critical", "high", true}, {"high", "high", true}, {"medium", "high", false}, {"low", "low", true}, {"negligible", "low", false}, {"", "low", false}} {
		if got := supplychain.AtOrAbove(tc.sev, tc.at); got != tc.want {
			t.Errorf("AtOrAbove(%q, %q) = %v", tc.sev, tc.at, got)
		}
	}
	if supplychain.ValidSeverity("HIGH") || !supplychain.ValidSeverity("high") || supplychain.ValidSeverity("none") {
		t.Error("ValidSeverity")
	}
}
