package store

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/lib/pq"

	"runr.dev/console/crypt"
)

// Ptr returns a pointer to v: the optional fields of the region updates below.
func Ptr[T any](v T) *T { return &v }

// column is one column a region update sets.
type column struct {
	name  string
	value any
}

// cols collects the columns of an update whose fields are set.
type cols []column

func set[T any](c *cols, name string, v *T) {
	if v != nil {
		*c = append(*c, column{name, *v})
	}
}

// changed collects the columns of an update struct whose pointer fields are set, each
// named by its field's `col` tag (",json" for a jsonb column).
func changed(u any) cols {
	var c cols
	v := reflect.ValueOf(u)
	for i := 0; i < v.NumField(); i++ {
		name, opt, _ := strings.Cut(v.Type().Field(i).Tag.Get("col"), ",")
		f := v.Field(i)
		if name == "" || f.Kind() != reflect.Pointer || f.IsNil() {
			continue
		}
		val := f.Elem().Interface()
		if opt == "json" {
			val = JSON[any]{V: val}
		}
		c = append(c, column{name, val})
	}
	return c
}

// updateRegion writes the columns of one typed update (secret columns encrypted) and
// announces the change.
func (s *Store) updateRegion(ctx context.Context, op, id string, c cols) error {
	if len(c) == 0 {
		return nil
	}
	sets := make([]string, 0, len(c)+1)
	args := []any{id}
	for i, col := range c {
		v := col.value
		if regionSecretFields[col.name] {
			v = s.Cipher.Encrypt(v.(string))
		}
		sets = append(sets, fmt.Sprintf("%s = $%d", col.name, i+2))
		args = append(args, v)
	}
	sets = append(sets, "updated_at = now()")
	res, err := s.db(ctx).ExecContext(ctx, `UPDATE regions SET `+strings.Join(sets, ", ")+` WHERE id = $1`, args...)
	if err := affected(op+" "+id, res, err); err != nil {
		return err
	}
	return s.NotifyRegion(ctx, id)
}

// OperatorUpdate changes what a region records of its Knative Operator; nil fields stay.
type OperatorUpdate struct {
	Status    *ComponentStatus `col:"operator_status"`
	Namespace *string          `col:"operator_namespace"`
	Version   *string          `col:"operator_version"`
	Adopted   *bool            `col:"operator_adopted"`
	// Message is the region's Knative message (shared with Serving).
	Message *string `col:"knative_message"`
}

// UpdateOperator records the state of the region's Knative Operator.
func (s *Store) UpdateOperator(ctx context.Context, id string, u OperatorUpdate) error {
	return s.updateRegion(ctx, "update operator", id, changed(u))
}

// ServingUpdate changes what a region records of its Knative Serving and how it is
// reached; nil fields stay.
type ServingUpdate struct {
	Status      *ComponentStatus `col:"serving_status"`
	Namespace   *string          `col:"serving_namespace"`
	Version     *string          `col:"knative_version"`
	Adopted     *bool            `col:"serving_adopted"`
	Message     *string          `col:"knative_message"`
	ExternalIP  *string          `col:"external_ip"`
	DNSResolved *bool            `col:"dns_resolved"`
}

// UpdateServing records the state of the region's Knative Serving.
func (s *Store) UpdateServing(ctx context.Context, id string, u ServingUpdate) error {
	return s.updateRegion(ctx, "update serving", id, changed(u))
}

// RegistryUpdate changes a region's registry; nil fields stay.
type RegistryUpdate struct {
	Mode    *RegistryMode    `col:"registry_mode"`
	Status  *ComponentStatus `col:"registry_status"`
	Message *string          `col:"registry_status_message"`
	Address *string          `col:"registry_address"`
	Config  *RegistryConfig  `col:"registry_config,json"`
	// Secret is the registry's secret value (S3 secret key or external password).
	Secret *string `col:"registry_secret"`
}

// UpdateRegistry records the region's registry.
func (s *Store) UpdateRegistry(ctx context.Context, id string, u RegistryUpdate) error {
	return s.updateRegion(ctx, "update registry", id, changed(u))
}

// RedisUpdate changes a region's Redis; nil fields stay.
type RedisUpdate struct {
	Mode     *RedisMode       `col:"redis_mode"`
	Status   *ComponentStatus `col:"redis_status"`
	Message  *string          `col:"redis_message"`
	Address  *string          `col:"redis_address"`
	Password *string          `col:"redis_password"`
}

