package handlers

import (
	"fmt"

	"github.com/a-h/templ"

	"runr.dev/console/store"
	"runr.dev/console/views"
)

// newUserRole is the role the Add a user form preselects.
const newUserRole = "member"

// usersPage is the users list as the current user sees it.
func usersPage(pr *Principal, p views.Page, us []store.User, f views.Form, created string) templ.Component {
	role := f.V("role")
	if role == "" {
		role = newUserRole
	}
	return views.Users(p, userRows(pr, us), grantableRoles(pr.User, role), f, created)
}

// userRows are the lines of the users list, with what the current user may do to each
// user: nobody changes their own role or deletes themselves, and a role is changed
// only by someone who may give it.
func userRows(pr *Principal, us []store.User) []views.UserRow {
	rows := make([]views.UserRow, len(us))
	for i, u := range us {
		manage := pr.Can(store.PermUsersManage) && u.Email != pr.User.Email
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
	return OptionsOf(roles, chosen)
}

// tokenRows are the lines of the API tokens list.
func tokenRows(ts []store.APIToken) []views.TokenRow {
	out := make([]views.TokenRow, len(ts))
	for i, t := range ts {
		out[i] = views.TokenRow{ID: t.ID, Name: t.Name, Prefix: t.Prefix, Scopes: t.Scopes, LastUsedAt: t.LastUsedAt}
	}
	return out
}

// ProjectRow is a project as a line of the projects list, with its region's name and its address.
func ProjectRow(p *store.Project, regionName, url string) views.ProjectRow {
	return views.ProjectRow{ID: p.ID, Name: p.Name, Slug: p.Slug, Message: p.Message, RegionName: regionName, State: string(p.State),
		Running: p.State == store.ProjectRunning, Stopped: p.State == store.ProjectStopped,
		Image: p.Image, CPUm: p.CPUm, MemoryMi: p.MemoryMi, GPUs: projectGPUs(p.GPU.V), URL: url, Kind: projectKindText(p), Demo: p.Demo}
}

// projectKindText is a project's kind with its schedule or stream.
func projectKindText(p *store.Project) string {
	switch {
	case p.Kind == store.ProjectScheduledJob:
		return p.Kind.Label() + " (" + p.Schedule + ")"
	case p.QueueStream != "":
		return p.Kind.Label() + " (stream " + p.QueueStream + ")"
	}
	return p.Kind.Label()
}

// projectGPUs says what a project asks of GPUs: "2× Tesla-T4", "1 GPU" ("" none).
func projectGPUs(g store.ProjectGPU) string {
	switch {
	case g.Count == 0:
		return ""
	case g.Model != "":
		return fmt.Sprintf("%d× %s", g.Count, g.Model)
	}
	return fmt.Sprintf("%d GPU(s)", g.Count)
}

// RegionOptions are the regions a project can be created in.
func RegionOptions(rs []store.Region) []views.Option {
	out := make([]views.Option, len(rs))
	for i, r := range rs {
		out[i] = views.Option{Value: r.ID, Label: r.Name}
	}
	return out
}
