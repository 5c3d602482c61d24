package handlers

import (
	"fmt"
	"time"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/ops/tenancy"
	"runr.dev/console/store"
	"runr.dev/console/views"
)

// CapacityWait bounds the reads of the regions' capacities a page waits for (in parallel).
const CapacityWait = 5 * time.Second

// assignedRow is a platform region assigned to the user's tenant, with its quota and use.
func (h *Handlers) assignedRow(c *fiber.Ctx, r *store.Region) (views.AssignedRegionRow, error) {
	row := views.AssignedRegionRow{ID: r.ID, Name: r.Name, Mode: string(r.Mode), ProjectCount: r.ProjectCount}
	u, err := h.Ops.Tenancy.TenantQuotaUse(ctx(c), r, Who(c).User.Tenant())
	if err != nil {
		return row, err
	}
	row.Enforced = u.Enforced
	row.CPU = UseBar("cpu", "CPU", u.Used.CPU, u.Quota.CPU, "CPU")
	row.Memory = UseBar("memory", "Memory", u.Used.MemoryGiB, u.Quota.MemoryGiB, "GiB")
	return row, nil
}

// tenantNames maps tenant ids to names.
func (h *Handlers) tenantNames(c *fiber.Ctx) (map[string]string, error) {
	ts, err := h.Store.ListTenants(ctx(c))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, t := range ts {
		out[t.ID] = t.Name
	}
	return out, nil
}

func orV(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// regionTenancy is what the General tab shows of the region's owner and mode.
func (h *Handlers) regionTenancy(c *fiber.Ctx, r *store.Region) *views.RegionTenancy {
	if !h.Cfg.Tenancy {
		return nil
	}
	t := &views.RegionTenancy{Owner: "Platform", Mode: string(r.Mode)}
	if id := r.Tenant(); id != "" {
		t.Owner = "Tenant"
		if tt, err := h.Store.TenantByID(ctx(c), id); err == nil {
			t.Owner = "Tenant " + tt.Name
		}
	}
	if h.Ops.Tenancy.MaySetRegionMode(h.Actor(c)) && tenancy.RegionMutable(h.Actor(c), r) == nil {
		t.ModeOptions = OptionsOf(store.RegionModes, r.Mode)
	}
	return t
}

// RegionSummaryJSON is what a tenant's user reads of a platform region assigned to its
// tenant: never its cluster, components or capacity.
type RegionSummaryJSON struct {
	ID           string           `json:"id"`
	Name         string           `json:"name"`
	Owner        string           `json:"owner"` // platform
	RegionMode   string           `json:"region_mode"`
	ProjectCount int              `json:"project_count"`
	Quota        tenancy.QuotaUse `json:"quota"`
	GPU          GPUSummaryJSON   `json:"gpu"`
}

// regionSummaryJSON reads the summary of an assigned platform region for the user's tenant.
func (h *Handlers) regionSummaryJSON(c *fiber.Ctx, r *store.Region) (RegionSummaryJSON, error) {
	u, err := h.Ops.Tenancy.TenantQuotaUse(ctx(c), r, Who(c).User.Tenant())
	return RegionSummaryJSON{ID: r.ID, Name: r.Name, Owner: "platform", RegionMode: string(r.Mode), ProjectCount: r.ProjectCount, Quota: u, GPU: gpuSummary(r)}, err
}

// RegionJSON is a region for the API: its summary for a tenant's user when it is a
// platform region, else the whole region (with its owner and mode under the Tenancy module).
func (h *Handlers) RegionJSON(c *fiber.Ctx, r *store.Region, base string) (any, error) {
	if h.Cfg.Tenancy && tenancy.SummaryOnly(h.Actor(c), r) {
		return h.regionSummaryJSON(c, r)
	}
	j := ToRegionJSON(r, base)
	if h.Cfg.Tenancy {
		j.Owner, j.TenantID, j.RegionMode = "platform", r.TenantID, string(r.Mode)
		if r.Tenant() != "" {
			j.Owner = "tenant"
		}
	}
	return j, nil
}

// UseBar is what a tenant's projects request of its quota.
func UseBar(resource, label string, used, quota float64, unit string) views.QuotaBar {
	b := views.QuotaBar{Resource: resource, Label: label, Value: FmtNum(quota), Unlimited: quota == 0}
	if quota == 0 {
		b.Text = FmtNum(used) + " " + unit + " used, no limit"
		return b
	}
	b.Text = FmtNum(used) + " of " + QuotaText(quota, unit) + " used"
	b.Percent, b.Over = PercentOf(used, quota)
	return b
}

// PercentOf is v as a whole percentage of of, and whether it is over.
func PercentOf(v, of float64) (int, bool) {
	if of <= 0 {
		return 100, v > 0
	}
	p := int(v / of * 100)
	return min(100, max(0, p)), v > of+1e-9
}

// FmtNum writes a number with at most three decimals.
func FmtNum(v float64) string { return fmt.Sprintf("%g", float64(int64(v*1000+0.5))/1000) }

// QuotaText prints a quota with its unit ("no limit" for 0).
func QuotaText(v float64, unit string) string {
	if v == 0 {
		return "no limit"
	}
	return fmt.Sprintf("%s %s", FmtNum(v), unit)
}
