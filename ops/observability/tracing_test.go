package observability

import (
	"testing"
	"time"

	"runr.dev/console/config"
	"runr.dev/console/ops/kit"
	"runr.dev/console/store"
)

// TestTracingReleasesFollowTheSettings: the backend's releases take the pinned chart
// versions and the images of the settings, and this release's without them.
func TestTracingReleasesFollowTheSettings(t *testing.T) {
	s := &Service{Kit: &kit.Kit{Cfg: &config.Config{TracingRetentionHours: 72}}}
	rels := s.TracingReleases(TracingBackend{RetentionHours: 72}, Storage{})
	if rels[0].Chart != ChartTempo || rels[1].Chart != ChartOtelCollector {
		t.Fatalf("without settings: %+v %+v", rels[0].Chart, rels[1].Chart)
	}
	s.Cfg.TracingTempoChartVersion, s.Cfg.TracingCollectorChartVersion = "3.3.0", "0.180.0"
	s.Cfg.TracingTempoImage, s.Cfg.TracingCollectorImage = "registry.example.com:5000/mirror/tempo:3.1.0", "registry.example.com:5000/mirror/otel:0.162.0"
	rels = s.TracingReleases(TracingBackend{RetentionHours: 120}, Storage{})
	tempo := rels[0].Values["tempo"].(map[string]any)
	img := rels[1].Values["image"].(map[string]any)
	if rels[0].Chart.Version != "3.3.0" || rels[1].Chart.Version != "0.180.0" || tempo["registry"] != "registry.example.com:5000" ||
		tempo["repository"] != "mirror/tempo" || tempo["tag"] != "3.1.0" || tempo["retention"] != "120h" ||
		img["repository"] != "registry.example.com:5000/mirror/otel" || img["tag"] != "0.162.0" {
		t.Fatalf("with settings: %+v %+v %v %v", rels[0].Chart, rels[1].Chart, tempo, img)
	}
}

// TestFirstRegionWithTracingDecides: the cluster's first region (by creation) with
// tracing on decides the backend's retention, its own or the console's.
func TestFirstRegionWithTracingDecides(t *testing.T) {
	s := &Service{Kit: &kit.Kit{Cfg: &config.Config{TracingRetentionHours: 72}}}
	now := time.Now()
	older := store.Region{Name: "older", CreatedAt: now.Add(-time.Hour)}
	newer := store.Region{Name: "newer", CreatedAt: now, TracingRetentionHours: 200}
	if b := s.Backend([]store.Region{newer, older}); b.DecidedBy != "older" || b.RetentionHours != 72 {
		t.Fatalf("the older region without its own retention: %+v", b)
	}
	older.TracingRetentionHours = 24
	if b := s.Backend([]store.Region{newer, older}); b.DecidedBy != "older" || b.RetentionHours != 24 {
		t.Fatalf("the older region with 24 h: %+v", b)
	}
	if b := s.Backend(nil); b.DecidedBy != "" || b.RetentionHours != 72 {
		t.Fatalf("no region with tracing on: %+v", b)
	}
}