// TracingUpdate changes a region's tracing; nil fields stay.
type TracingUpdate struct {
	Mode           *TracingMode `col:"tracing_mode"`
	RetentionHours *int         `col:"tracing_retention_hours"`
}

// SetTracing records a region's tracing mode and retention.
func (s *Store) SetTracing(ctx context.Context, id string, u TracingUpdate) error {
	return s.updateRegion(ctx, "set the tracing", id, changed(u))
}

// UpdateRedis records the region's Redis.
func (s *Store) UpdateRedis(ctx context.Context, id string, u RedisUpdate) error {
	return s.updateRegion(ctx, "update redis", id, changed(u))
}

// MoveUpdate changes a region's move to another cluster; nil fields stay.
type MoveUpdate struct {
	Status *MigrationStatus `col:"migration_status"`
	Detail *MigrationDetail `col:"migration_detail,json"`
	// DNSCheckAt sets migration_dns_check_at; ClearDNSCheckAt clears it.
	DNSCheckAt      *time.Time `col:"migration_dns_check_at"`
	ClearDNSCheckAt bool
	// OldKubeconfig and OldExternalIP keep the old cluster until the move completes.
	OldKubeconfig *string `col:"old_kubeconfig"`
	OldExternalIP *string `col:"old_external_ip"`
}

// columns are the columns the move update sets.
func (u MoveUpdate) columns() cols {
	c := changed(u)
	if u.ClearDNSCheckAt {
		c = append(c, column{"migration_dns_check_at", nil})
	}
	return c
}

// UpdateMove records the state of a region's move.
func (s *Store) UpdateMove(ctx context.Context, id string, u MoveUpdate) error {
	return s.updateRegion(ctx, "update move", id, u.columns())
}

// MarkMovePending records that a move's job is queued (status pending, the job in the
// detail) unless that job has started already: its first step writes the detail with
// what the region had, which a late "pending" would overwrite.
func (s *Store) MarkMovePending(ctx context.Context, id, jobID string) error {
	_, err := s.db(ctx).ExecContext(ctx, `UPDATE regions SET migration_status = $3, migration_detail = $4, updated_at = now()
		WHERE id = $1 AND coalesce(migration_detail->>'job_id', '') <> $2`,
		id, jobID, MigrationPending, JSON[MigrationDetail]{V: MigrationDetail{JobID: jobID}})
	return wrap("mark the move of "+id+" pending", err)
}

// ClusterSwitch points a region at another cluster (a move, or its rollback): its
// kubeconfig, the cluster's identity, and what the region records of the cluster's
// Knative.
type ClusterSwitch struct {
	Kubeconfig    string
	ClusterServer string
	ClusterKey    string
	K8sVersion    *string
	ExternalIP    string
	Operator      OperatorUpdate
	Serving       ServingUpdate
	Move          MoveUpdate
}

// SwitchCluster records a region's switch to another cluster in one statement.
func (s *Store) SwitchCluster(ctx context.Context, id string, sw ClusterSwitch) error {
	c := cols{{"kubeconfig", sw.Kubeconfig}, {"cluster_server", sw.ClusterServer}, {"cluster_key", sw.ClusterKey}, {"external_ip", sw.ExternalIP}}
	set(&c, "k8s_version", sw.K8sVersion)
	c = append(append(append(c, changed(sw.Operator)...), changed(sw.Serving)...), sw.Move.columns()...)
	return s.updateRegion(ctx, "switch cluster", id, c)
}

// CompleteMove ends a move in dns_check: it forgets the old cluster. It changes nothing
// (and reports false) when the move is not in dns_check any more, so that a rollback
// in between is never overwritten.
func (s *Store) CompleteMove(ctx context.Context, id string, detail MigrationDetail) (bool, error) {
	res, err := s.db(ctx).ExecContext(ctx, `UPDATE regions SET migration_status = $2, old_kubeconfig = '', old_external_ip = '',
		migration_dns_check_at = NULL, migration_detail = $3, updated_at = now() WHERE id = $1 AND migration_status = $4`,
		id, MigrationCompleted, JSON[MigrationDetail]{V: detail}, MigrationDNSCheck)
	if err != nil {
		return false, wrap("complete move "+id, err)
	}
	n, err := res.RowsAffected()
	if err != nil || n == 0 {
		return false, wrap("complete move "+id, err)
	}
	return true, s.NotifyRegion(ctx, id)
}

