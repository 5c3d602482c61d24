package handlers

import (
	"testing"

	"runr.dev/console/perm"
	"runr.dev/console/store"
)

func TestListCacheKey(t *testing.T) {
	tenant := "t1"
	platform := &Principal{User: &store.User{ID: "u1"}, Perms: map[string]bool{perm.RegionsView: true}}
	manager := &Principal{User: &store.User{ID: "u2"}, Perms: map[string]bool{perm.RegionsView: true, perm.RegionsManage: true}}
	tenantUser := &Principal{User: &store.User{ID: "u3", TenantID: &tenant}, Perms: map[string]bool{perm.RegionsView: true}}
	if k := listCacheKey(nil, "r"); k != "" {
		t.Fatalf("anonymous key %q, want none", k)
	}
	if k := listCacheKey(tenantUser, "r"); k != "" {
		t.Fatalf("a tenant user's key %q, want none (never cached)", k)
	}
	if listCacheKey(platform, "r", "q", "1") == listCacheKey(manager, "r", "q", "1") {
		t.Fatal("two permission classes share a key")
	}
	if listCacheKey(platform, "r", "q", "1") == listCacheKey(platform, "r", "q", "2") || listCacheKey(platform, "r", "q1", "") == listCacheKey(platform, "r", "q", "1") {
		t.Fatal("two pages share a key")
	}
	other := &Principal{User: &store.User{ID: "u4"}, Perms: map[string]bool{perm.RegionsView: true}}
	if listCacheKey(platform, "r", "q") != listCacheKey(other, "r", "q") {
		t.Fatal("two users of one permission class do not share a key")
	}
}
