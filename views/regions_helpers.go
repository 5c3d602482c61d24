package views

import "net/url"

// regionsURL is the regions list with a search, a health filter and the health sort.
func regionsURL(query, health string, byHealth bool) string {
	v := url.Values{}
	if query != "" {
		v.Set("q", query)
	}
	if health != "" {
		v.Set("health", health)
	}
	if byHealth {
		v.Set("sort", "health")
	}
	return "/regions?" + v.Encode()
}

// sortState is a sortable column's aria-sort.
func sortState(sorted bool) string {
	if sorted {
		return "descending"
	}
	return "none"
}

// demoCount is how many of the region's projects are demo projects (they go with the
// region when what RunR installed is removed first).
func demoCount(d RegionPageData) int {
	if d.Demos == nil {
		return 0
	}
	return len(d.Demos.Projects)
}