// SetRegionSettings records the region's settings.
func (s *Store) SetRegionSettings(ctx context.Context, id string, v RegionSettings) error {
	return s.updateRegion(ctx, "set settings", id, cols{{"settings", JSON[RegionSettings]{V: v}}})
}

// RegionSettingsUpdate changes some of a region's settings; nil fields stay as they are.
type RegionSettingsUpdate struct {
	RequestTimeout    *int      `json:"request_timeout,omitempty"`
	AgentWSURL        *string   `json:"agent_ws_url,omitempty"`
	IngressTrustedIPs *[]string `json:"ingress_trusted_ips,omitempty"`
	ImageMirror       *string   `json:"image_mirror,omitempty"`
}

// UpdateRegionSettings writes only the settings u names (a jsonb merge), so that two edits
// of different settings, each made from its own read of the region, both land.
func (s *Store) UpdateRegionSettings(ctx context.Context, id string, u RegionSettingsUpdate) error {
	return s.mergeRegionJSON(ctx, "update settings", id, "settings", u)
}

// mergeRegionJSON merges the keys u names (its JSON, nil fields left out) into a jsonb
// column of the region; nothing named, nothing written.
func (s *Store) mergeRegionJSON(ctx context.Context, op, id, column string, u any) error {
	patch, err := json.Marshal(u)
	if err != nil || string(patch) == "{}" {
		return wrap(op+" "+id, err)
	}
	res, err := s.db(ctx).ExecContext(ctx, `UPDATE regions SET `+column+` = `+column+` || $2::jsonb, updated_at = now() WHERE id = $1`, id, patch)
	if err := affected(op+" "+id, res, err); err != nil {
		return err
	}
	return s.NotifyRegion(ctx, id)
}

// MonitoringUpdate changes some of a region's monitoring settings; nil fields stay.
type MonitoringUpdate struct {
	PrometheusURL           *string `json:"prometheus_url,omitempty"`
	LokiURL                 *string `json:"loki_url,omitempty"`
	LokiOrgID               *string `json:"loki_org_id,omitempty"`
	StorageClass            *string `json:"storage_class,omitempty"`
	PrometheusSizeGi        *int    `json:"prometheus_size_gi,omitempty"`
	LokiSizeGi              *int    `json:"loki_size_gi,omitempty"`
	TempoSizeGi             *int    `json:"tempo_size_gi,omitempty"`
	PrometheusRetentionDays *int    `json:"prometheus_retention_days,omitempty"`
	LokiRetentionDays       *int    `json:"loki_retention_days,omitempty"`
}

// UpdateMonitoring writes only the monitoring settings u names (a jsonb merge), so that
// two edits of different settings both land.
func (s *Store) UpdateMonitoring(ctx context.Context, id string, u MonitoringUpdate) error {
	return s.mergeRegionJSON(ctx, "update monitoring", id, "monitoring", u)
}

// SetRegionStatus records the region's status.
func (s *Store) SetRegionStatus(ctx context.Context, id string, v RegionStatus) error {
	return s.updateRegion(ctx, "set region status", id, cols{{"region_status", v}})
}

// SetRegionMode records the region's mode (managed or shared).
func (s *Store) SetRegionMode(ctx context.Context, id string, v RegionMode) error {
	return s.updateRegion(ctx, "set region mode", id, cols{{"region_mode", v}})
}

// SetRegionNodes records the region's dedicated workers.
func (s *Store) SetRegionNodes(ctx context.Context, id string, nodes []string) error {
	if nodes == nil {
		nodes = []string{} // none selected: NOT NULL, an empty array
	}
	return s.updateRegion(ctx, "set nodes", id, cols{{"nodes", pq.StringArray(nodes)}})
}

// SetFunctionTLS records the region's function-domain certificate (empty: none).
func (s *Store) SetFunctionTLS(ctx context.Context, id, cert, key string, expires *time.Time) error {
	return s.updateRegion(ctx, "set function tls", id, cols{{"function_tls_cert", cert}, {"function_tls_key", key}, {"function_tls_expires_at", expires}})
}

// SetAgentToken records the token of the region's agent (kept encrypted, and hashed for
// the agent's sign-in).
func (s *Store) SetAgentToken(ctx context.Context, id, token string) error {
	return s.updateRegion(ctx, "set agent token", id, cols{{"agent_token", token}, {"agent_token_hash", crypt.HashToken(token)}})
}

