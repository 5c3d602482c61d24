package people

import (
	"errors"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/accounts"
	"runr.dev/console/handlers"
	"runr.dev/console/ops/tenancy"
	"runr.dev/console/problem"
	"runr.dev/console/store"
	"runr.dev/console/views"
)

// The Tenancy module's handlers: tenants, their users, and the assignments of platform
// regions with quotas (platform users; tenants.view and tenants.manage).

// tenantOf loads the tenant of the path's :id (404 when there is none).
func (h *Handlers) tenantOf(c *fiber.Ctx) (*store.Tenant, error) {
	return h.Store.TenantByID(c.UserContext(), c.Params("id"))
}

// APIListTenants is GET /api/tenants.
func (h *Handlers) APIListTenants(c *fiber.Ctx) error {
	ts, err := h.Store.ListTenants(c.UserContext())
	return handlers.ListAnswer(h.Handlers, c, ts, err)
}

// APICreateTenant is POST /api/tenants {name}: 201 with the tenant.
func (h *Handlers) APICreateTenant(c *fiber.Ctx) error {
	var in tenancy.TenantInput
	if err := handlers.BodyMap(c, &in); err != nil {
		return h.Fail(c, err)
	}
	t, err := h.Ops.Tenancy.CreateTenant(c.UserContext(), h.Actor(c), in)
	return handlers.DataAnswer(h.Handlers, c, fiber.StatusCreated, t, err)
}

// APIGetTenant is GET /api/tenants/{id}: the tenant with its assignments.
func (h *Handlers) APIGetTenant(c *fiber.Ctx) error {
	t, err := h.tenantOf(c)
	if err != nil {
		return h.Fail(c, err)
	}
	as, err := h.Store.TenantAssignments(c.UserContext(), t.ID)
	if err != nil {
		return h.Fail(c, err)
	}
	if as == nil {
		as = []store.Assignment{}
	}
	return c.JSON(fiber.Map{"data": t, "assignments": as})
}

// APIRenameTenant is PUT /api/tenants/{id} {name}.
func (h *Handlers) APIRenameTenant(c *fiber.Ctx) error {
	t, in, err := handlers.SubjectBody[*store.Tenant, tenancy.TenantInput](c, h.tenantOf)
	if err != nil {
		return h.Fail(c, err)
	}
	t, err = h.Ops.Tenancy.RenameTenant(c.UserContext(), h.Actor(c), t, in)
	return handlers.DataAnswer(h.Handlers, c, fiber.StatusOK, t, err)
}

