package handlers

import (
	"runr.dev/console/store"
	"runr.dev/console/views"
)

// permissionsOf says which of the permissions the pages ask about a user holds.
func permissionsOf(perms map[string]bool) views.Permissions {
	return views.Permissions{
		RegionsManage:             perms[store.PermRegionsManage],
		RegistryManage:            perms[store.PermRegistryManage],
		SandboxManage:             perms[store.PermSandboxManage],
		SandboxesManage:           perms[store.PermSandboxesManage],
		RegionsGpuManage:          perms[store.PermGPUManage],
		ProjectsView:              perms[store.PermProjectsView],
		JobsView:                  perms[store.PermJobsView],
		ProjectsManage:            perms[store.PermProjectsManage],
		ProjectsDeploy:            perms[store.PermProjectsDeploy],
		SettingsView:              perms[store.PermSettingsView],
		SettingsManage:            perms[store.PermSettingsManage],
		UsersView:                 perms[store.PermUsersView],
		UsersManage:               perms[store.PermUsersManage],
		TokensManage:              perms[store.PermTokensManage],
		RegionsSupplyChainManage:  perms[store.PermSupplyChainManage],
		TenantsView:               perms[store.PermTenantsView],
		TenantsManage:             perms[store.PermTenantsManage],
		RegionsDataServicesManage: perms[store.PermDataServicesManage],
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
