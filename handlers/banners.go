package handlers

import (
	"context"

	"runr.dev/console/ops/moves"
	"runr.dev/console/store"
	"runr.dev/console/views"
)

// MigrationBanners returns a banner for every region move under way.
func MigrationBanners(ctx context.Context, st *store.Store) ([]views.MigrationBanner, error) {
	rs, err := st.MovingRegions(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]views.MigrationBanner, 0, len(rs))
	for _, r := range rs {
		b := views.MigrationBanner{RegionID: r.ID, RegionName: r.Name, Status: string(r.Status)}
		if r.DNSCheckAt != nil {
			b.Deadline = r.DNSCheckAt.Add(moves.Deadline)
		}
		out = append(out, b)
	}
	return out, nil
}
