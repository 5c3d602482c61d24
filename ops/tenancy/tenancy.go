package tenancy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"

	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/nodes"
	"runr.dev/console/perm"
	"runr.dev/console/problem"
	"runr.dev/console/store"
)

// Tenancy module (RUNR_TENANCY=on): tenants, tenant-owned regions, assignments of
// platform regions with quotas, region modes, and who may change a region.

// RegionAccess is what a route does with a region: shows its summary, shows its details
// (cluster, components, capacity), or changes it (or hands out its kubeconfig).
type RegionAccess int

// Region accesses, from the least.
const (
	RegionSummary RegionAccess = iota + 1
	RegionDetails
	RegionChange
)

// RegionMutable is region.mutable: who may change a region or take its kubeconfig.
// Platform users change platform regions; the owning tenant's users change the tenant's
// regions (the route's permission, such as regions.manage, is checked beside it). Every
// route that changes a region, HTML and JSON, passes here (web's region gate).
func RegionMutable(actor kit.Actor, r *store.Region) error {
	switch owner := r.Tenant(); {
	case owner == "" && actor.Platform():
		return nil
	case owner == "":
		return &problem.Forbidden{Reason: "Region " + r.Name + " is a platform region: it is read-only for tenant users."}
	case owner == actor.TenantID:
		return nil
	}
	return &problem.Forbidden{Reason: "Region " + r.Name + " belongs to a tenant: only that tenant's users change it."}
}

// CheckRegionAccess decides whether the actor may do what a route does with a region it
// can see: a platform region assigned to a tenant shows the tenant's users its summary
// only (its details and capacity budgets are refused), and changes pass RegionMutable.
func CheckRegionAccess(actor kit.Actor, r *store.Region, access RegionAccess) error {
	switch access {
	case RegionSummary:
		return nil
	case RegionDetails:
		if actor.Platform() || r.Tenant() == actor.TenantID {
			return nil
		}
		return &problem.Forbidden{Reason: "Region " + r.Name + " is a platform region assigned to your tenant: you see its summary only."}
	}
	return RegionMutable(actor, r)
}

// SummaryOnly reports whether the actor sees only the summary of a region (a platform
// region assigned to the actor's tenant).
func SummaryOnly(actor kit.Actor, r *store.Region) bool {
	return !actor.Platform() && r.Tenant() == ""
}

// MaySetRegionMode reports whether the actor sets region_mode: platform administrators
// (platform users with regions.manage) when the Tenancy module is on. From anyone else
// the field is ignored.
func (s *Service) MaySetRegionMode(actor kit.Actor) bool {
	return s.Cfg.Tenancy && actor.Platform() && actor.Can(perm.RegionsManage)
}

// RegionModeOf is the mode a request sets (nil: none, or ignored for this actor); an
// unknown mode from a platform administrator is a field error.
func (s *Service) RegionModeOf(actor kit.Actor, mode *store.RegionMode, errs map[string]string) *store.RegionMode {
	if mode == nil || *mode == "" || !s.MaySetRegionMode(actor) {
		return nil
	}
	if !mode.Valid() {
		errs["region_mode"] = "Choose managed (tenant quotas apply) or shared (no quota enforcement)."
		return nil
	}
	return mode
}

// SetsExistingMonitoring says why the actor may not point a region at a Prometheus or
// Loki of its own ("" when it may): with the Tenancy module, only platform users, and
// tenant owners for their own regions, set them.
func (s *Service) SetsExistingMonitoring(actor kit.Actor) string {
	if !s.Cfg.Tenancy || actor.Platform() || actor.Role == "owner" {
		return ""
	}
	return "Only tenant owners point their regions at a Prometheus or Loki of their own."
}

// MonitoringFieldErrors refuses existing monitoring URLs from an actor who may not set them.
func (s *Service) MonitoringFieldErrors(actor kit.Actor, m store.Monitoring, errs map[string]string) {
	why := s.SetsExistingMonitoring(actor)
	if why == "" {
		return
	}
	if m.PrometheusURL != "" {
		errs["prometheus_url"] = why
	}
	if m.LokiURL != "" {
		errs["loki_url"] = why
	}
}

// TenantInput is the body of POST and PUT /api/tenants.
type TenantInput struct {
	Name string `json:"name"`
}

