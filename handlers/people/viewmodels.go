package people

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/a-h/templ"
	"github.com/gofiber/fiber/v2"
	"runr.dev/console/handlers"
	"runr.dev/console/ops/tenancy"
	"runr.dev/console/perm"
	"runr.dev/console/store"
	"runr.dev/console/views"
)

// quotaLimits reads the quota limit (capacity and ceiling) of each region, in parallel;
// a region whose cluster does not answer in time is left out.
func (h *Handlers) quotaLimits(c *fiber.Ctx, ids []string) map[string]tenancy.Quota {
	cctx, cancel := context.WithTimeout(c.UserContext(), handlers.CapacityWait)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := map[string]tenancy.Quota{}
	for _, id := range ids {
		r, err := h.Store.RegionByID(cctx, id)
		if err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep, err := h.Ops.Nodes.RegionCapacity(cctx, r, "")
			if err != nil {
				return
			}
			mu.Lock()
			out[r.ID] = tenancy.QuotaLimit(rep.Total, tenancy.Quota{CPU: h.Cfg.QuotaCPU, MemoryGiB: h.Cfg.QuotaMemoryGiB})
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// fillTenants builds the Tenants page: every tenant with its users and its assignments,
// each quota a bar against its region's capacity.
func (h *Handlers) fillTenants(c *fiber.Ctx, d *views.TenantsData) error {
	ts, err := h.Store.ListTenants(c.UserContext())
	if err != nil {
		return err
	}
	d.CanManage = handlers.Who(c).Can(perm.TenantsManage)
	d.Roles = handlers.OptionsOf(store.Roles, "owner")
	byTenant := map[string][]store.Assignment{}
	var regionIDs []string
	seen := map[string]bool{}
	for _, t := range ts {
		as, err := h.Store.TenantAssignments(c.UserContext(), t.ID)
		if err != nil {
			return err
		}
		byTenant[t.ID] = as
		for _, a := range as {
			if !seen[a.RegionID] {
				seen[a.RegionID] = true
				regionIDs = append(regionIDs, a.RegionID)
			}
		}
	}
	limits := h.quotaLimits(c, regionIDs)
	rs, err := h.Store.ListRegions(c.UserContext(), store.RegionFilter{}, false)
	if err != nil {
		return err
	}
	for _, t := range ts {
		us, err := h.Store.ListUsers(store.WithTenant(c.UserContext(), t.ID))
		if err != nil {
			return err
		}
		tv := views.TenantView{ID: t.ID, Name: t.Name, Regions: t.Regions, Projects: t.Projects}
		for _, u := range us {
			tv.Users = append(tv.Users, views.TenantUserView{Email: u.Email, Role: u.Role})
		}
		assigned := map[string]bool{}
		for _, a := range byTenant[t.ID] {
			assigned[a.RegionID] = true
			limit, known := limits[a.RegionID]
			tv.Assignments = append(tv.Assignments, views.AssignmentView{RegionID: a.RegionID, RegionName: a.RegionName,
				Mode: string(a.RegionMode), Enforced: a.RegionMode != store.RegionShared,
				CPU:    capacityBar("cpu", "CPU", a.CPU, limit.CPU, known, "CPU"),
				Memory: capacityBar("memory", "Memory", a.MemoryGiB, limit.MemoryGiB, known, "GiB")})
		}
		for _, r := range rs {
			if r.Tenant() == "" && !assigned[r.ID] {
				tv.Assignable = append(tv.Assignable, views.Option{Value: r.ID, Label: r.Name + " (" + string(r.Mode) + ")"})
			}
		}
		d.Tenants = append(d.Tenants, tv)
	}
	return nil
}

// capacityBar is a quota against the region's limit (capacity and ceiling).
func capacityBar(resource, label string, quota, limit float64, known bool, unit string) views.QuotaBar {
	b := views.QuotaBar{Resource: resource, Label: label, Value: handlers.FmtNum(quota), Unlimited: quota == 0}
	switch {
	case !known:
		b.Text = handlers.QuotaText(quota, unit) + " (capacity unknown: the cluster did not answer)"
	case quota == 0:
		b.Text = "no limit, of " + handlers.FmtNum(limit) + " " + unit
	default:
		b.Text = handlers.QuotaText(quota, unit) + " of " + handlers.FmtNum(limit) + " " + unit
		b.Percent, b.Over = handlers.PercentOf(quota, limit)
	}
	return b
}

// usersPage is the users list as the current user sees it.
func usersPage(pr *handlers.Principal, p views.Page, us []store.User, f views.Form, created string) templ.Component {
	role := f.V("role")
	if role == "" {
		role = newUserRole
	}
	return views.Users(p, userRows(pr, us), grantableRoles(pr.User, role), f, created)
}

// userRows are the lines of the users list, with what the current user may do to each
// user: nobody changes their own role or deletes themselves, and a role is changed
// only by someone who may give it.
func userRows(pr *handlers.Principal, us []store.User) []views.UserRow {
	rows := make([]views.UserRow, len(us))
	for i, u := range us {
		manage := pr.Can(perm.UsersManage) && u.Email != pr.User.Email
		rows[i] = views.UserRow{ID: u.ID, Email: u.Email, Role: u.Role, LastLoginAt: u.LastLoginAt, CanDelete: manage,
			CanChangeRole: manage && store.CheckGrant(pr.User, u.Role) == nil}
		if rows[i].CanChangeRole {
			rows[i].RoleOptions = grantableRoles(pr.User, u.Role)
		}
	}
	return rows
}

// grantableRoles are the roles a user may give, the chosen one selected.
func grantableRoles(actor *store.User, chosen string) []views.Option {
	var roles []string
	for _, r := range store.Roles {
		if store.CheckGrant(actor, r) == nil {
			roles = append(roles, r)
		}
	}
	return handlers.OptionsOf(roles, chosen)
}

// tokenRows are the lines of the API tokens list.
func tokenRows(ts []store.APIToken) []views.TokenRow {
	out := make([]views.TokenRow, len(ts))
	for i, t := range ts {
		out[i] = views.TokenRow{ID: t.ID, Name: t.Name, Prefix: t.Prefix, Scopes: t.Scopes, LastUsedAt: t.LastUsedAt, Expires: expiresText(&t, time.Now())}
	}
	return out
}

// expiresText says when a token stops working, in words.
func expiresText(t *store.APIToken, now time.Time) string {
	switch {
	case t.ExpiresAt == nil:
		return "never"
	case t.Expired(now):
		return "expired " + t.ExpiresAt.Format("2006-01-02")
	}
	days := int(t.ExpiresAt.Sub(now).Hours() / 24)
	if days < 1 {
		return "today, " + t.ExpiresAt.Format("15:04 MST")
	}
	return fmt.Sprintf("in %d days (%s)", days, t.ExpiresAt.Format("2006-01-02"))
}

// newUserRole is the role the Add a user form preselects.
const newUserRole = "member"
