package projects

import (
	"context"
	"fmt"
	"strings"

	"runr.dev/console/ops/kit"
	"runr.dev/console/store"
)

// applyProjectResidency sets the data location a project requires when one is sent, and
// refuses a region whose data location is another (creation and a change of region
// alike; every deploy checks it again).
func (s *Service) applyProjectResidency(ctx context.Context, p *store.Project, loc *string, errs map[string]string) {
	if loc != nil {
		p.DataLocation = strings.TrimSpace(*loc)
		if m := kit.ValidateDataLocation(p.DataLocation); m != "" {
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
	if why := kit.ResidencyRefusal(r, p); why != "" {
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