var tenantNameRe = regexp.MustCompile(`^[\p{L}\p{N}][\p{L}\p{N} ._-]*$`)

// ValidateTenant checks (and trims) a tenant's name.
func ValidateTenant(in *TenantInput) error {
	in.Name = strings.TrimSpace(in.Name)
	if in.Name == "" || len(in.Name) > 63 || !tenantNameRe.MatchString(in.Name) {
		return &problem.Invalid{Fields: map[string]string{"name": "Use 1 to 63 letters, digits, spaces, dots, hyphens or underscores, starting with a letter or digit."}}
	}
	return nil
}

// CreateTenant records a tenant; its first owner is created with CreateTenantUser.
func (s *Service) CreateTenant(ctx context.Context, actor kit.Actor, in TenantInput) (*store.Tenant, error) {
	if err := ValidateTenant(&in); err != nil {
		return nil, err
	}
	t, err := s.Store.CreateTenant(ctx, in.Name)
	if errors.Is(err, store.ErrConflict) {
		return nil, &problem.Invalid{Fields: map[string]string{"name": "A tenant with this name exists already."}}
	}
	if err != nil {
		return nil, fmt.Errorf("create tenant %s: %w", in.Name, err)
	}
	s.Log.Info("tenant created", "tenant", t.Name, "by", actor.Email)
	return t, nil
}

// RenameTenant changes a tenant's name.
func (s *Service) RenameTenant(ctx context.Context, actor kit.Actor, t *store.Tenant, in TenantInput) (*store.Tenant, error) {
	if err := ValidateTenant(&in); err != nil {
		return nil, err
	}
	err := s.Store.RenameTenant(ctx, t.ID, in.Name)
	if errors.Is(err, store.ErrConflict) {
		return nil, &problem.Invalid{Fields: map[string]string{"name": "A tenant with this name exists already."}}
	}
	if err != nil {
		return nil, fmt.Errorf("rename tenant %s: %w", t.Name, err)
	}
	s.Log.Info("tenant renamed", "tenant", t.Name, "to", in.Name, "by", actor.Email)
	return s.Store.TenantByID(ctx, t.ID)
}

// DeleteTenant removes a tenant with its users and assignments; it is refused while the
// tenant has regions or projects.
func (s *Service) DeleteTenant(ctx context.Context, actor kit.Actor, t *store.Tenant) error {
	err := s.Store.DeleteTenant(ctx, t.ID)
	var inUse *store.TenantInUseError
	if errors.As(err, &inUse) {
		return &problem.Refused{Reason: fmt.Sprintf("Tenant %s still has %d region(s) and %d project(s): its users remove them first.", t.Name, inUse.Regions, inUse.Projects)}
	}
	if err != nil {
		return fmt.Errorf("delete tenant %s: %w", t.Name, err)
	}
	s.Log.Info("tenant removed", "tenant", t.Name, "by", actor.Email)
	return nil
}

// Quota is a tenant's share of a region: CPU in cores, memory in GiB (0: no limit).
type Quota struct {
	CPU       float64 `json:"cpu"`
	MemoryGiB float64 `json:"memory_gib"`
}

// QuotaInput is the body of POST /api/knative-regions/{id}/assignments (with the tenant)
// and of PUT …/assignments/{tenant_id}: a quota left out (nil) gets its default.
type QuotaInput struct {
	TenantID  string   `json:"tenant_id"`
	CPU       *float64 `json:"cpu"`
	MemoryGiB *float64 `json:"memory_gib"`
}

// quotaEpsilon absorbs the rounding of sums of decimal quotas (0.1 + 0.2).
const quotaEpsilon = 1e-9

// QuotaLimit is what the quotas of a managed region add up to at most: its capacity, and
// the organisation ceiling when one is set (0 in a resource: none).
func QuotaLimit(capacity nodes.Resources, ceiling Quota) Quota {
	l := Quota{CPU: float64(capacity.CPUm) / 1000, MemoryGiB: float64(capacity.MemoryMi) / 1024}
	if ceiling.CPU > 0 {
		l.CPU = math.Min(l.CPU, ceiling.CPU)
	}
	if ceiling.MemoryGiB > 0 {
		l.MemoryGiB = math.Min(l.MemoryGiB, ceiling.MemoryGiB)
	}
	return l
}

