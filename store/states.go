package store

// RegionStatus is a region's status (region_status).
type RegionStatus string

// Region statuses: a region that is not active answers through its status block.
const (
	RegionActive      RegionStatus = "active"
	RegionInactive    RegionStatus = "inactive"
	RegionMaintenance RegionStatus = "maintenance"
)

// ComponentStatus is the install state of a component of a region: the operator,
// Serving, the registry, Redis, and those in the components map.
type ComponentStatus string

// orNotInstalled is the status, not_installed when there is none yet.
func (s ComponentStatus) orNotInstalled() ComponentStatus {
	if s == "" {
		return ComponentNotInstalled
	}
	return s
}

// Component statuses.
const (
	ComponentNotInstalled ComponentStatus = "not_installed"
	ComponentInstalling   ComponentStatus = "installing"
	ComponentReady        ComponentStatus = "ready"
	ComponentError        ComponentStatus = "error"
	ComponentRemoving     ComponentStatus = "removing"
	// ComponentExternal: the region uses an instance of its own (Prometheus, Loki).
	ComponentExternal ComponentStatus = "external"
	// ComponentConnected and ComponentDisconnected are the runr-agent's, as it reports.
	ComponentConnected    ComponentStatus = "connected"
	ComponentDisconnected ComponentStatus = "disconnected"
)

// JobStatus is a job's state.
type JobStatus string

// Job statuses.
const (
	JobQueued    JobStatus = "queued"
	JobRunning   JobStatus = "running"
	JobSucceeded JobStatus = "succeeded"
	JobFailed    JobStatus = "failed"
	JobCancelled JobStatus = "cancelled"
)

// StepStatus is the state of one step of a job.
type StepStatus string

// Step statuses.
const (
	StepPending StepStatus = "pending"
	StepRunning StepStatus = "running"
	StepDone    StepStatus = "done"
	StepSkipped StepStatus = "skipped"
	StepFailed  StepStatus = "failed"
)

// MigrationStatus is the state of a region move (migration_status) or of a base-domain
// migration (domain_migration_status); "" is none.
type MigrationStatus string

// Migration statuses.
const (
	MigrationNone       MigrationStatus = ""
	MigrationPending    MigrationStatus = "pending"
	MigrationInProgress MigrationStatus = "in_progress"
	MigrationDNSCheck   MigrationStatus = "dns_check"
	MigrationCompleted  MigrationStatus = "completed"
	MigrationFailed     MigrationStatus = "failed"
	MigrationRolledBack MigrationStatus = "rolled_back"
)

// RegionMode decides whether tenant quotas apply on a platform region (Tenancy module).
// The spec's table of modes was lost: managed (quotas apply and add up to at most the
// capacity; the default) and shared (tenants share the region without quota enforcement).
type RegionMode string

// Region modes.
const (
	RegionManaged RegionMode = "managed"
	RegionShared  RegionMode = "shared"
)

// RegionModes lists the region modes, the default first.
var RegionModes = []RegionMode{RegionManaged, RegionShared}

// Valid reports whether m is a known region mode.
func (m RegionMode) Valid() bool { return m == RegionManaged || m == RegionShared }

// RegistryMode is where a region's images live.
type RegistryMode string

// Registry modes.
const (
	RegistryInternal RegistryMode = "internal"
	RegistryExternal RegistryMode = "external"
	RegistryNone     RegistryMode = "none"
)

// RedisMode is the Redis of a region's queue triggers.
type RedisMode string

// Redis modes.
const (
	RedisManaged  RedisMode = "managed"
	RedisExternal RedisMode = "external"
	// RedisInCluster is a Redis already running in the region's cluster, at a Service's
	// address (the spec's in_cluster): RunR installs none and a move keeps the address.
	RedisInCluster RedisMode = "in_cluster"
	RedisNone      RedisMode = "none"
)

// Given reports whether the region uses a Redis the administrator gave by its address
// (external or in the cluster): RunR installs and removes none.
func (m RedisMode) Given() bool { return m == RedisExternal || m == RedisInCluster }

// TracingMode is whether a region wants the tracing backend.
type TracingMode string

// Tracing modes.
const (
	// TracingDefault follows the console's default (RUNR_TRACING_DEFAULT_MODE).
	TracingDefault TracingMode = ""
	TracingOn      TracingMode = "on"
	TracingOff     TracingMode = "off"
)

// HealthState is the verdict of one layer of a status check.
type HealthState string

// Health states.
const (
	HealthOK       HealthState = "ok"
	HealthDegraded HealthState = "degraded"
	HealthDown     HealthState = "down"
	HealthUnknown  HealthState = "unknown"
)

// Running reports a move that has started and not ended.
func (m MigrationStatus) Running() bool {
	return m == MigrationPending || m == MigrationInProgress || m == MigrationDNSCheck
}

// Unsettled reports a move under way, or one that failed and waits for a decision (a
// retry or a rollback); a completed or rolled-back move, or none, is settled.
func (m MigrationStatus) Unsettled() bool { return m.Running() || m == MigrationFailed }

// String names the status, "none" for no migration.
func (m MigrationStatus) String() string {
	if m == MigrationNone {
		return "none"
	}
	return string(m)
}

// Done reports a job that ended.
func (s JobStatus) Done() bool { return s == JobSucceeded || s == JobFailed || s == JobCancelled }

// ProjectState is whether a project runs.
type ProjectState string

// Project states: none (never deployed), running, stopped.
const (
	ProjectNone    ProjectState = "none"
	ProjectRunning ProjectState = "running"
	ProjectStopped ProjectState = "stopped"
)

// ProjectKind is what a project runs as.
type ProjectKind string

// Project kinds: an HTTP function (a Knative Service), a queue worker (a Deployment that
// consumes a Redis stream of the region's Redis) and a scheduled job (a CronJob).
const (
	ProjectHTTP         ProjectKind = "http"
	ProjectQueueWorker  ProjectKind = "queue_worker"
	ProjectScheduledJob ProjectKind = "scheduled_job"
)

// ProjectKinds are the kinds a project can be, in the order forms offer them.
var ProjectKinds = []ProjectKind{ProjectHTTP, ProjectQueueWorker, ProjectScheduledJob}

// Label is how pages name a project kind.
func (k ProjectKind) Label() string {
	switch k {
	case ProjectQueueWorker:
		return "Queue worker"
	case ProjectScheduledJob:
		return "Scheduled job"
	}
	return "HTTP function"
}
