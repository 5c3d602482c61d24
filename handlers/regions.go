package handlers

import (
	"bytes"
	"encoding/json"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/ops/domains"
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/tenancy"
	"runr.dev/console/store"
	"runr.dev/console/views"
)

const regionsPageSize = 50

// RegionJSON is a region as the API shows it: never its kubeconfig or any secret.
type RegionJSON struct {
	// SecretError says that the region's secrets cannot be decrypted with the configured keys.
	SecretError           string                          `json:"secret_error,omitempty"`
	ID                    string                          `json:"id"`
	Name                  string                          `json:"name"`
	RegionStatus          store.RegionStatus              `json:"region_status"`
	IsActive              bool                            `json:"is_active"`
	ClusterServer         string                          `json:"cluster_server"`
	K8sVersion            string                          `json:"k8s_version"`
	Nodes                 []string                        `json:"nodes"`
	DataLocation          string                          `json:"data_location"`
	Settings              store.RegionSettings            `json:"settings"`
	Monitoring            store.Monitoring                `json:"monitoring"`
	RegistryMode          store.RegistryMode              `json:"registry_mode"`
	RegistryStatus        store.ComponentStatus           `json:"registry_status"`
	RegistryStatusMessage string                          `json:"registry_status_message"`
	RegistryAddress       string                          `json:"registry_address"`
	RegistryStorageType   string                          `json:"registry_storage_type,omitempty"`
	OperatorStatus        store.ComponentStatus           `json:"operator_status"`
	OperatorNamespace     string                          `json:"operator_namespace"`
	ServingStatus         store.ComponentStatus           `json:"serving_status"`
	ServingNamespace      string                          `json:"serving_namespace"`
	KnativeVersion        string                          `json:"knative_version"`
	KnativeMessage        string                          `json:"knative_message"`
	RedisMode             store.RedisMode                 `json:"redis_mode"`
	RedisStatus           store.ComponentStatus           `json:"redis_status"`
	RedisAddress          string                          `json:"redis_address"`
	Components            map[string]store.ComponentState `json:"components"`
	// TracingMode is the region's tracing mode: on, off, or default (the console's).
	TracingMode string `json:"tracing_mode"`
	// TracingRetentionHours is the region's own Tempo retention (0: the console's).
	TracingRetentionHours int          `json:"tracing_retention_hours"`
	KnativeDomain         string       `json:"knative_domain"`
	ExternalIP            string       `json:"external_ip"`
	DNSResolved           bool         `json:"dns_resolved"`
	DNSInstruction        string       `json:"dns_instruction"`
	Health                store.Health `json:"health"`
	// Glance is the health at a glance: the worst layer's state and reason.
	Glance                HealthGlanceJSON      `json:"health_at_a_glance"`
	CheckedAt             *time.Time            `json:"checked_at"`
	AgentLastSeenAt       *time.Time            `json:"agent_last_seen_at"`
	FunctionTLSExpiresAt  *time.Time            `json:"function_tls_expires_at"`
	FaaSCPUOvercommit     float64               `json:"faas_cpu_overcommit"`
	FaaSMemoryOvercommit  float64               `json:"faas_memory_overcommit"`
	MigrationStatus       store.MigrationStatus `json:"migration_status"`
	DomainMigrationStatus store.MigrationStatus `json:"domain_migration_status"`
	DomainMigrationTarget string                `json:"domain_migration_target"`
	ProjectCount          int                   `json:"project_count"`
	GPU                   GPUSummaryJSON        `json:"gpu"`
	CreatedAt             time.Time             `json:"created_at"`
	UpdatedAt             time.Time             `json:"updated_at"`
	// Owner (platform | tenant), TenantID and RegionMode are the Tenancy module's (absent while it is off).
	Owner      string  `json:"owner,omitempty"`
	TenantID   *string `json:"tenant_id,omitempty"`
	RegionMode string  `json:"region_mode,omitempty"`
}

// DNSInstruction is the wildcard record to create for the function domain.
func DNSInstruction(domain, addr string) string {
	if domain == "" {
		return "Set the platform's base domain (Administration → Platform) to give the region its function domain."
	}
	if addr == "" {
		return "*." + domain + " → the external address of the region's Traefik, once Knative Serving is installed."
	}
	if net.ParseIP(addr) != nil {
		rtype := "A"
		if net.ParseIP(addr).To4() == nil {
			rtype = "AAAA"
		}
		return "*." + domain + " " + rtype + " " + addr
	}
	return "*." + domain + " CNAME " + addr
}

