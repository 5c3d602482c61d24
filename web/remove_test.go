package web_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"runr.dev/console/store"
	"runr.dev/console/web/webtest"
)

// TestRemoveRegionAsksForItsName: a region goes only when its name is typed again; no
// name or another name answers 422 with the message beside the field, and the region
// stays (issue 34: one click removed a region).
func TestRemoveRegionAsksForItsName(t *testing.T) {
	e := webtest.New(t, nil)
	e.Run()
	ctx := context.Background()
	r := &store.Region{Name: "gone-eu", Kubeconfig: "kc"}
	if err := e.Store.CreateRegion(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Store.CreateUser(ctx, "remover@example.com", "", "owner", "password-of-remover"); err != nil {
		t.Fatal(err)
	}
	b := e.NewBrowser()
	b.Login("remover@example.com", "password-of-remover")
	if resp, body := b.Get("/regions/" + r.ID + "/remove"); resp.StatusCode != 200 || !strings.Contains(body, `id="f-confirm_name"`) {
		t.Fatalf("the removal page must ask for the name: %d", resp.StatusCode)
	}
	for _, typed := range []string{"", "gone", "GONE-EU", "other-eu"} {
		resp, body := b.PostForm("/regions/"+r.ID+"/delete", url.Values{"confirm_name": {typed}}, true)
		if resp.StatusCode != 422 || !strings.Contains(body, `data-testid="error-confirm_name"`) || !strings.Contains(body, "Type gone-eu exactly") {
			t.Fatalf("name %q: %d, want 422 with the message beside the field", typed, resp.StatusCode)
		}
		if _, err := e.Store.RegionByID(ctx, r.ID); err != nil {
			t.Fatalf("name %q: the region must stay: %v", typed, err)
		}
	}
	if resp, _ := b.PostForm("/regions/"+r.ID+"/delete", url.Values{"confirm_name": {" gone-eu "}}, true); resp.StatusCode != 303 {
		t.Fatalf("the right name: %d, want 303", resp.StatusCode)
	}
	if _, err := e.Store.RegionByID(ctx, r.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the region must be gone: %v", err)
	}
}
