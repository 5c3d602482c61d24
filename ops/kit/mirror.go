package kit

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"runr.dev/console/engine"
	"runr.dev/console/imagemirror"
	"runr.dev/console/store"
)

// SettingImageMirror is the console's image mirror in the settings table.
const SettingImageMirror = "image_mirror"

// ConsoleImageMirror is the console's image mirror ("" when regions pull from the images'
// own registries).
func (s *Kit) ConsoleImageMirror(ctx context.Context) (string, error) {
	var m string
	err := s.Store.GetSetting(ctx, SettingImageMirror, &m)
	return m, err
}

// ImageMirror is the mirror a region's images come from: the region's own, else the
// console's.
func (s *Kit) ImageMirror(ctx context.Context, r *store.Region) (string, error) {
	if r != nil && r.Settings.V.ImageMirror != "" {
		return r.Settings.V.ImageMirror, nil
	}
	m, err := s.ConsoleImageMirror(ctx)
	if err != nil {
		return "", fmt.Errorf("image mirror: %w", err)
	}
	return m, nil
}

// mirrorKey carries the image mirror of the region a job acts on when the job itself has
// no region (reconcile's targets).
type mirrorKey struct{}

// WithMirror is ctx for steps that act on a region whose image mirror is m.
func WithMirror(ctx context.Context, m string) context.Context {
	return context.WithValue(ctx, mirrorKey{}, m)
}

// JobMirror is the image mirror of the region a job acts on: the target's (WithMirror),
// else the job's region's, else the console's.
func (s *Kit) JobMirror(ctx context.Context, jc *engine.JobContext) (string, error) {
	if m, ok := ctx.Value(mirrorKey{}).(string); ok {
		return m, nil
	}
	var r *store.Region
	if id := jc.Job.Region(); id != "" {
		var err error
		if r, err = s.Store.RegionByID(ctx, id); err != nil && !errors.Is(err, store.ErrNotFound) {
			return "", err
		}
	}
	return s.ImageMirror(ctx, r)
}

// JobImage is ref as a job's region pulls it (through its image mirror, if any).
func (s *Kit) JobImage(ctx context.Context, jc *engine.JobContext, ref string) (string, error) {
	m, err := s.JobMirror(ctx, jc)
	return imagemirror.Map(m, ref), err
}

// RegionImage is ref as a region pulls it (through its image mirror, if any).
func (s *Kit) RegionImage(ctx context.Context, r *store.Region, ref string) (string, error) {
	m, err := s.ImageMirror(ctx, r)
	return imagemirror.Map(m, ref), err
}

// MirrorPodSpec maps the images of a pod spec's containers through the job's mirror.
func (s *Kit) MirrorPodSpec(ctx context.Context, jc *engine.JobContext, ps *corev1.PodSpec) error {
	m, err := s.JobMirror(ctx, jc)
	if err != nil {
		return err
	}
	for _, list := range [][]corev1.Container{ps.InitContainers, ps.Containers} {
		for i := range list {
			list[i].Image = imagemirror.Map(m, list[i].Image)
		}
	}
	return nil
}