// SetDomainMigration records a base-domain migration of the region: its status and the
// domain the region also answers on ("" and MigrationNone: none).
func (s *Store) SetDomainMigration(ctx context.Context, id string, status MigrationStatus, target string) error {
	return s.updateRegion(ctx, "set domain migration", id, cols{{"domain_migration_status", status}, {"domain_migration_target", target}})
}

// SetOvercommit records the region's FaaS overcommit factors; nil ones stay.
func (s *Store) SetOvercommit(ctx context.Context, id string, cpu, memory *float64) error {
	var c cols
	set(&c, "faas_cpu_overcommit", cpu)
	set(&c, "faas_memory_overcommit", memory)
	return s.updateRegion(ctx, "set overcommit", id, c)
}

// CheckUpdate is the result of a status check; nil fields stay.
type CheckUpdate struct {
	Health      Health
	CheckedAt   time.Time
	K8sVersion  *string
	ExternalIP  *string
	DNSResolved *bool
}

// SaveCheck records a status check of the region.
func (s *Store) SaveCheck(ctx context.Context, id string, u CheckUpdate) error {
	saved, err := s.SaveChecks(ctx, []RegionCheck{{ID: id, CheckUpdate: u}})
	if err == nil && len(saved) == 0 {
		err = fmt.Errorf("store: save check %s: %w", id, ErrNotFound)
	}
	return err
}

// RegionCheck is one region's status check, for SaveChecks.
type RegionCheck struct {
	ID string
	CheckUpdate
}

// SaveChecks records the status checks of several regions in one statement and announces
// each saved region's change in one more, as SaveCheck does for one region (the status
// sweep saves a cluster look's regions together: two round trips instead of two per
// region). It returns the ids it saved: a region deleted meanwhile is not among them.
func (s *Store) SaveChecks(ctx context.Context, checks []RegionCheck) ([]string, error) {
	if len(checks) == 0 {
		return nil, nil
	}
	n := len(checks)
	ids, health, at := make(pq.StringArray, n), make(pq.StringArray, n), make(pq.StringArray, n)
	setVersion, setIP, setDNS := make(pq.BoolArray, n), make(pq.BoolArray, n), make(pq.BoolArray, n)
	version, ip, dns := make(pq.StringArray, n), make(pq.StringArray, n), make(pq.BoolArray, n)
	for i, c := range checks {
		h, err := JSON[Health]{V: c.Health}.Value()
		if err != nil {
			return nil, wrap("save checks", err)
		}
		ids[i], at[i] = c.ID, c.CheckedAt.UTC().Format(time.RFC3339Nano)
		health[i] = h.(string)
		if c.K8sVersion != nil {
			setVersion[i], version[i] = true, *c.K8sVersion
		}
		if c.ExternalIP != nil {
			setIP[i], ip[i] = true, *c.ExternalIP
		}
		if c.DNSResolved != nil {
			setDNS[i], dns[i] = true, *c.DNSResolved
		}
	}
	var saved []string
	err := s.db(ctx).SelectContext(ctx, &saved, `UPDATE regions r SET health = v.health, checked_at = v.checked_at,
			k8s_version = CASE WHEN v.set_version THEN v.version ELSE r.k8s_version END,
			external_ip = CASE WHEN v.set_ip THEN v.ip ELSE r.external_ip END,
			dns_resolved = CASE WHEN v.set_dns THEN v.dns ELSE r.dns_resolved END,
			updated_at = now()
		FROM unnest($1::text[], $2::jsonb[], $3::timestamptz[], $4::bool[], $5::text[], $6::bool[], $7::text[], $8::bool[], $9::bool[])
			AS v(id, health, checked_at, set_version, version, set_ip, ip, set_dns, dns)
		WHERE r.id = v.id RETURNING r.id`, ids, health, at, setVersion, version, setIP, ip, setDNS, dns)
	if err != nil {
		return nil, wrap("save checks", err)
	}
	if len(saved) > 0 {
		_, err = s.db(ctx).ExecContext(ctx, `SELECT pg_notify($1, id) FROM unnest($2::text[]) AS id`, RegionsChannel, pq.StringArray(saved))
	}
	return saved, wrap("notify regions", err)
}
