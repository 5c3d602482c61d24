package moves

import (
	"context"

	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops/data"
	"runr.dev/console/ops/kit"
	"runr.dev/console/problem"
	"runr.dev/console/store"
)

// DataStayedNote is what a moved region says of its data services' data: where it stayed
// and how to move it.
const DataStayedNote = "The data of the data services stayed on the old cluster: the services on the new cluster were created again, empty, " +
	"and every binding has its user, bucket or database there again with the same credentials. Move the content with the services' own tools: " +
	"a dump of each database (pg_dump from the old cluster's runr-postgres-rw, pg_restore into the new one's), a copy of each bucket " +
	"(rclone sync or aws s3 sync between the two object stores), and the keys of the managed Redis (redis-cli --rdb, or MIGRATE)."

// dataHad records the data services a region runs before a move (the managed ones and KV
// on its Redis, with their volumes) and its Skupper site.
func dataHad(r *store.Region, had map[string]any) {
	svcs := map[string]any{}
	for _, name := range store.DataServiceNames {
		if d := r.DataServices.V.Service(name); d.Ready() && !d.External() {
			svcs[name] = map[string]any{"storage_class": d.StorageClass, "size_gi": d.SizeGi}
		}
	}
	if len(svcs) > 0 {
		had["data_services"] = svcs
	}
	if r.Skupper.V.Status == store.ComponentReady {
		had["skupper_site"] = true
	}
}

// DataServicesMoved lists the data services a region's last move created again on its
// new cluster (their data stayed on the old one).
func DataServicesMoved(r *store.Region) []string {
	svcs, _ := r.MigrationDetail.V.Had["data_services"].(map[string]any)
	var out []string
	for _, name := range store.DataServiceNames {
		if _, ok := svcs[name]; ok {
			out = append(out, name)
		}
	}
	return out
}

// moveData is the step "data" (Data services and the Skupper site) of migrationSteps: the
// services the region ran, empty, each binding's part of them with its credentials, and
// the Skupper site. A failure is recorded and the move goes on.
func (s *Service) moveData(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	svcs, _ := r.MigrationDetail.V.Had["data_services"].(map[string]any)
	site, _ := r.MigrationDetail.V.Had["skupper_site"].(bool)
	for _, name := range store.DataServiceNames {
		if r.DataServices.V.Service(name).External() {
			jc.Note("The external object store %s and its bindings need nothing on the new cluster", r.DataServices.V.Object.Endpoint)
			continue
		}
		v, had := svcs[name].(map[string]any)
		if !had {
			if r.DataServices.V.Service(name).State() != store.ComponentNotInstalled {
				if err := s.Store.SetRegionDataService(ctx, r.ID, name, store.DataService{Status: store.ComponentNotInstalled}); err != nil {
					return err
				}
			}
			continue
		}
		s.moveDataService(ctx, jc, r, c, dataParamsOf(name, v))
	}
	if site {
		s.tolerate(ctx, jc, r, "Skupper site", func() error { return s.Data.SkupperSite(ctx, jc, r, c) })
	} else if r.Skupper.V.State() != store.ComponentNotInstalled {
		s.Record(s.Store.SetRegionSkupper(ctx, r.ID, store.SkupperSite{}))
	}
	if len(svcs) == 0 && !site {
		jc.Note("The region had no data services to create again and no Skupper site")
		return engine.ErrSkip
	}
	if len(svcs) > 0 {
		jc.Logf("%s", DataStayedNote)
	}
	jc.Note("Data services on the new cluster: %s (empty: the data stayed on the old cluster)", kit.OrNoneList(DataServicesMoved(r)))
	return nil
}

// dataParamsOf reads a data service's settings from a move's record.
func dataParamsOf(name string, v map[string]any) data.Params {
	p := data.Params{Service: name}
	p.StorageClass, _ = v["storage_class"].(string)
	if size, ok := v["size_gi"].(float64); ok {
		p.SizeGi = int(size)
	}
	if name != store.DataKV && p.SizeGi == 0 {
		p.SizeGi = data.DefaultSizeGi
	}
	return p
}

// moveDataService installs one data service on the new cluster, then each of its
// bindings' parts.
func (s *Service) moveDataService(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster, p data.Params) {
	ok := true
	s.tolerate(ctx, jc, r, p.Service, func() error {
		err := kit.RunInline(ctx, jc, s.Data.InstallSteps(p))
		if err != nil {
			ok = false
			s.Record(s.Store.SetRegionDataService(ctx, r.ID, p.Service, store.DataService{Status: store.ComponentError, Message: err.Error(),
				StorageClass: p.StorageClass, SizeGi: p.SizeGi}))
		}
		return err
	})
	if !ok {
		return
	}
	bs, err := s.Store.RegionBindings(ctx, r.ID, p.Service)
	if err != nil {
		jc.Warnf("The bindings of %s could not be read; the move goes on: %v", p.Service, err)
		return
	}
	for i := range bs {
		b := &bs[i]
		s.tolerate(ctx, jc, r, "binding of "+b.ProjectSlug+" to "+p.Service, func() error {
			if b.SecretError != "" {
				return &problem.Refused{Reason: b.SecretError}
			}
			err := s.Data.BindService(ctx, jc, b, r, c)
			if err != nil {
				s.Record(s.Store.SetBindingStatus(ctx, b.ID, store.ComponentError, err.Error()))
			}
			return err
		})
	}
}
