package store

import (
	"fmt"
	"sort"
	"strings"
)

// Permission names, as the spec uses them.
const (
	PermRegionsView        = "regions.view"
	PermRegionsManage      = "regions.manage"
	PermRegionsKubeconfig  = "regions.kubeconfig"
	PermRegistryManage     = "registry.manage"
	PermSandboxManage      = "sandbox.manage"
	PermSandboxesManage    = "sandboxes.manage"
	PermGPUManage          = "regions.gpu.manage"
	PermDataServicesManage = "regions.data_services.manage"
	PermSupplyChainManage  = "regions.supply_chain.manage"
	PermBillingView        = "billing.view"
	PermBillingManage      = "billing.manage"
	PermProjectsView       = "projects.view"
	PermProjectsManage     = "projects.manage"
	PermProjectsDeploy     = "projects.deploy"
	PermSettingsView       = "settings.view"
	PermSettingsManage     = "settings.manage"
	PermUsersView          = "users.view"
	PermUsersManage        = "users.manage"
	PermTokensManage       = "tokens.manage"
	PermJobsView           = "jobs.view"
	// PermTenantsView and PermTenantsManage are the Tenancy module's: the tenants, their
	// users and the assignments of platform regions. Platform users only.
	PermTenantsView   = "tenants.view"
	PermTenantsManage = "tenants.manage"
)

// AllPermissions lists every permission.
var AllPermissions = []string{
	PermRegionsView, PermRegionsManage, PermRegionsKubeconfig, PermRegistryManage, PermSandboxManage, PermSandboxesManage,
	PermGPUManage, PermDataServicesManage, PermSupplyChainManage, PermBillingView, PermBillingManage,
	PermProjectsView, PermProjectsManage, PermProjectsDeploy, PermSettingsView, PermSettingsManage,
	PermUsersView, PermUsersManage, PermTokensManage, PermJobsView, PermTenantsView, PermTenantsManage,
}

// PlatformPermissions are held by platform users only: a tenant's users never manage
// tenants or the platform's settings, whatever their role in the tenant.
var PlatformPermissions = []string{PermTenantsView, PermTenantsManage, PermSettingsManage}

// TenancyPermissions exist only while the Tenancy module is on.
var TenancyPermissions = []string{PermTenantsView, PermTenantsManage}

// viewPermissions are what every role may read.
var viewPermissions = []string{PermRegionsView, PermBillingView, PermProjectsView, PermSettingsView, PermUsersView, PermJobsView, PermTenantsView}

// rolePermissions maps each role to its permissions. Viewer is read-only.
var rolePermissions = map[string][]string{
	"owner": AllPermissions,
	// Admins run the platform but do not manage billing.
	"admin": without(AllPermissions, PermBillingManage),
	// Members work on projects and may create their own API tokens.
	"member": append([]string{PermProjectsManage, PermProjectsDeploy, PermTokensManage}, viewPermissions...),
	"viewer": viewPermissions,
}

// RolePermissions returns the permissions of a role.
func RolePermissions(role string) []string { return rolePermissions[role] }

// ValidPermission reports whether p is a known permission.
func ValidPermission(p string) bool {
	for _, x := range AllPermissions {
		if x == p {
			return true
		}
	}
	return false
}

// EffectivePermissions returns the role's permissions, narrowed to the scopes of a token
// when scopes is not nil ("*" keeps the whole role).
func EffectivePermissions(role string, scopes []string) map[string]bool {
	perms := map[string]bool{}
	for _, p := range RolePermissions(role) {
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

// UserPermissions returns a user's effective permissions (EffectivePermissions of the
// role and the token's scopes), without the platform's own for a tenant's user.
func UserPermissions(u *User, scopes []string) map[string]bool {
	perms := EffectivePermissions(u.Role, scopes)
	if u.Tenant() != "" {
		for _, p := range PlatformPermissions {
			delete(perms, p)
		}
	}
	return perms
}

// SortedPermissions returns the keys of a permission set in order.
func SortedPermissions(perms map[string]bool) []string {
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
			return fmt.Errorf("* is more than this token holds: name the permissions, at most %s", strings.Join(SortedPermissions(held), ", "))
		case s != "*" && !held[s]:
			return fmt.Errorf("you do not hold %s, so a token of yours cannot have it", s)
		}
	}
	return nil
}