// APIDeleteTenant is DELETE /api/tenants/{id}: refused (422) while the tenant has regions
// or projects.
func (h *Handlers) APIDeleteTenant(c *fiber.Ctx) error {
	t, err := h.tenantOf(c)
	if err != nil {
		return h.Fail(c, err)
	}
	if err := h.Ops.Tenancy.DeleteTenant(c.UserContext(), h.Actor(c), t); err != nil {
		return h.Fail(c, err)
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// APITenantUsers is GET /api/tenants/{id}/users.
func (h *Handlers) APITenantUsers(c *fiber.Ctx) error {
	t, err := h.tenantOf(c)
	if err != nil {
		return h.Fail(c, err)
	}
	us, err := h.Store.ListUsers(store.WithTenant(c.UserContext(), t.ID))
	return handlers.ListAnswer(h.Handlers, c, us, err)
}

// APICreateTenantUser is POST /api/tenants/{id}/users {email, role, password?}: 201 with
// the user, and a generated password once.
func (h *Handlers) APICreateTenantUser(c *fiber.Ctx) error {
	t, in, err := handlers.SubjectBody[*store.Tenant, accounts.UserInput](c, h.tenantOf)
	if err != nil {
		return h.Fail(c, err)
	}
	u, generated, err := accounts.CreateTenantUser(c.UserContext(), h.Store, handlers.Who(c).User, t.ID, in)
	if err != nil {
		return h.Fail(c, err)
	}
	out := fiber.Map{"data": u}
	if generated != "" {
		out["password"] = generated
	}
	return c.Status(fiber.StatusCreated).JSON(out)
}

// APIAssignments is GET /api/knative-regions/{id}/assignments.
func (h *Handlers) APIAssignments(c *fiber.Ctx) error {
	as, err := h.Store.RegionAssignments(c.UserContext(), c.Params("id"))
	return handlers.ListAnswer(h.Handlers, c, as, err)
}

// APIAssign is POST /api/knative-regions/{id}/assignments {tenant_id, cpu, memory_gib}:
// 201 with the assignment; quotas that do not fit answer 422 with what is free. With
// billing on it is an offer (202) that the tenant accepts with its markup.
func (h *Handlers) APIAssign(c *fiber.Ctx) error {
	r, in, err := handlers.RegionBody[tenancy.QuotaInput](h.Handlers, c)
	if err != nil {
		return h.Fail(c, err)
	}
	if h.Cfg.Billing {
		// With billing, an assignment is an offer the tenant accepts with its markup.
		o, err := h.Ops.Billing.OfferRegion(c.UserContext(), h.Actor(c), r, in)
		return handlers.DataAnswer(h.Handlers, c, fiber.StatusAccepted, o, err)
	}
	a, err := h.Ops.Tenancy.AssignRegion(c.UserContext(), h.Actor(c), r, in)
	return handlers.DataAnswer(h.Handlers, c, fiber.StatusCreated, a, err)
}

// APIChangeAssignment is PUT /api/knative-regions/{id}/assignments/{tenant_id} {cpu,
// memory_gib}: a quota left out stays.
func (h *Handlers) APIChangeAssignment(c *fiber.Ctx) error {
	r, in, err := handlers.RegionBody[tenancy.QuotaInput](h.Handlers, c)
	if err != nil {
		return h.Fail(c, err)
	}
	a, err := h.Ops.Tenancy.ChangeAssignment(c.UserContext(), h.Actor(c), r, c.Params("tenant_id"), in)
	return handlers.DataAnswer(h.Handlers, c, fiber.StatusOK, a, err)
}

// APIUnassign is DELETE /api/knative-regions/{id}/assignments/{tenant_id}.
func (h *Handlers) APIUnassign(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	if err := h.Ops.Tenancy.Unassign(c.UserContext(), h.Actor(c), r, c.Params("tenant_id")); err != nil {
		return h.Fail(c, err)
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// TenantsPage is the Tenants page: the tenants, their users and their assignments with
// quota bars against each region's capacity.
func (h *Handlers) TenantsPage(c *fiber.Ctx) error {
	return h.renderTenants(c, fiber.StatusOK, views.TenantsData{})
}

// renderTenants renders the Tenants page with a form's values and errors (d.Form, for
// the form d.FormFor names) or a generated password.
func (h *Handlers) renderTenants(c *fiber.Ctx, status int, d views.TenantsData) error {
	if err := h.fillTenants(c, &d); err != nil {
		return h.Fail(c, err)
	}
	return handlers.Render(c, status, views.Tenants(h.Page(c, "Tenants", "tenants"), d))
}

// tenantsForm answers a form of the Tenants page: back to the page with a flash, or the
// page again with the messages beside the fields (422).
func (h *Handlers) tenantsForm(c *fiber.Ctx, formFor string, values map[string]string, err error, flash string) error {
	if err == nil {
		h.Flash(c, flash)
		return handlers.Redirect(c, "/tenants")
	}
	fe, msg, ok := h.Refusal(c, err)
	if !ok {
		return h.Fail(c, err)
	}
	f := views.Form{Values: values, Errors: fe, Error: msg}
	if msg == "" {
		f.Error = "Some fields need another look."
	}
	return h.renderTenants(c, fiber.StatusUnprocessableEntity, views.TenantsData{Form: f, FormFor: formFor})
}

// CreateTenantForm creates a tenant from the Tenants page.
func (h *Handlers) CreateTenantForm(c *fiber.Ctx) error {
	if fe := handlers.InputErrors(c, "name"); fe != nil {
		return h.tenantsForm(c, "new", map[string]string{"name": ""}, &problem.Invalid{Fields: fe}, "")
	}
	name := c.FormValue("name")
	_, err := h.Ops.Tenancy.CreateTenant(c.UserContext(), h.Actor(c), tenancy.TenantInput{Name: name})
	return h.tenantsForm(c, "new", map[string]string{"name": name}, err, "Tenant "+strings.TrimSpace(name)+" created: add its first owner.")
}

// RenameTenantForm renames a tenant.
func (h *Handlers) RenameTenantForm(c *fiber.Ctx) error {
	t, err := h.tenantOf(c)
	if err != nil {
		return h.Fail(c, err)
	}
	if fe := handlers.InputErrors(c, "name"); fe != nil {
		return h.tenantsForm(c, t.ID, nil, &problem.Invalid{Fields: fe}, "")
	}
	name := c.FormValue("name")
	_, err = h.Ops.Tenancy.RenameTenant(c.UserContext(), h.Actor(c), t, tenancy.TenantInput{Name: name})
	return h.tenantsForm(c, t.ID, map[string]string{"name": name}, err, "Tenant renamed.")
}

// DeleteTenantForm removes a tenant.
func (h *Handlers) DeleteTenantForm(c *fiber.Ctx) error {
	t, err := h.tenantOf(c)
	if err != nil {
		return h.Fail(c, err)
	}
	err = h.Ops.Tenancy.DeleteTenant(c.UserContext(), h.Actor(c), t)
	return h.tenantsForm(c, t.ID, nil, err, "Tenant "+t.Name+" removed.")
}

// CreateTenantUserForm adds a user to a tenant; a generated password is shown once.
func (h *Handlers) CreateTenantUserForm(c *fiber.Ctx) error {
	t, err := h.tenantOf(c)
	if err != nil {
		return h.Fail(c, err)
	}
	values := map[string]string{"email": c.FormValue("email"), "role": c.FormValue("role")}
	if fe := handlers.InputErrors(c, "email", "role", "password"); fe != nil {
		return h.tenantsForm(c, t.ID, values, &problem.Invalid{Fields: fe}, "")
	}
	in := accounts.UserInput{Email: values["email"], Role: values["role"], Password: c.FormValue("password")}
	u, generated, err := accounts.CreateTenantUser(c.UserContext(), h.Store, handlers.Who(c).User, t.ID, in)
	if err != nil {
		return h.tenantsForm(c, t.ID, values, err, "")
	}
	if generated == "" {
		return h.tenantsForm(c, t.ID, nil, nil, u.Email+" added to "+t.Name+".")
	}
	return h.renderTenants(c, fiber.StatusCreated, views.TenantsData{Created: generated, CreatedFor: u.Email})
}

// quotaForm reads the quota fields of a form: empty is left out (the default).
func quotaForm(c *fiber.Ctx) (tenancy.QuotaInput, map[string]string, handlers.FieldErrors) {
	values := map[string]string{"tenant_id": c.FormValue("tenant_id"), "cpu": strings.TrimSpace(c.FormValue("cpu")),
		"memory_gib": strings.TrimSpace(c.FormValue("memory_gib"))}
	in := tenancy.QuotaInput{TenantID: values["tenant_id"]}
	fe := handlers.FieldErrors{}
	for name, to := range map[string]**float64{"cpu": &in.CPU, "memory_gib": &in.MemoryGiB} {
		if values[name] == "" {
			continue
		}
		v, err := strconv.ParseFloat(values[name], 64)
		if err != nil {
			fe[name] = "Use a number, e.g. 2 or 0.5 (0: no limit)."
			continue
		}
		*to = &v
	}
	if len(fe) == 0 {
		fe = nil
	}
	return in, values, fe
}

// AssignForm assigns a platform region (region_id) to the tenant of the path (the
// Tenants page); the use case passes region.mutable itself.
func (h *Handlers) AssignForm(c *fiber.Ctx) error {
	t, err := h.tenantOf(c)
	if err != nil {
		return h.Fail(c, err)
	}
	in, values, fe := quotaForm(c)
	in.TenantID, values["region_id"] = t.ID, c.FormValue("region_id")
	if fe != nil {
		return h.tenantsForm(c, t.ID, values, &problem.Invalid{Fields: fe}, "")
	}
	r, err := h.Store.RegionByID(c.UserContext(), values["region_id"])
	if errors.Is(err, store.ErrNotFound) {
		return h.tenantsForm(c, t.ID, values, &problem.Invalid{Fields: map[string]string{"region_id": "Choose a platform region."}}, "")
	} else if err != nil {
		return h.Fail(c, err)
	}
	if h.Cfg.Billing {
		_, err = h.Ops.Billing.OfferRegion(c.UserContext(), h.Actor(c), r, in)
		return h.tenantsForm(c, t.ID, values, err, "Region "+r.Name+" offered to "+t.Name+": it is assigned once the tenant accepts.")
	}
	_, err = h.Ops.Tenancy.AssignRegion(c.UserContext(), h.Actor(c), r, in)
	return h.tenantsForm(c, t.ID, values, err, "Region "+r.Name+" assigned to "+t.Name+".")
}

// ChangeAssignmentForm changes the quotas of an assignment (the Tenants page).
func (h *Handlers) ChangeAssignmentForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	in, values, fe := quotaForm(c)
	formFor := c.Params("tenant") + "/" + r.ID
	if fe != nil {
		return h.tenantsForm(c, formFor, values, &problem.Invalid{Fields: fe}, "")
	}
	_, err = h.Ops.Tenancy.ChangeAssignment(c.UserContext(), h.Actor(c), r, c.Params("tenant"), in)
	return h.tenantsForm(c, formFor, values, err, "Quotas on "+r.Name+" saved.")
}

// UnassignForm takes a region away from a tenant (the Tenants page).
func (h *Handlers) UnassignForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	err = h.Ops.Tenancy.Unassign(c.UserContext(), h.Actor(c), r, c.Params("tenant"))
	return h.tenantsForm(c, "", nil, err, "Region "+r.Name+" unassigned.")
}
