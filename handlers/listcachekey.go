package handlers

import (
	"sort"
	"strings"
)

// listCacheKey is the key of a list answer for a principal: the route and its
// parameters, the tenant, the role and the permissions. It is "" (not cached) for a tenant's user
// (whose lists show quota use) and for an anonymous request.
func listCacheKey(p *Principal, route string, params ...string) string {
	if p == nil || p.User == nil || p.User.Tenant() != "" {
		return ""
	}
	perms := make([]string, 0, len(p.Perms))
	for k, ok := range p.Perms {
		if ok {
			perms = append(perms, k)
		}
	}
	sort.Strings(perms)
	var b strings.Builder
	b.WriteString(route)
	for _, x := range params {
		b.WriteByte(0)
		b.WriteString(x)
	}
	b.WriteString("\x00tenant=")
	b.WriteString(p.User.Tenant())
	b.WriteString("\x00role=")
	b.WriteString(p.User.Role)
	b.WriteString("\x00perms=")
	b.WriteString(strings.Join(perms, ","))
	return b.String()
}
