package kit

import (
	"fmt"
	"regexp"
	"strings"

	"runr.dev/console/store"
)

// MaxDataLocation is the longest data location (regions.md).
const MaxDataLocation = 64

var dataLocationRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9 _.-]*$`)

// ValidateDataLocation checks a data location ("" is none): up to 64 characters,
// letters, digits, spaces, _, . and -, starting with a letter or digit.
func ValidateDataLocation(l string) string {
	if l == "" {
		return ""
	}
	if len(l) > MaxDataLocation || !dataLocationRe.MatchString(l) {
		return "Use up to 64 characters: letters, digits, spaces, _, . and -, starting with a letter or digit (e.g. eu-central)."
	}
	return ""
}

// ResidencyAllows is the one data residency rule, for a project's region (creation,
// a change of region, every deploy) and a region's move alike: data that must stay in
// required may go to a place at only when it is that place (compared without case and
// surrounding spaces). Nothing required allows every place.
func ResidencyAllows(required, at string) bool {
	required = strings.TrimSpace(required)
	return required == "" || strings.EqualFold(required, strings.TrimSpace(at))
}

// ResidencyRefusal says why a project may not run on a region ("" when it may): it
// requires a data location the region is not in.
func ResidencyRefusal(r *store.Region, p *store.Project) string {
	if ResidencyAllows(p.DataLocation, r.DataLocation) {
		return ""
	}
	at, who := r.DataLocation, p.Slug
	if at == "" {
		at = "no data location"
	}
	if who == "" {
		who = p.Name
	}
	return fmt.Sprintf("project %s requires data location %s, and region %s has %s", who, p.DataLocation, r.Name, at)
}
