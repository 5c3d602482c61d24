package store

import (
	"context"
	"time"
)

// Sandbox runtimes, by the name the API and the isolation column use.
const (
	RuntimeKata   = "kata"
	RuntimeGVisor = "gvisor"
	RuntimeWasm   = "wasm"
)

// RuncClass is the runtime class of workloads that run without a sandbox.
const RuncClass = "runc"

// Workload kinds, each mapped to a runtime class.
const (
	WorkloadFunctions = "functions"
	WorkloadServices  = "services"
	WorkloadJobs      = "jobs"
	WorkloadBuilds    = "builds"
	WorkloadSandboxes = "sandboxes"
)

// WorkloadKinds lists the workload kinds in the order the Isolation tab shows them.
var WorkloadKinds = []string{WorkloadFunctions, WorkloadServices, WorkloadJobs, WorkloadBuilds, WorkloadSandboxes}

// SandboxRuntime is one sandbox runtime of a region: its install state and what it has.
type SandboxRuntime struct {
	Status  ComponentStatus `json:"status,omitempty"`
	Message string          `json:"message,omitempty"`
	// Hypervisors are Kata's, by kata-deploy's shim name (qemu, clh, fc, dragonball).
	Hypervisors []string `json:"hypervisors,omitempty"`
	// Nodes are the nodes it is installed on (selected ones for WebAssembly).
	Nodes []string `json:"nodes,omitempty"`
	// Classes are the RuntimeClasses it provides.
	Classes   []string  `json:"classes,omitempty"`
	UpdatedAt time.Time `json:"updated_at,omitempty"`
	// SharedWith names the region of the same cluster whose install this is ("": the
	// region's own).
	SharedWith string `json:"shared_with,omitempty"`
}

// State is the runtime's status, not_installed when it has none yet.
func (r SandboxRuntime) State() ComponentStatus {
	return r.Status.orNotInstalled()
}

// Ready reports an installed runtime.
func (r SandboxRuntime) Ready() bool { return r.Status == ComponentReady }

// Isolation is a region's sandbox runtimes and the runtime class of each workload kind
// (runc when none is set).
type Isolation struct {
	Kata    SandboxRuntime    `json:"kata"`
	GVisor  SandboxRuntime    `json:"gvisor"`
	Wasm    SandboxRuntime    `json:"wasm"`
	Classes map[string]string `json:"classes,omitempty"`
}

// Runtime returns one runtime by name.
func (i Isolation) Runtime(name string) SandboxRuntime {
	switch name {
	case RuntimeKata:
		return i.Kata
	case RuntimeGVisor:
		return i.GVisor
	case RuntimeWasm:
		return i.Wasm
	}
	return SandboxRuntime{}
}

// Class is the runtime class a workload kind runs with.
func (i Isolation) Class(kind string) string {
	if c := i.Classes[kind]; c != "" {
		return c
	}
	return RuncClass
}

// SandboxSettings are the Sandbox API's settings of a region (PUT /api/sandbox-regions/{id}).
type SandboxSettings struct {
	// Set tells stored settings from the defaults of a region that has none yet.
	Set               bool     `json:"set,omitempty"`
	Enabled           bool     `json:"enabled"`
	AllowedClasses    []string `json:"allowed_classes"`
	DefaultClass      string   `json:"default_class"`
	AllowRunc         bool     `json:"allow_runc"`
	DefaultTTLSeconds int      `json:"default_ttl_seconds"`
	MaxTTLSeconds     int      `json:"max_ttl_seconds"`
	MaxCPUm           int      `json:"max_cpu_m"`
	MaxMemoryMB       int      `json:"max_memory_mb"`
	MaxDiskMB         int      `json:"max_disk_mb"`
}

// SetSandboxRuntime records one sandbox runtime of a region (the others stay as they are).
func (s *Store) SetSandboxRuntime(ctx context.Context, id, runtime string, v SandboxRuntime) error {
	v.UpdatedAt = time.Now().UTC()
	_, err := s.db(ctx).ExecContext(ctx, `UPDATE regions SET isolation = jsonb_set(isolation, ARRAY[$2], $3::jsonb), updated_at = now() WHERE id = $1`,
		id, runtime, JSON[SandboxRuntime]{V: v})
	if err != nil {
		return wrap("set sandbox runtime "+runtime, err)
	}
	return s.NotifyRegion(ctx, id)
}

// SetWorkloadClasses records the runtime class of each workload kind of a region.
func (s *Store) SetWorkloadClasses(ctx context.Context, id string, classes map[string]string) error {
	_, err := s.db(ctx).ExecContext(ctx, `UPDATE regions SET isolation = jsonb_set(isolation, '{classes}', $2::jsonb), updated_at = now() WHERE id = $1`,
		id, JSON[map[string]string]{V: classes})
	if err != nil {
		return wrap("set workload classes", err)
	}
	return s.NotifyRegion(ctx, id)
}

// SetSandboxSettings records the Sandbox API's settings of a region.
func (s *Store) SetSandboxSettings(ctx context.Context, id string, v SandboxSettings) error {
	v.Set = true
	return s.updateRegion(ctx, "set sandbox settings", id, cols{{"sandbox_settings", JSON[SandboxSettings]{V: v}}})
}
