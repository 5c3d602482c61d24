// Package perm is the console's permissions: their names, the roles that hold them and
// the scopes of API tokens.
package perm

import (
	"fmt"
	"sort"
	"strings"

	"runr.dev/console/store"
)

// Permission names, as the spec uses them.
const (
	RegionsView        = "regions.view"
	RegionsManage      = "regions.manage"
	RegionsKubeconfig  = "regions.kubeconfig"
	RegistryManage     = "registry.manage"
	SandboxManage      = "sandbox.manage"
	SandboxesManage    = "sandboxes.manage"
	GPUManage          = "regions.gpu.manage"
	DataServicesManage = "regions.data_services.manage"
	SupplyChainManage  = "regions.supply_chain.manage"
	BillingView        = "billing.view"
	BillingManage      = "billing.manage"
	ProjectsView       = "projects.view"
	ProjectsManage     = "projects.manage"
	ProjectsDeploy     = "projects.deploy"
	SettingsView       = "settings.view"
	SettingsManage     = "settings.manage"
	UsersView          = "users.view"
	UsersManage        = "users.manage"
	TokensManage       = "tokens.manage"
	JobsView           = "jobs.view"
	// TenantsView and TenantsManage are the Tenancy module's: the tenants, their
	// users and the assignments of platform regions. Platform users only.
	TenantsView   = "tenants.view"
	TenantsManage = "tenants.manage"
)

// descriptions say what each permission allows, for the forms that grant them.
var descriptions = map[string]string{
	RegionsView:        "see regions, their status, settings and jobs",
	RegionsManage:      "create, change, move and remove regions and what they run",
	RegionsKubeconfig:  "download a region's stored kubeconfig",
	RegistryManage:     "set up, test and remove a region's registry",
	SandboxManage:      "install and remove a region's isolation runtimes (Kata, gVisor, WebAssembly)",
	SandboxesManage:    "change a region's Sandbox API settings (who may start sandboxes, limits)",
	GPUManage:          "install GPU support and set model storage",
	DataServicesManage: "install data services and bind projects to them",
	SupplyChainManage:  "set a region's image signature policy",
	BillingView:        "see usage and invoices",
	BillingManage:      "change billing",
	ProjectsView:       "see projects",
	ProjectsManage:     "create, change and delete projects",
	ProjectsDeploy:     "deploy, stop and resume projects",
	SettingsView:       "see the platform's settings",
	SettingsManage:     "change the platform's settings",
	UsersView:          "see users",
	UsersManage:        "add, change and remove users",
	TokensManage:       "create, list and revoke API tokens, and change one's password through the API",
	JobsView:           "see jobs and their logs",
	TenantsView:        "see tenants and their assignments",
	TenantsManage:      "create tenants and assign platform regions to them",
}

// Describe says what a permission allows ("" for an unknown one).
func Describe(p string) string { return descriptions[p] }

// All lists every permission.
var All = []string{
	RegionsView, RegionsManage, RegionsKubeconfig, RegistryManage, SandboxManage, SandboxesManage,
	GPUManage, DataServicesManage, SupplyChainManage, BillingView, BillingManage,
	ProjectsView, ProjectsManage, ProjectsDeploy, SettingsView, SettingsManage,
	UsersView, UsersManage, TokensManage, JobsView, TenantsView, TenantsManage,
}

// Platform are held by platform users only: a tenant's users never manage
// tenants or the platform's settings, whatever their role in the tenant.
var Platform = []string{TenantsView, TenantsManage, SettingsManage}

// Tenancy exist only while the Tenancy module is on.
var Tenancy = []string{TenantsView, TenantsManage}

// Billing exist only while the Billing module is on.
var Billing = []string{BillingView, BillingManage}

// Absent lists the permissions of the modules that are off: they do not exist then.
func Absent(tenancy, billing bool) []string {
	var out []string
	if !tenancy {
		out = append(out, Tenancy...)
	}
	if !billing {
		out = append(out, Billing...)
	}
	return out
}

// viewPermissions are what every role may read.
var viewPermissions = []string{RegionsView, BillingView, ProjectsView, SettingsView, UsersView, JobsView, TenantsView}

// rolePermissions maps each role to its permissions. Viewer is read-only.
var rolePermissions = map[string][]string{
	"owner": All,
	// Admins run the platform but do not manage billing.
	"admin": without(All, BillingManage),
	// Members work on projects and may create their own API tokens.
	"member": append([]string{ProjectsManage, ProjectsDeploy, TokensManage}, viewPermissions...),
	"viewer": viewPermissions,
}

// OfRole returns the permissions of a role.
func OfRole(role string) []string { return rolePermissions[role] }

// Valid reports whether p is a known permission.
func Valid(p string) bool {
	for _, x := range All {
		if x == p {
			return true
		}
	}
	return false
}

// Effective returns the role's permissions, narrowed to the scopes of a token
// when scopes is not nil ("*" keeps the whole role).
func Effective(role string, scopes []string) map[string]bool {
	perms := map[string]bool{}
	for _, p := range OfRole(role) {
		perms[p] = true
	}
	if scopes == nil {
		return perms
	}
	allowed := map[string]bool{}
	for _, s := range scopes {
		if s == "*" {
			return perms
		}
		allowed[s] = true
	}
	for p := range perms {
		if !allowed[p] {
			delete(perms, p)
		}
	}
	return perms
}

// OfUser returns a user's effective permissions (Effective of the
// role and the token's scopes), without the platform's own for a tenant's user.
func OfUser(u *store.User, scopes []string) map[string]bool {
	perms := Effective(u.Role, scopes)
	if u.Tenant() != "" {
		for _, p := range Platform {
			delete(perms, p)
		}
	}
	return perms
}

// Sorted returns the keys of a permission set in order.
func Sorted(perms map[string]bool) []string {
	out := make([]string, 0, len(perms))
	for p := range perms {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func without(list []string, drop ...string) []string {
	out := []string{}
	for _, p := range list {
		keep := true
		for _, d := range drop {
			if p == d {
				keep = false
			}
		}
		if keep {
			out = append(out, p)
		}
	}
	return out
}

// CapScopes checks the scopes of a new token against what its creator holds: held is
// the creator's effective permissions, and star whether the creator may hand out "*"
// (a signed-in user, or a token that has "*" itself). A token never gets more than the
// caller that creates it.
func CapScopes(held map[string]bool, star bool, scopes []string) error {
	for _, s := range scopes {
		switch {
		case s == "*" && !star:
			return fmt.Errorf("* is more than this token holds: name the permissions, at most %s", strings.Join(Sorted(held), ", "))
		case s != "*" && !held[s]:
			return fmt.Errorf("you do not hold %s, so a token of yours cannot have it", s)
		}
	}
	return nil
}
