package moves

import (
	"context"

	"runr.dev/console/engine"
	"runr.dev/console/ops/gpu"
	"runr.dev/console/ops/kit"
	"runr.dev/console/store"
)

// gpuHad records a region's GPU support before a move, for the move's detail: its mode
// and its model storage.
func gpuHad(g store.RegionGPU, had map[string]any) {
	if g.Status != store.ComponentReady {
		return
	}
	had["gpu"] = g.Mode
	if g.Storage.Status == store.ComponentReady {
		had["model_storage"] = map[string]any{"storage_class": g.Storage.StorageClass, "size_gi": g.Storage.SizeGi}
	}
}

// moveGPU is the step "gpu" (GPU support) of migrationSteps: GPU support with its mode,
// and the model storage volume (empty: the weights stay on the old cluster), on the new
// cluster. A failure is recorded and the move goes on.
func (s *Service) moveGPU(ctx context.Context, jc *engine.JobContext) error {
	r, err := s.JobRegion(ctx, jc)
	if err != nil {
		return err
	}
	mode, _ := r.MigrationDetail.V.Had["gpu"].(string)
	if mode == "" {
		if r.GPU.V.State() != store.ComponentNotInstalled {
			if err := s.Store.SetRegionGPU(ctx, r.ID, store.RegionGPU{Status: store.ComponentNotInstalled}); err != nil {
				return err
			}
		}
		jc.Note("The region had no GPU support")
		return engine.ErrSkip
	}
	s.tolerate(ctx, jc, r, "GPU support", func() error {
		return kit.RunInline(ctx, jc, s.GPU.InstallSteps(gpu.Params{Mode: mode}))
	})
	if ms, ok := r.MigrationDetail.V.Had["model_storage"].(map[string]any); ok {
		p := gpu.ModelStorageParams{}
		p.StorageClass, _ = ms["storage_class"].(string)
		if size, ok := ms["size_gi"].(float64); ok {
			p.SizeGi = int(size)
		}
		s.tolerate(ctx, jc, r, "model storage", func() error {
			return kit.RunInline(ctx, jc, s.GPU.ModelStorageSteps(p))
		})
		jc.Logf("The model weights stay on the old cluster's volume: copy them to %s/%s", r.Name, gpu.ModelStorageClaim)
	}
	jc.Note("GPU support (%s) on the new cluster", mode)
	return nil
}
