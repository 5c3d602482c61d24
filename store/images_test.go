package store_test

import (
	"context"
	"slices"
	"testing"

	"runr.dev/console/store"
	"runr.dev/console/store/storetest"
)

// TestMoveProjectImages: the image and the deployed image of the region's projects under
// the old prefix move, a dry run lists them and moves nothing, and the projects of other
// regions, without a region (unless asked for) and images under other prefixes stay.
func TestMoveProjectImages(t *testing.T) {
	st := storetest.New(t)
	ctx := context.Background()
	var regions []*store.Region
	for _, name := range []string{"eu", "us"} {
		r := &store.Region{Name: name, Kubeconfig: "kc"}
		if err := st.CreateRegion(ctx, r); err != nil {
			t.Fatal(err)
		}
		regions = append(regions, r)
	}
	const old = "ghcr.io/runrsh/runr-"
	projects := map[string]*store.Project{
		"api":   {RegionID: &regions[0].ID, Image: old + "wrapper:0.4"},
		"blog":  {RegionID: &regions[0].ID, Image: "docker.io/library/nginx:1"},
		"other": {RegionID: &regions[1].ID, Image: old + "wrapper:0.4"},
		"draft": {Image: old + "wrapper:0.4"}, // no region yet
	}
	for name, p := range projects {
		p.Name = name
		if err := st.CreateProject(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	// blog was deployed from an image of the old prefix before it changed its own.
	if err := st.SetProjectState(ctx, projects["blog"].ID, store.ProjectRunning, "", old+"wrapper:0.3"); err != nil {
		t.Fatal(err)
	}
	ids := []string{regions[0].ID}
	dry, err := st.MoveProjectImages(ctx, ids, false, old, "ghcr.io/brf-tech/runr/", true)
	if err != nil || !slices.Equal(dry, []string{"api", "blog"}) {
		t.Fatalf("dry run: %v %v", dry, err)
	}
	if p, _ := st.ProjectByID(ctx, projects["api"].ID); p.Image != old+"wrapper:0.4" {
		t.Fatalf("the dry run moved %s", p.Image)
	}
	moved, err := st.MoveProjectImages(ctx, ids, false, old, "ghcr.io/brf-tech/runr/", false)
	if err != nil || !slices.Equal(moved, []string{"api", "blog"}) {
		t.Fatalf("move: %v %v", moved, err)
	}
	want := map[string][2]string{
		"api":   {"ghcr.io/brf-tech/runr/wrapper:0.4", ""},
		"blog":  {"docker.io/library/nginx:1", "ghcr.io/brf-tech/runr/wrapper:0.3"},
		"other": {old + "wrapper:0.4", ""},
		"draft": {old + "wrapper:0.4", ""},
	}
	for name, w := range want {
		p, err := st.ProjectByID(ctx, projects[name].ID)
		if err != nil || p.Image != w[0] || p.DeployedImage != w[1] {
			t.Errorf("%s: %v %q %q, want %q", name, err, p.Image, p.DeployedImage, w)
		}
	}
	if again, err := st.MoveProjectImages(ctx, ids, false, old, "ghcr.io/brf-tech/runr/", false); err != nil || len(again) != 0 {
		t.Fatalf("a second move found %v %v", again, err)
	}
	// The projects without a region move when asked for (with the reconcile's first target).
	if moved, err := st.MoveProjectImages(ctx, nil, true, old, "ghcr.io/brf-tech/runr/", false); err != nil || !slices.Equal(moved, []string{"draft"}) {
		t.Fatalf("unplaced: %v %v", moved, err)
	}
}
