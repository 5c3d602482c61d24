package ops

import (
	"context"
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

// applyProjectResidency sets the data location a project requires when one is sent, and
// refuses a region whose data location is another (creation and a change of region
// alike; every deploy checks it again).
func (s *Service) applyProjectResidency(ctx context.Context, p *store.Project, loc *string, errs map[string]string) {
	if loc != nil {
		p.DataLocation = strings.TrimSpace(*loc)
		if m := ValidateDataLocation(p.DataLocation); m != "" {
			errs["data_location"] = m
			return
		}
	}
	if p.RegionID == nil || errs["region_id"] != "" {
		return
	}
	r, err := s.Store.RegionByID(ctx, *p.RegionID)
	if err != nil {
		errs["region_id"] = "No such region."
		return
	}
	if why := residencyRefusal(r, p); why != "" {
		errs["region_id"] = "Data residency: " + why + "; choose a region in " + p.DataLocation + "."
	}
}

// saveProjectResidency stores the data location a project requires.
func (s *Service) saveProjectResidency(ctx context.Context, p *store.Project) error {
	if err := s.Store.SetProjectDataLocation(ctx, p.ID, p.DataLocation); err != nil {
		return fmt.Errorf("data location of project %s: %w", p.Slug, err)
	}
	return nil
}
