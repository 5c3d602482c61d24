package perm_test

import (
	"testing"

	"runr.dev/console/perm"
)

func TestEffectivePermissions(t *testing.T) {
	cases := []struct {
		role   string
		scopes []string
		perm   string
		want   bool
	}{
		{"owner", nil, perm.BillingManage, true},
		{"admin", nil, perm.BillingManage, false},
		{"admin", nil, perm.RegionsManage, true},
		{"viewer", nil, perm.RegionsManage, false},
		{"viewer", nil, perm.RegionsView, true},
		{"admin", []string{"*"}, perm.RegionsManage, true},
		{"admin", []string{perm.RegionsView}, perm.RegionsManage, false},
		{"viewer", []string{perm.RegionsManage}, perm.RegionsManage, false}, // scopes never widen a role
		{"member", []string{}, perm.ProjectsView, false},
	}
	for _, c := range cases {
		t.Run(c.role+"/"+c.perm, func(t *testing.T) {
			if got := perm.Effective(c.role, c.scopes)[c.perm]; got != c.want {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}

// TestEveryPermissionIsDescribed: the token form says what each scope allows.
func TestEveryPermissionIsDescribed(t *testing.T) {
	for _, p := range perm.All {
		if perm.Describe(p) == "" {
			t.Errorf("permission %s has no description", p)
		}
	}
}
