package isolation

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"runr.dev/console/ops/kit"
	"runr.dev/console/problem"
	"runr.dev/console/store"
)

// Limits of the Sandbox API's settings. The spec gives the ranges of the maxima and the
// default TTL; the defaults of the maxima and the TTL bounds are not given.
const (
	DefaultSandboxTTL = 900
	// DefaultSandboxMaxTTL is chosen: an hour, four default TTLs (the spec gives no value).
	DefaultSandboxMaxTTL = 3600
	// MinSandboxTTL and MaxSandboxTTL bound both TTLs: a minute to a day (chosen; the spec
	// gives no range).
	MinSandboxTTL  = 60
	MaxSandboxTTL  = 86400
	MinSandboxCPU  = 50
	MaxSandboxCPU  = 4000
	MinSandboxMem  = 64
	MaxSandboxMem  = 8192
	MinSandboxDisk = 64
	MaxSandboxDisk = 10240
	// Defaults of the maxima, chosen inside the spec's ranges (it gives none): one CPU,
	// 1 GiB of memory, 2 GiB of disk.
	DefaultSandboxCPU  = 1000
	DefaultSandboxMem  = 1024
	DefaultSandboxDisk = 2048
)

// SandboxSettingsOf is a region's Sandbox API settings: the stored ones, else the
// defaults (on, every installed class, the strongest as default, no runc, 900 s). Stored
// classes that are no longer installed are left out.
func SandboxSettingsOf(r *store.Region) store.SandboxSettings {
	installed := SandboxClasses(r.Isolation.V)
	v := r.SandboxSettings.V
	if !v.Set {
		v = store.SandboxSettings{Enabled: true, AllowedClasses: installed, DefaultTTLSeconds: DefaultSandboxTTL,
			MaxTTLSeconds: DefaultSandboxMaxTTL, MaxCPUm: DefaultSandboxCPU, MaxMemoryMB: DefaultSandboxMem, MaxDiskMB: DefaultSandboxDisk}
	}
	allowed := []string{}
	for _, c := range v.AllowedClasses {
		if slices.Contains(installed, c) {
			allowed = append(allowed, c)
		}
	}
	v.AllowedClasses = allowed
	if v.DefaultClass == "" || !classOffered(v, v.DefaultClass) {
		v.DefaultClass = strongestClass(v)
	}
	return v
}

// SandboxClasses are the classes sandboxes may use on a region: Kata's and gVisor's
// (WebAssembly runs Wasm modules, not sandboxes), strongest first.
func SandboxClasses(iso store.Isolation) []string {
	var out []string
	for _, name := range []string{store.RuntimeKata, store.RuntimeGVisor} {
		if rt := iso.Runtime(name); rt.Ready() {
			out = append(out, rt.Classes...)
		}
	}
	return out
}

// classOffered reports whether sandboxes may use a class under the settings.
func classOffered(v store.SandboxSettings, class string) bool {
	return slices.Contains(v.AllowedClasses, class) || class == store.RuncClass && v.AllowRunc
}

// strongestClass is the strongest class the settings allow: Kata over gVisor over runc
// ("" when none is allowed). Allowed classes are kept strongest first.
func strongestClass(v store.SandboxSettings) string {
	if len(v.AllowedClasses) > 0 {
		return v.AllowedClasses[0]
	}
	if v.AllowRunc {
		return store.RuncClass
	}
	return ""
}

// SandboxSettingsInput is a change of the Sandbox API's settings; nil fields keep their
// value.
type SandboxSettingsInput struct {
	Enabled           *bool     `json:"enabled"`
	AllowedClasses    *[]string `json:"allowed_classes"`
	DefaultClass      *string   `json:"default_class"`
	AllowRunc         *bool     `json:"allow_runc"`
	DefaultTTLSeconds *int      `json:"default_ttl_seconds"`
	MaxTTLSeconds     *int      `json:"max_ttl_seconds"`
	MaxCPUm           *int      `json:"max_cpu_m"`
	MaxMemoryMB       *int      `json:"max_memory_mb"`
	MaxDiskMB         *int      `json:"max_disk_mb"`
}