// ToRegionJSON converts a region for the API.
func ToRegionJSON(r *store.Region, baseDomain string) RegionJSON {
	domain := domains.FunctionDomain(r, baseDomain)
	nodes := []string(r.Nodes)
	if nodes == nil {
		nodes = []string{}
	}
	return RegionJSON{
		SecretError: r.SecretError, ID: r.ID, Name: r.Name, RegionStatus: r.Status, IsActive: r.Status == store.RegionActive,
		ClusterServer: r.ClusterServer, K8sVersion: r.K8sVersion, Nodes: nodes, DataLocation: r.DataLocation,
		Settings: r.Settings.V, Monitoring: r.Monitoring.V,
		RegistryMode: r.RegistryMode, RegistryStatus: r.RegistryStatus, RegistryStatusMessage: r.RegistryMessage,
		RegistryAddress: r.RegistryAddress, RegistryStorageType: r.RegistryConfig.V.StorageType,
		OperatorStatus: r.OperatorStatus, OperatorNamespace: r.OperatorNamespace,
		ServingStatus: r.ServingStatus, ServingNamespace: r.ServingNamespace, KnativeVersion: r.KnativeVersion, KnativeMessage: r.KnativeMessage,
		RedisMode: r.RedisMode, RedisStatus: r.RedisStatus, RedisAddress: r.RedisAddress,
		Components: r.Components.V, TracingMode: string(kit.OrDefault(r.TracingMode, "default")), TracingRetentionHours: r.TracingRetentionHours, KnativeDomain: domain, ExternalIP: r.ExternalIP, DNSResolved: r.DNSResolved,
		DNSInstruction: DNSInstruction(domain, r.ExternalIP), Health: r.Health.V, Glance: glanceJSON(r.Health.V.Glance()), CheckedAt: r.CheckedAt,
		AgentLastSeenAt: r.AgentLastSeenAt, FunctionTLSExpiresAt: r.FunctionTLSExpiresAt,
		FaaSCPUOvercommit: r.FaaSCPUOvercommit, FaaSMemoryOvercommit: r.FaaSMemoryOvercommit,
		MigrationStatus: r.MigrationStatus, DomainMigrationStatus: r.DomainMigrationStatus, DomainMigrationTarget: r.DomainMigrationTarget,
		ProjectCount: r.ProjectCount, GPU: gpuSummary(r), CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

// HealthGlanceJSON is a region's health at a glance.
type HealthGlanceJSON struct {
	State  store.HealthState `json:"state"`
	Reason string            `json:"reason"`
}

func glanceJSON(l store.HealthLayer) HealthGlanceJSON {
	return HealthGlanceJSON{State: l.State, Reason: l.Reason}
}

// GPUSummaryJSON is a region's GPUs as lists show them: their count and models when last
// looked at, and whether GPU support is installed.
type GPUSummaryJSON struct {
	Status store.ComponentStatus `json:"status"`
	Mode   string                `json:"mode,omitempty"`
	Total  int                   `json:"total"`
	Models map[string]int        `json:"models"`
}

func gpuSummary(r *store.Region) GPUSummaryJSON {
	g := r.GPU.V
	models := g.Models
	if models == nil {
		models = map[string]int{}
	}
	return GPUSummaryJSON{Status: g.State(), Mode: g.Mode, Total: g.Total, Models: models}
}

// BaseDomain is the platform's base domain, kept with the lists until a change (the
// settings table announces its changes on the same channel).
func (h *Handlers) BaseDomain(c *fiber.Ctx) (string, error) {
	key := ""
	if Who(c) != nil && Who(c).User != nil && Who(c).User.Tenant() == "" {
		key = "setting:base_domain"
	}
	b, err := h.lists.Load(key, func() ([]byte, time.Time, error) {
		d, err := h.Store.BaseDomain(ctx(c))
		return []byte(d), time.Time{}, err
	})
	return string(b), err
}

// banners lists the region moves under way, for the banner on every page.
func (h *Handlers) banners(c *fiber.Ctx) []views.MigrationBanner {
	if store.TenantOf(ctx(c)) != "" {
		// A tenant's user sees the moves of the regions in its walls; the cache is the platform's.
		bs, err := MigrationBanners(ctx(c), h.Store)
		if err != nil {
			h.Log.Warn("migration banners", "err", err)
		}
		return bs
	}
	bs, err := h.bannerCache.get(func() ([]views.MigrationBanner, error) { return MigrationBanners(c.UserContext(), h.Store) })
	if err != nil {
		h.Log.Warn("migration banners", "err", err)
	}
	return bs
}

// RegionsPage is the regions list. Its content (everything inside the layout) is kept
// until a change (changecache); the layout is the request's.
func (h *Handlers) RegionsPage(c *fiber.Ctx) error {
	q := c.Query("q")
	health, byHealth := c.Query("health"), c.Query("sort") == "health"
	if !slices.Contains(store.HealthFilters, health) {
		health = "" // a filter the page never offers shows every region
	}
	page, offset := PageParam(c, regionsPageSize)
	p := h.Page(c, "Knative Regions", "regions")
	key := listCacheKey(Who(c), "regions.html", q, strconv.Itoa(page), health, strconv.FormatBool(byHealth))
	body, err := h.lists.Load(key, func() ([]byte, time.Time, error) {
		f := store.RegionFilter{Query: q, Health: health, SortByHealth: byHealth, Limit: regionsPageSize, Offset: offset}
		pg, err := h.Store.ListRegionPage(c.UserContext(), f, true)
		if err != nil {
			return nil, time.Time{}, err
		}
		l := views.RegionsList{Query: q, Health: health, SortByHealth: byHealth, Page: page, Pages: Pages(pg.Total, regionsPageSize), Total: pg.Total}
		if err := h.tenancyList(c, pg.Regions, &l); err != nil {
			return nil, time.Time{}, err
		}
		var until time.Time
		if page == 1 {
			if l.Setups, until, err = h.pendingSetups(c); err != nil {
				return nil, time.Time{}, err
			}
			if l.Overview, err = h.fleetSummary(c); err != nil {
				return nil, time.Time{}, err
			}
		}
		var buf bytes.Buffer
		if err := views.RegionsContent(p, l).Render(c.UserContext(), &buf); err != nil {
			return nil, time.Time{}, err
		}
		return buf.Bytes(), until, nil
	})
	if err != nil {
		return h.Fail(c, err)
	}
	p.LiveLists = true
	return Render(c, fiber.StatusOK, views.RegionsPage(p, body))
}

// fleetOverviewSize is how many regions needing attention, and running jobs, the fleet
// overview names.
const fleetOverviewSize = 5

// fleetSummary is the overview above the regions list (nil when there is no region): a
// tenant's user sees its own regions' health, and its tenant's jobs.
func (h *Handlers) fleetSummary(c *fiber.Ctx) (*views.FleetSummary, error) {
	o, err := h.Store.FleetOverview(c.UserContext(), h.Actor(c).TenantID, fleetOverviewSize)
	if err != nil || o.Total() == 0 {
		return nil, err
	}
	s := &views.FleetSummary{AttentionMore: o.AttentionTotal - len(o.Attention), RunningMore: o.RunningTotal - len(o.Running)}
	for _, state := range []store.HealthState{store.HealthDown, store.HealthDegraded, store.HealthUnknown, store.HealthOK} {
		s.Counts = append(s.Counts, views.HealthCount{State: string(state), Count: o.ByHealth[state]})
	}
	for _, r := range o.Attention {
		g := r.Health.V.Glance()
		s.Attention = append(s.Attention, views.AttentionRow{ID: r.ID, Name: r.Name, Health: string(g.State), Reason: g.Reason})
	}
	for _, j := range o.Running {
		since := j.CreatedAt
		if j.StartedAt != nil {
			since = *j.StartedAt
		}
		s.Running = append(s.Running, views.RunningJob{ID: j.ID, Title: j.Title, Status: string(j.Status), Since: "since " + since.UTC().Format("15:04 UTC")})
	}
	return s, nil
}

// APIListRegions is GET /api/knative-regions (paginated with ?page= and ?per_page=).
// The encoded answer is kept until a change (changecache).
func (h *Handlers) APIListRegions(c *fiber.Ctx) error {
	per := c.QueryInt("per_page", 100)
	if per < 1 || per > 1000 {
		return Invalid(c, FieldErrors{"per_page": "Use a number from 1 to 1000."})
	}
	health, sortBy := c.Query("health"), c.Query("sort")
	if health != "" && !slices.Contains(store.HealthFilters, health) {
		return Invalid(c, FieldErrors{"health": "Use one of " + strings.Join(store.HealthFilters, ", ") + "."})
	}
	if sortBy != "" && sortBy != "name" && sortBy != "health" {
		return Invalid(c, FieldErrors{"sort": "Use name or health (the worst first)."})
	}
	page, offset := PageParam(c, per)
	q := c.Query("q")
	key := listCacheKey(Who(c), "regions.json", q, strconv.Itoa(page), strconv.Itoa(per), health, sortBy)
	body, err := h.lists.Load(key, func() ([]byte, time.Time, error) {
		f := store.RegionFilter{Query: q, Health: health, SortByHealth: sortBy == "health", Limit: per, Offset: offset}
		pg, err := h.Store.ListRegionPage(c.UserContext(), f, false)
		if err != nil {
			return nil, time.Time{}, err
		}
		rs, total := pg.Regions, pg.Total
		base, err := h.BaseDomain(c)
		if err != nil {
			return nil, time.Time{}, err
		}
		out := make([]any, len(rs))
		for i := range rs {
			if out[i], err = h.RegionJSON(c, &rs[i], base); err != nil {
				return nil, time.Time{}, err
			}
		}
		body, err := c.App().Config().JSONEncoder(fiber.Map{"data": out, "meta": fiber.Map{"page": page, "per_page": per, "total": total}})
		return body, time.Time{}, err
	})
	if err != nil {
		return h.Fail(c, err)
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	// The body may be the cache's: sent as it is, never changed.
	c.Response().SetBodyRaw(body)
	return nil
}

// pendingSetups are the wizards whose region does not exist yet, and when the first of
// them expires (zero: none), after which the list must be built again.
func (h *Handlers) pendingSetups(c *fiber.Ctx) ([]views.PendingSetup, time.Time, error) {
	ss, err := h.Store.PendingSetups(c.UserContext())
	if err != nil {
		return nil, time.Time{}, err
	}
	var out []views.PendingSetup
	var until time.Time
	for _, s := range ss {
		if until.IsZero() || s.ExpiresAt.Before(until) {
			until = s.ExpiresAt
		}
		if s.JobID == nil {
			continue
		}
		j, err := h.Store.JobByID(c.UserContext(), *s.JobID)
		if err != nil || j.Status == store.JobSucceeded {
			continue
		}
		var p struct{ Name string }
		_ = json.Unmarshal(j.Params, &p)
		out = append(out, views.PendingSetup{Token: s.Token, Name: p.Name, Status: string(j.Status)})
	}
	return out, until, nil
}

// tenancyList splits the regions of a list page for the Tenancy module: a tenant's user
// gets its own regions as rows and the assigned platform regions as summaries; a
// platform user gets every region with its owner.
func (h *Handlers) tenancyList(c *fiber.Ctx, rs []store.Region, l *views.RegionsList) error {
	if !h.Cfg.Tenancy {
		l.Regions = regionRows(rs)
		return nil
	}
	actor := h.Actor(c)
	if actor.Platform() {
		names, err := h.tenantNames(c)
		if err != nil {
			return err
		}
		for i := range rs {
			row := regionRow(&rs[i])
			row.Owner, row.Mode = orV(names[rs[i].Tenant()], "platform"), string(rs[i].Mode)
			l.Regions = append(l.Regions, row)
		}
		l.ShowOwner = true
		return nil
	}
	l.TenantView = true
	for i := range rs {
		if !tenancy.SummaryOnly(actor, &rs[i]) {
			l.Regions = append(l.Regions, regionRow(&rs[i]))
			continue
		}
		row, err := h.assignedRow(c, &rs[i])
		if err != nil {
			return err
		}
		l.Assigned = append(l.Assigned, row)
	}
	return nil
}
