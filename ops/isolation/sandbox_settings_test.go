package isolation

import (
	"slices"
	"testing"

	"runr.dev/console/store"
)

func TestSandboxSettingsOfDefaults(t *testing.T) {
	r := &store.Region{}
	r.Isolation.V.GVisor = store.SandboxRuntime{Status: store.ComponentReady, Classes: []string{GVisorClass}}
	r.Isolation.V.Kata = store.SandboxRuntime{Status: store.ComponentReady, Classes: []string{"kata-clh", "kata-qemu"}}
	r.Isolation.V.Wasm = store.SandboxRuntime{Status: store.ComponentReady, Classes: []string{"wasmtime-spin-v2"}}
	v := SandboxSettingsOf(r)
	if !v.Enabled || v.AllowRunc || v.DefaultTTLSeconds != 900 {
		t.Fatalf("defaults: %+v", v)
	}
	if want := []string{"kata-clh", "kata-qemu", GVisorClass}; !slices.Equal(v.AllowedClasses, want) {
		t.Fatalf("allowed = %v, want %v (installed sandbox classes, strongest first)", v.AllowedClasses, want)
	}
	if v.DefaultClass != "kata-clh" {
		t.Fatalf("default class = %q, want Kata's", v.DefaultClass)
	}

	// Stored settings whose class was removed fall back to the strongest left.
	r.SandboxSettings.V = store.SandboxSettings{Set: true, Enabled: true, AllowedClasses: []string{"kata-clh", GVisorClass}, DefaultClass: "kata-clh"}
	r.Isolation.V.Kata = store.SandboxRuntime{Status: store.ComponentNotInstalled}
	v = SandboxSettingsOf(r)
	if !slices.Equal(v.AllowedClasses, []string{GVisorClass}) || v.DefaultClass != GVisorClass {
		t.Fatalf("after Kata's removal: %+v", v)
	}

	// Nothing installed and runc not allowed: no default class.
	r.Isolation.V = store.Isolation{}
	if v = SandboxSettingsOf(r); v.DefaultClass != "" || len(v.AllowedClasses) != 0 {
		t.Fatalf("nothing installed: %+v", v)
	}
	r.SandboxSettings.V.AllowRunc = true
	if v = SandboxSettingsOf(r); v.DefaultClass != store.RuncClass {
		t.Fatalf("runc allowed: default %q", v.DefaultClass)
	}
}
