package handlers

import (
	"context"
	"time"

	"runr.dev/console/store"
	"runr.dev/console/views"
)

// MigrationDeadline is how long a move waits in dns_check before it completes by itself.
const MigrationDeadline = 48 * time.Hour

// MigrationBanners returns a banner for every region move under way.
func MigrationBanners(ctx context.Context, st *store.Store) ([]views.MigrationBanner, error) {
	rs, err := st.MovingRegions(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]views.MigrationBanner, 0, len(rs))
	for _, r := range rs {
		b := views.MigrationBanner{RegionID: r.ID, RegionName: r.Name, Status: r.Status}
		if r.DNSCheckAt != nil {
			b.Deadline = r.DNSCheckAt.Add(MigrationDeadline)
		}
		out = append(out, b)
	}
	return out, nil
}
