package people

import (
	"testing"

	"runr.dev/console/handlers"
	"runr.dev/console/perm"
	"runr.dev/console/store"
)

func TestUserRowsRoleRules(t *testing.T) {
	us := []store.User{{ID: "1", Email: "me@x.io", Role: "admin"}, {ID: "2", Email: "o@x.io", Role: "owner"}, {ID: "3", Email: "m@x.io", Role: "member"}}
	admin := &handlers.Principal{User: &us[0], Perms: perm.Effective("admin", nil)}
	rows := userRows(admin, us)
	if rows[0].CanChangeRole || rows[0].CanDelete {
		t.Error("an admin may change their own role or delete themselves")
	}
	if rows[1].CanChangeRole || !rows[1].CanDelete {
		t.Errorf("an admin and an owner: %+v", rows[1])
	}
	if !rows[2].CanChangeRole || len(rows[2].RoleOptions) != 3 || !rows[2].RoleOptions[1].Selected || rows[2].RoleOptions[1].Value != "member" {
		t.Errorf("an admin and a member: %+v", rows[2])
	}
	owner := &handlers.Principal{User: &us[1], Perms: perm.Effective("owner", nil)}
	if r := userRows(owner, us)[0]; !r.CanChangeRole || len(r.RoleOptions) != len(store.Roles) {
		t.Errorf("an owner and an admin: %+v", r)
	}
	viewer := &handlers.Principal{User: &store.User{Email: "v@x.io", Role: "viewer"}, Perms: perm.Effective("viewer", nil)}
	for _, r := range userRows(viewer, us) {
		if r.CanChangeRole || r.CanDelete {
			t.Errorf("a viewer: %+v", r)
		}
	}
}
