package handlers

import (
	"runr.dev/console/perm"
	"runr.dev/console/views"
)

// permissionsOf says which of the permissions the pages ask about a user holds.
func permissionsOf(perms map[string]bool) views.Permissions {
	return views.Permissions{
		RegionsManage:             perms[perm.RegionsManage],
		RegistryManage:            perms[perm.RegistryManage],
		SandboxManage:             perms[perm.SandboxManage],
		SandboxesManage:           perms[perm.SandboxesManage],
		RegionsGpuManage:          perms[perm.GPUManage],
		ProjectsView:              perms[perm.ProjectsView],
		JobsView:                  perms[perm.JobsView],
		ProjectsManage:            perms[perm.ProjectsManage],
		ProjectsDeploy:            perms[perm.ProjectsDeploy],
		SettingsView:              perms[perm.SettingsView],
		SettingsManage:            perms[perm.SettingsManage],
		UsersView:                 perms[perm.UsersView],
		UsersManage:               perms[perm.UsersManage],
		TokensManage:              perms[perm.TokensManage],
		RegionsSupplyChainManage:  perms[perm.SupplyChainManage],
		TenantsView:               perms[perm.TenantsView],
		TenantsManage:             perms[perm.TenantsManage],
		RegionsDataServicesManage: perms[perm.DataServicesManage],
		BillingView:               perms[perm.BillingView],
		BillingManage:             perms[perm.BillingManage],
	}
}

// PrincipalPage is the page data of who asks: the user, their role and permissions,
// and the CSRF token of their forms.
func PrincipalPage(p *Principal, csrf string) views.Page {
	return views.Page{User: p.User.Email, Role: p.User.Role, Can: permissionsOf(p.Perms), CSRF: csrf}
}

// OptionsOf offers values as options, the chosen one selected.
func OptionsOf[T ~string](values []T, chosen T) []views.Option {
	out := make([]views.Option, len(values))
	for i, v := range values {
		out[i] = views.Option{Value: string(v), Label: string(v), Selected: v == chosen}
	}
	return out
}
