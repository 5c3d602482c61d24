package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/lib/pq"
	"runr.dev/console/crypt"
)

func init() {
	RegisterSecretColumn("projects", "id", "secret_env_vars")
	RegisterSecretColumn("projects", "id", "env_vars_sealed")
}

// RegionSettings are the General settings of a region.
type RegionSettings struct {
	RequestTimeout    int      `json:"request_timeout"`
	AgentWSURL        string   `json:"agent_ws_url"`
	IngressTrustedIPs []string `json:"ingress_trusted_ips"`
	KnativeDomain     string   `json:"knative_domain"`
	// ImageMirror is the region's own image mirror ("" takes the console's).
	ImageMirror string `json:"image_mirror,omitempty"`
}

// Monitoring is a region's choice of Prometheus and Loki ("" means RunR's own).
type Monitoring struct {
	PrometheusURL string `json:"prometheus_url"`
	LokiURL       string `json:"loki_url"`
	LokiOrgID     string `json:"loki_org_id"`
	// StorageClass holds the volumes of RunR's own Prometheus, Loki and Tempo ("" the
	// cluster's default class); the sizes (GiB) and retentions (days) are 0 for RunR's
	// defaults (observability.Storage).
	StorageClass            string `json:"storage_class,omitempty"`
	PrometheusSizeGi        int    `json:"prometheus_size_gi,omitempty"`
	LokiSizeGi              int    `json:"loki_size_gi,omitempty"`
	TempoSizeGi             int    `json:"tempo_size_gi,omitempty"`
	PrometheusRetentionDays int    `json:"prometheus_retention_days,omitempty"`
	LokiRetentionDays       int    `json:"loki_retention_days,omitempty"`
}

// RegistryConfig holds the non-secret registry fields.
type RegistryConfig struct {
	StorageType      string `json:"storage_type,omitempty"` // pvc | s3
	StorageClass     string `json:"storage_class,omitempty"`
	Size             string `json:"size,omitempty"`
	S3Endpoint       string `json:"s3_endpoint,omitempty"`
	S3Bucket         string `json:"s3_bucket,omitempty"`
	S3Region         string `json:"s3_region,omitempty"`
	S3AccessKey      string `json:"s3_access_key,omitempty"`
	ExternalAddress  string `json:"external_address,omitempty"`
	ExternalUsername string `json:"external_username,omitempty"`
	CreatedNamespace bool   `json:"created_namespace,omitempty"`
}

