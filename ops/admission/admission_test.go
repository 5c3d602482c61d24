package admission

import (
	"slices"
	"strings"
	"testing"

	"runr.dev/console/ops/kit"
	"runr.dev/console/store"
	"runr.dev/console/supplychain/sigtest"
)

func TestValidateDataLocation(t *testing.T) {
	for _, ok := range []string{"", "eu", "EU central 1", "eu-central_1.a", "1st", strings.Repeat("a", 64)} {
		if m := kit.ValidateDataLocation(ok); m != "" {
			t.Errorf("%q refused: %s", ok, m)
		}
	}
	for _, bad := range []string{" eu", "-eu", "_eu", ".eu", "eu/central", "eü", "eu\n", strings.Repeat("a", 65), "eu,us"} {
		if kit.ValidateDataLocation(bad) == "" {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestResidencyAllows(t *testing.T) {
	for _, tc := range []struct {
		required, at string
		want         bool
	}{{"", "", true}, {"", "eu", true}, {"eu", "eu", true}, {"EU", "eu ", true}, {"eu", "", false}, {"eu", "us", false}} {
		if got := kit.ResidencyAllows(tc.required, tc.at); got != tc.want {
			t.Errorf("kit.ResidencyAllows(%q, %q) = %v", tc.required, tc.at, got)
		}
	}
}

func TestImageGlobs(t *testing.T) {
	for _, tc := range []struct {
		glob, image string
		want        bool
	}{
		{"registry.example.com/acme/**", "registry.example.com/acme/shop/api", true},
		{"registry.example.com/acme/*", "registry.example.com/acme/shop/api", false},
		{"registry.example.com/acme/*", "registry.example.com/acme/shop", true},
		{"**", "ghcr.io/brf-tech/runr/agent", true},
		{"ghcr.io/brf-tech/runr/**", "ghcr.io/brf-tech/runr/reqs/traefik", true},
		{"ghcr.io/brf-tech/runr/**", "ghcr.io/brf-tech/other", false},
	} {
		if got := GlobCovers(tc.glob, tc.image); got != tc.want {
			t.Errorf("GlobCovers(%q, %q) = %v", tc.glob, tc.image, got)
		}
	}
	if m := validateImageGlobs([]string{"registry.example.com/acme/**"}); m != "" {
		t.Fatal(m)
	}
	for _, bad := range []string{"**", "ghcr.io/**", "gcr.io/knative-releases/**", "ghcr.io/brf-tech/**", "registry example", "reg/[a]"} {
		if validateImageGlobs([]string{bad}) == "" {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestPolicies(t *testing.T) {
	sys := SystemImagesPolicy()
	spec := sys["spec"].(map[string]any)
	var globs []string
	for _, im := range spec["images"].([]any) {
		globs = append(globs, im.(map[string]any)["glob"].(string))
	}
	if !slices.Equal(globs, []string{"ghcr.io/brf-tech/runr/**", "ghcr.io/brf-tech/**", "ghcr.io/runrsh/**"}) {
		t.Fatalf("system images: %v", globs)
	}
	if a := spec["authorities"].([]any)[0].(map[string]any)["static"]; a.(map[string]any)["action"] != "pass" {
		t.Fatalf("the system images policy passes: %v", a)
	}
	key := sigtest.NewKey(t)
	sc := store.SupplyChain{PublicKeys: []string{key.PublicPEM}, Admission: store.Admission{Enabled: true, Mode: store.AdmissionWarn, Images: []string{"reg.example/acme/**"}}}
	rp := RegionPolicy("eu-1", sc)
	rs := rp["spec"].(map[string]any)
	auth := rs["authorities"].([]any)[0].(map[string]any)
	if rp["metadata"].(map[string]any)["name"] != "runr-region-eu-1" || rs["mode"] != "warn" ||
		auth["key"].(map[string]any)["data"] != strings.TrimSpace(key.PublicPEM) || !strings.HasPrefix(auth["name"].(string), "key-") {
		t.Fatalf("region policy: %+v", rp)
	}
	for _, m := range rs["match"].([]any) {
		sel := m.(map[string]any)["selector"].(map[string]any)["matchLabels"].(map[string]any)
		if sel["runr.dev/region"] != "eu-1" {
			t.Fatalf("match %v", m)
		}
	}
}

func TestSupplyChainInput(t *testing.T) {
	key := sigtest.NewKey(t)
	ptr := func(s string) *string { return &s }
	yes := true
	for _, tc := range []struct {
		name  string
		in    SupplyChainInput
		field string
	}{
		{"bad key", SupplyChainInput{PublicKeys: &[]string{"nope"}}, "public_keys"},
		{"private key", SupplyChainInput{PublicKeys: &[]string{"-----BEGIN EC PRIVATE KEY-----\nAA==\n-----END EC PRIVATE KEY-----"}}, "public_keys"},
		{"sbom without keys", SupplyChainInput{RequireSBOM: &yes}, "public_keys"},
		{"admission without keys", SupplyChainInput{Admission: &yes, AdmissionImages: &[]string{"reg.example/**"}}, "public_keys"},
		{"admission without images", SupplyChainInput{Admission: &yes, PublicKeys: &[]string{key.PublicPEM}}, "admission_images"},
		{"severity", SupplyChainInput{FailSeverity: ptr("urgent")}, "fail_severity"},
		{"mode", SupplyChainInput{AdmissionMode: ptr("audit")}, "admission_mode"},
		{"glob over RunR", SupplyChainInput{AdmissionImages: &[]string{"ghcr.io/**"}}, "admission_images"},
		{"data location", SupplyChainInput{DataLocation: ptr("eu/1")}, "data_location"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, fields := applySupplyChainInput(store.SupplyChain{}, "", tc.in)
			if fields[tc.field] == "" {
				t.Fatalf("no error on %s: %v", tc.field, fields)
			}
		})
	}
	v, loc, fields := applySupplyChainInput(store.SupplyChain{}, "eu", SupplyChainInput{PublicKeys: &[]string{key.PublicPEM, key.PublicPEM},
		RequireScan: &yes, FailSeverity: ptr("HIGH"), DataLocation: ptr(" us-east ")})
	if len(fields) > 0 || len(v.PublicKeys) != 1 || v.FailSeverity != "high" || loc != "us-east" || !v.RequireScan {
		t.Fatalf("%+v %q %v", v, loc, fields)
	}
}

func TestAdmissionChange(t *testing.T) {
	on := store.SupplyChain{PublicKeys: []string{"k"}, Admission: store.Admission{Enabled: true, Mode: store.AdmissionEnforce, Images: []string{"a/**"}},
		State: store.AdmissionState{Status: store.ComponentReady}}
	if a, r := admissionChange(on, on); a || r {
		t.Fatal("nothing changed, nothing to do")
	}
	warn := on
	warn.Admission.Mode = store.AdmissionWarn
	if a, _ := admissionChange(on, warn); !a {
		t.Fatal("a new mode is applied")
	}
	off := on
	off.Admission.Enabled = false
	if _, r := admissionChange(on, off); !r {
		t.Fatal("turned off: removed")
	}
	failed := on
	failed.State.Status = store.ComponentError
	if a, _ := admissionChange(failed, failed); !a {
		t.Fatal("a failed policy is applied again")
	}
}