// FitQuota decides the quotas of an assignment on a managed region: limit is
// QuotaLimit, others the region's other assignments, current the quota being changed
// (its values stay for what the input leaves out; nil: a new assignment). A quota of 0
// sets no limit and does not count; the quotas with a limit add up to at most limit. A
// new assignment that leaves a quota out gets the ceiling or what is still free,
// whichever is smaller. It returns the quotas, or a *problem.Invalid whose Details hold what is free
// ("free": a Quota).
func FitQuota(limit, ceiling Quota, others []store.Assignment, current *Quota, in QuotaInput) (Quota, error) {
	var used Quota
	for _, o := range others {
		used.CPU += o.CPU
		used.MemoryGiB += o.MemoryGiB
	}
	free := Quota{CPU: math.Max(0, limit.CPU-used.CPU), MemoryGiB: math.Max(0, limit.MemoryGiB-used.MemoryGiB)}
	fields := map[string]string{}
	pick := func(field, unit string, asked *float64, cur, free, ceiling float64) float64 {
		switch {
		case asked != nil:
			if *asked > free+quotaEpsilon {
				fields[field] = fmt.Sprintf("Only %s %s is free on this region (the other tenants' quotas hold the rest); ask at most that, or 0 for no limit.", num(free), unit)
			}
			return *asked
		case current != nil:
			if cur > free+quotaEpsilon {
				fields[field] = fmt.Sprintf("The current %s %s no longer fits: %s %s is free.", num(cur), unit, num(free), unit)
			}
			return cur
		}
		v := free
		if ceiling > 0 {
			v = math.Min(ceiling, free)
		}
		if v <= quotaEpsilon {
			fields[field] = fmt.Sprintf("Nothing of the region's %s is free for a default quota; give one (0 for no limit).", unit)
		}
		return v
	}
	var cur Quota
	if current != nil {
		cur = *current
	}
	q := Quota{CPU: pick("cpu", "CPU", in.CPU, cur.CPU, free.CPU, ceiling.CPU),
		MemoryGiB: pick("memory_gib", "GiB of memory", in.MemoryGiB, cur.MemoryGiB, free.MemoryGiB, ceiling.MemoryGiB)}
	if len(fields) > 0 {
		return q, &problem.Invalid{Fields: fields, Summary: "The quotas do not fit the region.", Details: map[string]any{"free": free}}
	}
	return q, nil
}

// num prints a quota shortly: 2, 1.5, 0.25.
func num(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
}

// validQuota checks the numbers sent: finite and not negative.
func validQuota(in QuotaInput, fields map[string]string) {
	for field, v := range map[string]*float64{"cpu": in.CPU, "memory_gib": in.MemoryGiB} {
		if v != nil && (math.IsNaN(*v) || math.IsInf(*v, 0) || *v < 0 || *v > 1e9) {
			fields[field] = "Use a number of 0 or more (0: no limit)."
		}
	}
}

// ceiling is the organisation ceiling (RUNR_QUOTA_CPU, RUNR_QUOTA_MEMORY_GIB).
func (s *Service) ceiling() Quota {
	return Quota{CPU: math.Max(0, s.Cfg.QuotaCPU), MemoryGiB: math.Max(0, s.Cfg.QuotaMemoryGiB)}
}

// regionQuotaLimit reads the capacity of a managed region's cluster for the quota sums.
func (s *Service) regionQuotaLimit(ctx context.Context, r *store.Region) (Quota, error) {
	rep, err := s.Nodes.RegionCapacity(ctx, r, "")
	if err != nil {
		return Quota{}, &problem.Unreachable{Region: r.Name, Err: err}
	}
	return QuotaLimit(rep.Total, s.ceiling()), nil
}