// ComponentState is the install state of one component of a region.
type ComponentState struct {
	Status    ComponentStatus `json:"status"`
	Message   string          `json:"message,omitempty"`
	Version   string          `json:"version,omitempty"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// HealthLayer is one layer of a region's status check.
type HealthLayer struct {
	State     HealthState       `json:"state"`
	Reason    string            `json:"reason"`
	CheckedAt time.Time         `json:"checked_at"`
	Items     map[string]string `json:"items,omitempty"`
}

// Health is the result of the last status check, in three layers.
type Health struct {
	API        HealthLayer `json:"api"`
	Components HealthLayer `json:"components"`
	External   HealthLayer `json:"external"`
	// Failures counts consecutive unreachable checks (the circuit breaker's memory).
	Failures  int       `json:"failures"`
	NextCheck time.Time `json:"next_check"`
}

// MigrationDetail records the steps of a region move.
type MigrationDetail struct {
	JobID     string            `json:"job_id,omitempty"`
	StartedAt *time.Time        `json:"started_at,omitempty"`
	Steps     []MigrationStep   `json:"steps,omitempty"`
	Refused   map[string]string `json:"refused,omitempty"`
	Error     string            `json:"error,omitempty"`
	// Had records what the region had before the move.
	Had map[string]any `json:"had,omitempty"`
}

// MigrationStep is one line of a move's progress.
type MigrationStep struct {
	Name    string `json:"name"`
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
}

// Region is one Kubernetes cluster that runs functions.
type Region struct {
	// SecretError says that the region's secrets could not be decrypted (they are blank).
	SecretError       string                          `db:"-"`
	ID                string                          `db:"id"`
	Name              string                          `db:"name"`
	Kubeconfig        string                          `db:"kubeconfig"`
	ClusterServer     string                          `db:"cluster_server"`
	ClusterKey        string                          `db:"cluster_key"`
	K8sVersion        string                          `db:"k8s_version"`
	Status            RegionStatus                    `db:"region_status"`
	Nodes             pq.StringArray                  `db:"nodes"`
	DataLocation      string                          `db:"data_location"`
	Settings          JSON[RegionSettings]            `db:"settings"`
	Monitoring        JSON[Monitoring]                `db:"monitoring"`
	RegistryMode      RegistryMode                    `db:"registry_mode"`
	RegistryStatus    ComponentStatus                 `db:"registry_status"`
	RegistryMessage   string                          `db:"registry_status_message"`
	RegistryConfig    JSON[RegistryConfig]            `db:"registry_config"`
	RegistrySecret    string                          `db:"registry_secret"`
	RegistryAddress   string                          `db:"registry_address"`
	OperatorStatus    ComponentStatus                 `db:"operator_status"`
	OperatorNamespace string                          `db:"operator_namespace"`
	OperatorVersion   string                          `db:"operator_version"`
	OperatorAdopted   bool                            `db:"operator_adopted"`
	ServingStatus     ComponentStatus                 `db:"serving_status"`
	ServingNamespace  string                          `db:"serving_namespace"`
	KnativeVersion    string                          `db:"knative_version"`
	ServingAdopted    bool                            `db:"serving_adopted"`
	KnativeMessage    string                          `db:"knative_message"`
	RedisMode         RedisMode                       `db:"redis_mode"`
	RedisStatus       ComponentStatus                 `db:"redis_status"`
	RedisAddress      string                          `db:"redis_address"`
	RedisPassword     string                          `db:"redis_password"`
	RedisMessage      string                          `db:"redis_message"`
	Components        JSON[map[string]ComponentState] `db:"components"`
	TracingMode       TracingMode                     `db:"tracing_mode"`
	// TracingRetentionHours is the region's own Tempo retention (0: the console's).
	TracingRetentionHours int                   `db:"tracing_retention_hours"`
	ExternalIP            string                `db:"external_ip"`
	DNSResolved           bool                  `db:"dns_resolved"`
	Health                JSON[Health]          `db:"health"`
	CheckedAt             *time.Time            `db:"checked_at"`
	AgentToken            string                `db:"agent_token"`
	AgentTokenHash        string                `db:"agent_token_hash"`
	AgentLastSeenAt       *time.Time            `db:"agent_last_seen_at"`
	FunctionTLSCert       string                `db:"function_tls_cert"`
	FunctionTLSKey        string                `db:"function_tls_key"`
	FunctionTLSExpiresAt  *time.Time            `db:"function_tls_expires_at"`
	FaaSCPUOvercommit     float64               `db:"faas_cpu_overcommit"`
	FaaSMemoryOvercommit  float64               `db:"faas_memory_overcommit"`
	MigrationStatus       MigrationStatus       `db:"migration_status"`
	MigrationDetail       JSON[MigrationDetail] `db:"migration_detail"`
	MigrationDNSCheckAt   *time.Time            `db:"migration_dns_check_at"`
	OldKubeconfig         string                `db:"old_kubeconfig"`
	OldExternalIP         string                `db:"old_external_ip"`
	DomainMigrationStatus MigrationStatus       `db:"domain_migration_status"`
	DomainMigrationTarget string                `db:"domain_migration_target"`
	Isolation             JSON[Isolation]       `db:"isolation"`
	SandboxSettings       JSON[SandboxSettings] `db:"sandbox_settings"`
	GPU                   JSON[RegionGPU]       `db:"gpu"`
	DataServices          JSON[DataServices]    `db:"data_services"`
	Skupper               JSON[SkupperSite]     `db:"skupper"`
	SupplyChain           JSON[SupplyChain]     `db:"supply_chain"`
	CreatedAt             time.Time             `db:"created_at"`
	UpdatedAt             time.Time             `db:"updated_at"`
	// TenantID is the tenant that owns the region (nil: a platform region).
	TenantID *string `db:"tenant_id"`
	// Mode decides whether tenant quotas apply on a platform region.
	Mode RegionMode `db:"region_mode"`
	// ObjectSecretKey is the administrator's secret key of an external object store.
	ObjectSecretKey string `db:"object_secret_key"`

	// ProjectCount is filled by the list queries.
	ProjectCount int `db:"project_count"`
}

// Tenant returns the id of the tenant that owns the region ("" for a platform region).
func (r *Region) Tenant() string {
	if r == nil {
		return ""
	}
	return deref(r.TenantID)
}

// Component returns the state of a named component ("not_installed" when unknown).
func (r *Region) Component(name string) ComponentState {
	if c, ok := r.Components.V[name]; ok {
		return c
	}
	return ComponentState{Status: ComponentNotInstalled}
}

// regionSecretFields are the Region columns encrypted at rest.
var regionSecretFields = map[string]bool{
	"kubeconfig": true, "old_kubeconfig": true, "registry_secret": true,
	"redis_password": true, "function_tls_key": true, "agent_token": true, "object_secret_key": true,
}

// decryptRegion opens the region's secrets. A secret no configured key opens is left
// blank and the region carries SecretError: that one region shows the error, and every
// other region, list and sweep goes on.
func (s *Store) decryptRegion(r *Region) {
	for _, f := range []*string{&r.Kubeconfig, &r.OldKubeconfig, &r.RegistrySecret, &r.RedisPassword, &r.FunctionTLSKey, &r.AgentToken, &r.ObjectSecretKey} {
		v, err := s.Cipher.Decrypt(*f)
		if err != nil {
			r.SecretError = SecretErrorText
			*f = ""
			continue
		}
		*f = v
	}
}

// SecretErrorText is what a region or project whose secrets cannot be read says.
const SecretErrorText = "Its secrets cannot be decrypted with the configured keys: start the console with the key they were written with in RUNR_APP_KEY or RUNR_PREVIOUS_APP_KEYS."

const regionSelect = `SELECT r.*, (SELECT count(*) FROM projects p WHERE p.region_id = r.id) AS project_count FROM regions r`

// regionPublicColumns are the columns of a region without its secrets (lists never
// show them, and decrypting a thousand kubeconfigs for a list would be waste).
const regionPublicColumns = `r.id, r.name, r.cluster_server, r.cluster_key, r.k8s_version, r.region_status, r.nodes, r.data_location,
	r.settings, r.monitoring, r.registry_mode, r.registry_status, r.registry_status_message, r.registry_config, r.registry_address,
	r.operator_status, r.operator_namespace, r.operator_version, r.operator_adopted, r.serving_status, r.serving_namespace,
	r.knative_version, r.serving_adopted, r.knative_message, r.redis_mode, r.redis_status, r.redis_address, r.redis_message,
	r.components, r.external_ip, r.dns_resolved, r.health, r.checked_at, r.agent_last_seen_at, r.function_tls_expires_at,
	r.faas_cpu_overcommit, r.faas_memory_overcommit, r.migration_status, r.migration_dns_check_at,
	r.old_external_ip, r.domain_migration_status, r.domain_migration_target, r.gpu, r.data_services, r.skupper, r.isolation, r.created_at, r.updated_at,
	r.tenant_id, r.region_mode, r.tracing_mode`

// regionSummaryColumns are what the regions list page shows.
const regionSummaryColumns = `r.id, r.name, r.region_status, r.registry_status, r.serving_status, r.redis_status,
	r.external_ip, r.dns_resolved, r.migration_status, r.gpu, r.tenant_id, r.region_mode, r.health`

// CreateRegion inserts a region; secret fields are encrypted.
func (s *Store) CreateRegion(ctx context.Context, r *Region) error {
	orDefault(&r.ID, NewID())
	orDefault(&r.Status, RegionActive)
	orDefault(&r.RegistryMode, RegistryNone)
	orDefault(&r.RedisMode, RedisManaged)
	orDefault(&r.Mode, RegionManaged)
	if r.Components.V == nil {
		r.Components.V = map[string]ComponentState{}
	}
	if r.Nodes == nil {
		r.Nodes = pq.StringArray{}
	}
	// A region created in a tenant's walls is the tenant's (the column's default).
	err := s.db(ctx).GetContext(ctx, &r.TenantID, `INSERT INTO regions (id, name, kubeconfig, cluster_server, cluster_key, k8s_version,
		region_status, nodes, data_location, settings, monitoring, registry_mode, registry_config, registry_secret,
		redis_mode, redis_address, redis_password, components, agent_token, agent_token_hash, region_mode, tenant_id)
		VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,coalesce($22::text, runr_tenant()))
		RETURNING tenant_id`,
		r.ID, r.Name, s.Cipher.Encrypt(r.Kubeconfig), r.ClusterServer, r.ClusterKey, r.K8sVersion,
		r.Status, r.Nodes, r.DataLocation, r.Settings, r.Monitoring, r.RegistryMode, r.RegistryConfig, s.Cipher.Encrypt(r.RegistrySecret),
		r.RedisMode, r.RedisAddress, s.Cipher.Encrypt(r.RedisPassword), r.Components, s.Cipher.Encrypt(r.AgentToken), r.AgentTokenHash,
		r.Mode, r.TenantID)
	return wrap("create region "+r.Name, err)
}

// RegionByID returns one region with its secrets decrypted.
func (s *Store) RegionByID(ctx context.Context, id string) (*Region, error) {
	return s.regionWhere(ctx, "r.id", id)
}

// RegionByName returns one region by name.
func (s *Store) RegionByName(ctx context.Context, name string) (*Region, error) {
	return s.regionWhere(ctx, "r.name", name)
}

// regionWhere reads the region whose column is v, secrets decrypted.
func (s *Store) regionWhere(ctx context.Context, column, v string) (*Region, error) {
	r := &Region{}
	if err := s.db(ctx).GetContext(ctx, r, regionSelect+` WHERE `+column+` = $1`, v); err != nil {
		return nil, wrap("region "+v, err)
	}
	s.decryptRegion(r)
	return r, nil
}

// RegionRef resolves an id or a name to a region.
func (s *Store) RegionRef(ctx context.Context, ref string) (*Region, error) {
	r, err := s.RegionByID(ctx, ref)
	if isNotFound(err) {
		return s.RegionByName(ctx, ref)
	}
	return r, err
}

// AgentRegion is what an agent's connection needs of a region its token belongs to.
type AgentRegion struct {
	ID         string       `db:"id"`
	Name       string       `db:"name"`
	ClusterKey string       `db:"cluster_key"`
	Status     RegionStatus `db:"region_status"`
}

// RegionsByAgentToken finds the regions a runr-agent token belongs to: one agent runs per
// cluster, and every region of its cluster shares its token (ErrNotFound: none left).
// Each connected agent asks again every few seconds, so it reads four columns, no secret.
func (s *Store) RegionsByAgentToken(ctx context.Context, token string) ([]AgentRegion, error) {
	var rs []AgentRegion
	if err := s.db(ctx).SelectContext(ctx, &rs, `SELECT id, name, cluster_key, region_status FROM regions WHERE agent_token_hash = $1 AND agent_token_hash <> '' ORDER BY name`, crypt.HashToken(token)); err != nil {
		return nil, wrap("regions by agent token", err)
	}
	if len(rs) == 0 {
		return nil, ErrNotFound
	}
	return rs, nil
}

// RegionFilter narrows ListRegions.
type RegionFilter struct {
	Query      string
	ClusterKey string
	ActiveOnly bool
	// Health keeps the regions whose health at a glance is one of HealthFilters (only
	// ListRegionPage reads it, and SortByHealth: the worst first, then by name).
	Health       string
	SortByHealth bool
	Limit        int
	Offset       int
}

// ListRegions returns regions by name, with their project counts. Secrets are read
// only when withSecrets is set.
func (s *Store) ListRegions(ctx context.Context, f RegionFilter, withSecrets bool) ([]Region, error) {
	cols := "r.*"
	if !withSecrets {
		cols = regionPublicColumns
	}
	return s.listRegions(ctx, cols, f, withSecrets)
}

// CountedRegions is a page of regions with the number of all that match.
type CountedRegions struct {
	Regions []Region
	Total   int
}

// ListRegionPage returns one page of regions (public columns, or the summary columns)
// and the number of all that match, in one query.
func (s *Store) ListRegionPage(ctx context.Context, f RegionFilter, summary bool) (CountedRegions, error) {
	cols := regionPublicColumns
	if summary {
		cols = regionSummaryColumns
	}
	var rows []struct {
		Region
		Total int `db:"total"`
	}
	// The total is an uncorrelated subquery, computed once (a window count would make
	// PostgreSQL build every row, project counts included, before the LIMIT).
	match := `($1 = '' OR r.name LIKE '%' || $1 || '%') AND ` + healthWhereSQL("$2")
	order := `r.name`
	if f.SortByHealth {
		order = healthRankSQL + ` DESC, r.name`
	}
	q := `SELECT ` + cols + `, (SELECT count(*) FROM projects p WHERE p.region_id = r.id) AS project_count,
		(SELECT count(*) FROM regions r WHERE ` + match + `) AS total
		FROM regions r WHERE ` + match + ` ORDER BY ` + order
	if f.Limit > 0 {
		q += fmt.Sprintf(` LIMIT %d OFFSET %d`, f.Limit, f.Offset)
	}
	if err := s.db(ctx).SelectContext(ctx, &rows, q, likeEscape(f.Query), f.Health); err != nil {
		return CountedRegions{}, wrap("list regions", err)
	}
	out := CountedRegions{Regions: make([]Region, len(rows))}
	for i := range rows {
		out.Regions[i] = rows[i].Region
		out.Total = rows[i].Total
	}
	if len(rows) == 0 && f.Offset > 0 {
		// A page past the end still says how many there are.
		n, err := s.countRegionPage(ctx, match, f)
		if err != nil {
			return out, err
		}
		out.Total = n
	}
	return out, nil
}

func (s *Store) listRegions(ctx context.Context, cols string, f RegionFilter, withSecrets bool) ([]Region, error) {
	var rs []Region
	q := `SELECT ` + cols + `, (SELECT count(*) FROM projects p WHERE p.region_id = r.id) AS project_count FROM regions r
		WHERE ($1 = '' OR r.name LIKE '%' || $1 || '%') AND ($2 = '' OR r.cluster_key = $2)
		AND (NOT $3 OR r.region_status = 'active') ORDER BY r.name`
	args := []any{likeEscape(f.Query), f.ClusterKey, f.ActiveOnly}
	if f.Limit > 0 {
		q += fmt.Sprintf(` LIMIT %d OFFSET %d`, f.Limit, f.Offset)
	}
	if err := s.db(ctx).SelectContext(ctx, &rs, q, args...); err != nil {
		return nil, wrap("list regions", err)
	}
	if withSecrets {
		for i := range rs {
			s.decryptRegion(&rs[i])
		}
	}
	return rs, nil
}

// SweepTarget is what the status sweep needs to divide the regions before it reads them:
// the region and its cluster.
type SweepTarget struct {
	ID         string `db:"id"`
	ClusterKey string `db:"cluster_key"`
	// Failing: the region's last check found its cluster's API down.
	Failing bool `db:"failing"`
}

// SweepTargets lists every region's id, cluster key and whether its last check found the
// API down (no secrets, no other state: the sweep reads those per part it claims,
// RegionsWithSecrets). Regions in maintenance or inactive are checked too: an
// administrator works on them exactly then.
func (s *Store) SweepTargets(ctx context.Context) ([]SweepTarget, error) {
	var out []SweepTarget
	err := s.db(ctx).SelectContext(ctx, &out, `SELECT id, cluster_key, coalesce(health->'api'->>'state' = 'down', false) AS failing
		FROM regions ORDER BY name`)
	return out, wrap("list the regions to sweep", err)
}

// RegionsWithSecrets reads regions by id, secrets included, by name.
func (s *Store) RegionsWithSecrets(ctx context.Context, ids []string) ([]Region, error) {
	var rs []Region
	if err := s.db(ctx).SelectContext(ctx, &rs, `SELECT r.*, (SELECT count(*) FROM projects p WHERE p.region_id = r.id) AS project_count
		FROM regions r WHERE r.id = ANY($1) ORDER BY r.name`, pq.Array(ids)); err != nil {
		return nil, wrap("read regions", err)
	}
	for i := range rs {
		s.decryptRegion(&rs[i])
	}
	return rs, nil
}

// CountRegions counts the regions matching a query.
func (s *Store) CountRegions(ctx context.Context, query string) (int, error) {
	var n int
	err := s.db(ctx).GetContext(ctx, &n, `SELECT count(*) FROM regions WHERE $1 = '' OR name LIKE '%' || $1 || '%'`, likeEscape(query))
	return n, wrap("count regions", err)
}

// countRegionPage counts the regions a page's condition matches.
func (s *Store) countRegionPage(ctx context.Context, match string, f RegionFilter) (int, error) {
	var n int
	err := s.db(ctx).GetContext(ctx, &n, `SELECT count(*) FROM regions r WHERE `+match, likeEscape(f.Query), f.Health)
	return n, wrap("count regions", err)
}

// RegionsChannel is the NOTIFY channel that announces a changed region.
const RegionsChannel = "runr_regions"

// ListsChannel is the NOTIFY channel on which the database itself (triggers of migration
// 00010) announces any change to what the region lists show.
const ListsChannel = "runr_lists"

// RegionPagesChannel is the NOTIFY channel on which the database announces changes to
// job steps and agent snapshots (what a region's page shows besides the lists; its job
// events are announced on EventsChannel).
const RegionPagesChannel = "runr_region_pages"

// NotifyRegion tells every console that a region changed (banners, lists).
func (s *Store) NotifyRegion(ctx context.Context, id string) error {
	_, err := s.db(ctx).ExecContext(ctx, `SELECT pg_notify($1, $2)`, RegionsChannel, id)
	return wrap("notify region", err)
}

// SetComponent records the state of one component of a region.
func (s *Store) SetComponent(ctx context.Context, id, name string, c ComponentState) error {
	if c.UpdatedAt.IsZero() {
		c.UpdatedAt = time.Now().UTC()
	}
	val := JSON[ComponentState]{V: c}
	_, err := s.db(ctx).ExecContext(ctx, `UPDATE regions SET components = jsonb_set(components, ARRAY[$2], $3::jsonb), updated_at = now() WHERE id = $1`,
		id, name, val)
	return wrap("set component "+name, err)
}

// DeleteRegion removes a region's record. Its projects and bindings stay, without a region
// (ON DELETE SET NULL); metric snapshots, sessions, events and log settings go with it
// (ON DELETE CASCADE); its agent token goes with the row.
func (s *Store) DeleteRegion(ctx context.Context, id string) error {
	res, err := s.db(ctx).ExecContext(ctx, `DELETE FROM regions WHERE id = $1`, id)
	return affected("delete region "+id, res, err)
}

// RegionsOnCluster returns the regions that share a cluster.
func (s *Store) RegionsOnCluster(ctx context.Context, clusterKey string) ([]Region, error) {
	return s.ListRegions(ctx, RegionFilter{ClusterKey: clusterKey}, false)
}

// ClusterAgentToken returns the runr-agent token the regions of a cluster share ("" when
// none of them has one).
func (s *Store) ClusterAgentToken(ctx context.Context, clusterKey string) (string, error) {
	var enc string
	err := s.db(ctx).GetContext(ctx, &enc, `SELECT agent_token FROM regions WHERE cluster_key = $1 AND agent_token <> '' ORDER BY created_at LIMIT 1`, clusterKey)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", wrap("cluster agent token", err)
	}
	tok, err := s.Cipher.Decrypt(enc)
	return tok, wrap("cluster agent token", err)
}

// MovingRegion is a region whose move to another cluster is under way.
type MovingRegion struct {
	ID         string          `db:"id"`
	Name       string          `db:"name"`
	Status     MigrationStatus `db:"migration_status"`
	DNSCheckAt *time.Time      `db:"migration_dns_check_at"`
}

// MovingRegions returns the regions with a move under way.
func (s *Store) MovingRegions(ctx context.Context) ([]MovingRegion, error) {
	var rs []MovingRegion
	err := s.db(ctx).SelectContext(ctx, &rs, `SELECT id, name, migration_status, migration_dns_check_at FROM regions
		WHERE migration_status IN ('pending', 'in_progress', 'dns_check') ORDER BY name`)
	return rs, wrap("moving regions", err)
}

// AddSnapshot stores a metric snapshot of a region.
func (s *Store) AddSnapshot(ctx context.Context, regionID string, at time.Time, data []byte) error {
	_, err := s.db(ctx).ExecContext(ctx, `INSERT INTO metric_snapshots (region_id, taken_at, data) VALUES ($1, $2, $3)`, regionID, at, data)
	return wrap("add snapshot", err)
}

// LatestSnapshot returns a region's newest snapshot (nil when none).
func (s *Store) LatestSnapshot(ctx context.Context, regionID string) ([]byte, *time.Time, error) {
	var row struct {
		Data    []byte    `db:"data"`
		TakenAt time.Time `db:"taken_at"`
	}
	err := s.db(ctx).GetContext(ctx, &row, `SELECT data, taken_at FROM metric_snapshots WHERE region_id = $1 ORDER BY taken_at DESC LIMIT 1`, regionID)
	if err != nil {
		if err = wrap("latest snapshot", err); isNotFound(err) {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	return row.Data, &row.TakenAt, nil
}

// AddPodSession records a pod's start, stop or restart.
func (s *Store) AddPodSession(ctx context.Context, regionID, ns, pod, event string, restarts int32, at time.Time) error {
	_, err := s.db(ctx).ExecContext(ctx, `INSERT INTO pod_sessions (region_id, namespace, pod, event, restarts, at) VALUES ($1,$2,$3,$4,$5,$6)`,
		regionID, ns, pod, event, restarts, at)
	return wrap("add pod session", err)
}

// AddKubeEvent records a Kubernetes event of a region.
func (s *Store) AddKubeEvent(ctx context.Context, regionID, ns, object, typ, reason, message string, at time.Time) error {
	_, err := s.db(ctx).ExecContext(ctx, `INSERT INTO kube_events (region_id, namespace, object, type, reason, message, at) VALUES ($1,$2,$3,$4,$5,$6,$7)`,
		regionID, ns, object, typ, reason, truncate(message, 2000), at)
	return wrap("add kube event", err)
}

// AgentHosts returns the hosts of every region's agent_ws_url.
func (s *Store) AgentHosts(ctx context.Context) ([]string, error) {
	var urls []string
	err := s.db(ctx).SelectContext(ctx, &urls, `SELECT settings->>'agent_ws_url' FROM regions WHERE coalesce(settings->>'agent_ws_url', '') <> ''`)
	return urls, wrap("agent hosts", err)
}