// SetSandboxSettings changes a region's Sandbox API settings. Out-of-range values, a class
// that is not installed and a default class that is not allowed are field errors; nothing
// is stored then.
func (s *Service) SetSandboxSettings(ctx context.Context, actor kit.Actor, r *store.Region, in SandboxSettingsInput) (store.SandboxSettings, error) {
	v := SandboxSettingsOf(r)
	installed := SandboxClasses(r.Isolation.V)
	fields := map[string]string{}
	if in.Enabled != nil {
		v.Enabled = *in.Enabled
	}
	if in.AllowRunc != nil {
		v.AllowRunc = *in.AllowRunc
	}
	if in.AllowedClasses != nil {
		var allowed []string
		for _, c := range *in.AllowedClasses {
			switch {
			case c == store.RuncClass:
				fields["allowed_classes"] = "runc is allowed with allow_runc, not among the sandbox classes."
			case !slices.Contains(installed, c):
				fields["allowed_classes"] = fmt.Sprintf("%q is not installed on this region; installed: %s.", c, kit.OrNoneList(installed))
			case !slices.Contains(allowed, c):
				allowed = append(allowed, c)
			}
		}
		// Kept strongest first, the order the default class is chosen in.
		slices.SortStableFunc(allowed, func(a, b string) int { return slices.Index(installed, a) - slices.Index(installed, b) })
		v.AllowedClasses = allowed
		if allowed == nil {
			v.AllowedClasses = []string{}
		}
	}
	switch {
	case in.DefaultClass != nil && *in.DefaultClass != "":
		v.DefaultClass = *in.DefaultClass
		if !classOffered(v, v.DefaultClass) {
			fields["default_class"] = fmt.Sprintf("%q is not an allowed class; allowed: %s.", v.DefaultClass, kit.OrNoneList(offeredClasses(v)))
		}
	case in.DefaultClass != nil || !classOffered(v, v.DefaultClass):
		v.DefaultClass = strongestClass(v)
	}
	ranges := []struct {
		field    string
		in       *int
		to       *int
		min, max int
		unit     string
	}{
		{"default_ttl_seconds", in.DefaultTTLSeconds, &v.DefaultTTLSeconds, MinSandboxTTL, MaxSandboxTTL, "seconds"},
		{"max_ttl_seconds", in.MaxTTLSeconds, &v.MaxTTLSeconds, MinSandboxTTL, MaxSandboxTTL, "seconds"},
		{"max_cpu_m", in.MaxCPUm, &v.MaxCPUm, MinSandboxCPU, MaxSandboxCPU, "millicores"},
		{"max_memory_mb", in.MaxMemoryMB, &v.MaxMemoryMB, MinSandboxMem, MaxSandboxMem, "MB"},
		{"max_disk_mb", in.MaxDiskMB, &v.MaxDiskMB, MinSandboxDisk, MaxSandboxDisk, "MB"},
	}
	for _, rg := range ranges {
		if rg.in == nil {
			continue
		}
		if *rg.in < rg.min || *rg.in > rg.max {
			fields[rg.field] = fmt.Sprintf("Must be between %d and %d %s.", rg.min, rg.max, rg.unit)
			continue
		}
		*rg.to = *rg.in
	}
	if fields["default_ttl_seconds"] == "" && fields["max_ttl_seconds"] == "" && v.DefaultTTLSeconds > v.MaxTTLSeconds {
		fields["default_ttl_seconds"] = fmt.Sprintf("Must not exceed max_ttl_seconds (%d).", v.MaxTTLSeconds)
	}
	if len(fields) > 0 {
		return v, &problem.Invalid{Fields: fields}
	}
	if err := s.Store.SetSandboxSettings(ctx, r.ID, v); err != nil {
		return v, err
	}
	s.Log.Info("sandbox settings set", "region", r.Name, "enabled", v.Enabled, "allowed", strings.Join(v.AllowedClasses, ","),
		"default", v.DefaultClass, "by", actor.Email)
	v.Set = true
	return v, nil
}

// offeredClasses are the classes sandboxes may use under the settings, runc last.
func offeredClasses(v store.SandboxSettings) []string {
	out := slices.Clone(v.AllowedClasses)
	if v.AllowRunc {
		out = append(out, store.RuncClass)
	}
	return out
}