// saveQuota checks and saves an assignment under the region's lock: on a managed region
// the quotas add up to at most the capacity and the ceiling; on a shared one they are
// not enforced (a quota left out is the ceiling, or no limit).
func (s *Service) saveQuota(ctx context.Context, r *store.Region, tenantID string, current *Quota, in QuotaInput) (*store.Assignment, error) {
	var limit Quota
	if r.Mode != store.RegionShared {
		l, err := s.regionQuotaLimit(ctx, r)
		if err != nil {
			return nil, err
		}
		limit = l
	}
	a := &store.Assignment{RegionID: r.ID, TenantID: tenantID}
	err := s.Store.SaveAssignment(ctx, a, current == nil, func(locked *store.Region, others []store.Assignment, a *store.Assignment) error {
		q, err := s.fitOn(locked, limit, others, current, in)
		a.CPU, a.MemoryGiB = q.CPU, q.MemoryGiB
		return err
	})
	return a, err
}

// fitOn decides the quotas of an assignment on a region of its mode.
func (s *Service) fitOn(r *store.Region, limit Quota, others []store.Assignment, current *Quota, in QuotaInput) (Quota, error) {
	if r.Mode == store.RegionShared {
		q := s.ceiling()
		if current != nil {
			q = *current
		}
		if in.CPU != nil {
			q.CPU = *in.CPU
		}
		if in.MemoryGiB != nil {
			q.MemoryGiB = *in.MemoryGiB
		}
		return q, nil
	}
	return FitQuota(limit, s.ceiling(), others, current, in)
}

// Assignable checks that the actor may assign a platform region to the tenant of in
// with its quotas (the quotas' fit is checked when the assignment is saved), and returns
// the tenant.
func (s *Service) Assignable(ctx context.Context, actor kit.Actor, r *store.Region, in QuotaInput) (*store.Tenant, error) {
	if r.Tenant() != "" {
		return nil, &problem.Refused{Reason: "Region " + r.Name + " belongs to a tenant: a tenant-owned region is never assigned."}
	}
	if err := RegionMutable(actor, r); err != nil {
		return nil, err
	}
	fields := map[string]string{}
	validQuota(in, fields)
	if in.TenantID == "" {
		fields["tenant_id"] = "Choose the tenant."
	}
	if err := problem.FromFields(fields); err != nil {
		return nil, err
	}
	t, err := s.Store.TenantByID(ctx, in.TenantID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, &problem.Invalid{Fields: map[string]string{"tenant_id": "No such tenant."}}
	} else if err != nil {
		return nil, err
	}
	if _, err := s.Store.AssignmentOf(ctx, r.ID, t.ID); err == nil {
		return nil, &problem.Refused{Field: "tenant_id", Reason: "Region " + r.Name + " is assigned to " + t.Name + " already: change its quotas instead."}
	}
	return t, nil
}

// AssignRegion assigns a platform region to a tenant with its quotas.
func (s *Service) AssignRegion(ctx context.Context, actor kit.Actor, r *store.Region, in QuotaInput) (*store.Assignment, error) {
	t, err := s.Assignable(ctx, actor, r, in)
	if err != nil {
		return nil, err
	}
	a, err := s.saveQuota(ctx, r, t.ID, nil, in)
	if err != nil {
		return nil, err
	}
	s.Log.Info("region assigned", "region", r.Name, "tenant", t.Name, "cpu", a.CPU, "memory_gib", a.MemoryGiB, "by", actor.Email)
	return s.Store.AssignmentOf(ctx, r.ID, t.ID)
}

// ChangeAssignment changes the quotas of an assignment; a quota left out stays.
func (s *Service) ChangeAssignment(ctx context.Context, actor kit.Actor, r *store.Region, tenantID string, in QuotaInput) (*store.Assignment, error) {
	if err := RegionMutable(actor, r); err != nil {
		return nil, err
	}
	fields := map[string]string{}
	validQuota(in, fields)
	if err := problem.FromFields(fields); err != nil {
		return nil, err
	}
	cur, err := s.Store.AssignmentOf(ctx, r.ID, tenantID)
	if err != nil {
		return nil, err
	}
	if _, err := s.saveQuota(ctx, r, tenantID, &Quota{CPU: cur.CPU, MemoryGiB: cur.MemoryGiB}, in); err != nil {
		return nil, err
	}
	s.Log.Info("assignment changed", "region", r.Name, "tenant", cur.TenantName, "by", actor.Email)
	return s.Store.AssignmentOf(ctx, r.ID, tenantID)
}

// Unassign takes a platform region away from a tenant; its projects there stay, and
// their next deploy is refused.
func (s *Service) Unassign(ctx context.Context, actor kit.Actor, r *store.Region, tenantID string) error {
	if err := RegionMutable(actor, r); err != nil {
		return err
	}
	if err := s.Store.DeleteAssignment(ctx, r.ID, tenantID); err != nil {
		return err
	}
	s.Log.Info("region unassigned", "region", r.Name, "tenant", tenantID, "by", actor.Email)
	return nil
}

// QuotaUse is a tenant's quota on a region and what its running projects request of it.
type QuotaUse struct {
	Quota Quota `json:"quota"`
	Used  Quota `json:"used"`
	// Enforced is false on a shared region.
	Enforced bool `json:"enforced"`
}

// TenantQuotaUse reads a tenant's quota on a platform region and its use.
func (s *Service) TenantQuotaUse(ctx context.Context, r *store.Region, tenantID string) (QuotaUse, error) {
	a, err := s.Store.AssignmentOf(ctx, r.ID, tenantID)
	if err != nil {
		return QuotaUse{}, err
	}
	on, faas, err := s.Store.TenantReservations(ctx, r.ID, tenantID, "")
	if err != nil {
		return QuotaUse{}, err
	}
	return QuotaUse{Quota: Quota{CPU: a.CPU, MemoryGiB: a.MemoryGiB}, Enforced: r.Mode != store.RegionShared,
		Used: Quota{CPU: float64(on.CPUm+faas.CPUm) / 1000, MemoryGiB: float64(on.MemoryMi+faas.MemoryMi) / 1024}}, nil
}

// QuotaBudgets splits a tenant's quota into the always-on and the FaaS budget the way
// nodes.ComputeBudgets splits a region's capacity: the quota is the always-on budget, the FaaS
// budget is the quota × the region's overcommit factors minus what the tenant's
// always-on projects reserve. A resource without a limit (0) gets no budget line that
// refuses (its Gross is the most an int64 holds).
func QuotaBudgets(q Quota, cpuFactor, memFactor float64, alwaysOn, faas store.Reservation) nodes.Budgets {
	cpu, mem := int64(math.Round(q.CPU*1000)), int64(math.Round(q.MemoryGiB*1024))
	if q.CPU == 0 {
		cpu = math.MaxInt64 / 16
	}
	if q.MemoryGiB == 0 {
		mem = math.MaxInt64 / 16
	}
	c := nodes.Capacity{Allocatable: nodes.Resources{CPUm: cpu, MemoryMi: mem}, Total: nodes.Resources{CPUm: cpu, MemoryMi: mem}}
	b := nodes.ComputeBudgets(c, cpuFactor, memFactor, alwaysOn, faas)
	b.AlwaysOn.Name, b.FaaS.Name = "tenant always-on", "tenant FaaS"
	return b
}

// AdmitTenant decides whether a tenant's deploy on a platform region fits the tenant's
// quota there (its always-on or FaaS budget); platform users' projects, tenant-owned
// regions and shared regions are not held to quotas. A platform region no longer
// assigned to the project's tenant refuses the deploy.
func (s *Service) AdmitTenant(ctx context.Context, r *store.Region, p *store.Project, req nodes.AdmitRequest) error {
	if !s.Cfg.Tenancy || p.TenantID == nil || r.Tenant() != "" {
		return nil
	}
	a, err := s.Store.AssignmentOf(ctx, r.ID, *p.TenantID)
	if errors.Is(err, store.ErrNotFound) {
		return &problem.Refused{Reason: "Region " + r.Name + " is no longer assigned to the project's tenant."}
	}
	if err != nil {
		return fmt.Errorf("admission: %w", err)
	}
	if r.Mode == store.RegionShared {
		return nil
	}
	on, faas, err := s.Store.TenantReservations(ctx, r.ID, *p.TenantID, req.ProjectID)
	if err != nil {
		return fmt.Errorf("admission: %w", err)
	}
	b := QuotaBudgets(Quota{CPU: a.CPU, MemoryGiB: a.MemoryGiB}, r.FaaSCPUOvercommit, r.FaaSMemoryOvercommit, on, faas)
	if e := nodes.CheckAdmission(r.Name, b, req); e != nil {
		return e
	}
	return nil
}
