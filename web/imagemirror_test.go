package web_test

import (
	"context"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"runr.dev/console/store"
	"runr.dev/console/web/webtest"
)

// The image mirror, console-wide (GET/PATCH /api/settings, the Platform page) and per
// region (PUT /api/knative-regions/{id}/settings, the General tab): a bad mirror is a 422
// on its field that changes nothing — not even the other field of the same request.
func TestImageMirrorSettings(t *testing.T) {
	e := webtest.New(t, nil)
	e.Run()
	ctx := context.Background()
	_, tok := e.User("owner")
	if st := e.JSON("PATCH", "/api/settings", tok, map[string]string{"base_domain": "fn.example.com"}, nil); st != 200 {
		t.Fatalf("base domain: %d", st)
	}

	type answer struct {
		Data   map[string]any
		Fields map[string]string
	}
	for _, bad := range []string{"https://registry.example.com", "registry.example.com:70000", "Registry.example.com", "registry.example.com/UP"} {
		var ans answer
		st := e.JSON("PATCH", "/api/settings", tok, map[string]string{"base_domain": "other.example.com", "image_mirror": bad}, &ans)
		if st != 422 || ans.Fields["image_mirror"] == "" {
			t.Fatalf("PATCH image_mirror %q: %d %+v, want 422 on image_mirror", bad, st, ans)
		}
		if d, _ := e.Store.BaseDomain(ctx); d != "fn.example.com" {
			t.Fatalf("a refused PATCH changed the base domain to %q", d)
		}
	}
	var ans answer
	if st := e.JSON("PATCH", "/api/settings", tok, map[string]string{"image_mirror": " registry.corp.example:5000/mirror/ "}, &ans); st != 200 {
		t.Fatalf("PATCH a good mirror: %d %+v", st, ans)
	}
	if ans.Data["image_mirror"] != "registry.corp.example:5000/mirror" || ans.Data["base_domain"] != "fn.example.com" {
		t.Fatalf("settings after the PATCH: %+v", ans.Data)
	}

	// A region's own mirror.
	r := &store.Region{Name: "mirror-eu", Kubeconfig: "kc"}
	if err := e.Store.CreateRegion(ctx, r); err != nil {
		t.Fatal(err)
	}
	before, _ := e.Store.RegionByID(ctx, r.ID)
	var rans answer
	if st := e.JSON("PUT", "/api/knative-regions/"+r.ID+"/settings", tok, map[string]any{"request_timeout": 300, "image_mirror": "ftp://x"}, &rans); st != 422 || rans.Fields["image_mirror"] == "" {
		t.Fatalf("region PUT a bad mirror: %d %+v", st, rans)
	}
	if after, _ := e.Store.RegionByID(ctx, r.ID); !reflect.DeepEqual(after.Settings.V, before.Settings.V) {
		t.Fatalf("a refused PUT changed the settings: %+v → %+v", before.Settings.V, after.Settings.V)
	}
	if st := e.JSON("PUT", "/api/knative-regions/"+r.ID+"/settings", tok, map[string]any{"image_mirror": "10.0.0.5:5000"}, nil); st != 200 {
		t.Fatalf("region PUT a mirror: %d", st)
	}
	if after, _ := e.Store.RegionByID(ctx, r.ID); after.Settings.V.ImageMirror != "10.0.0.5:5000" {
		t.Fatalf("region's mirror: %q", after.Settings.V.ImageMirror)
	}

	// The pages: the message beside the field, the value kept, nothing saved.
	b := e.NewBrowser()
	if _, err := e.Store.CreateUser(ctx, "mirror-owner@example.com", "", "owner", "password-of-mirror"); err != nil {
		t.Fatal(err)
	}
	b.Login("mirror-owner@example.com", "password-of-mirror")
	b.Get("/platform")
	resp, body := b.PostForm("/platform", url.Values{"image_mirror": {"http://mirror"}}, true)
	if resp.StatusCode != 422 || !strings.Contains(body, "Leave out the scheme") || !strings.Contains(body, `value="http://mirror"`) {
		t.Fatalf("platform form with a bad mirror: %d\n%s", resp.StatusCode, body)
	}
	if m := settingOf(t, e, "image_mirror"); m != `"registry.corp.example:5000/mirror"` {
		t.Fatalf("a refused form changed the mirror to %s", m)
	}
	if resp, _ := b.PostForm("/platform", url.Values{"image_mirror": {""}}, true); resp.StatusCode != 303 && resp.StatusCode != 302 {
		t.Fatalf("clearing the mirror: %d", resp.StatusCode)
	}
	if m := settingOf(t, e, "image_mirror"); m != `""` {
		t.Fatalf("mirror after clearing: %s", m)
	}
	if d, _ := e.Store.BaseDomain(ctx); d != "fn.example.com" {
		t.Fatalf("the image mirror's form changed the base domain to %q", d)
	}
	resp, body = b.PostForm("/regions/"+r.ID+"/settings", url.Values{"request_timeout": {"120"}, "agent_ws_url": {""}, "ingress_trusted_ips": {""}, "image_mirror": {"bad mirror"}}, true)
	if resp.StatusCode != 422 || !strings.Contains(body, "is not a host name") {
		t.Fatalf("General tab with a bad mirror: %d\n%s", resp.StatusCode, body)
	}
	_, body = b.Get("/regions/" + r.ID + "?tab=general") // a region found down opens on Migration
	if !strings.Contains(body, `value="10.0.0.5:5000"`) || !strings.Contains(body, "Empty takes no mirror") {
		t.Fatalf("General tab does not show the region's mirror and the console's:\n%s", body)
	}
}

// settingOf is a platform setting as stored, quoted.
func settingOf(t *testing.T, e *webtest.Env, key string) string {
	t.Helper()
	var v string
	if err := e.Store.GetSetting(context.Background(), key, &v); err != nil {
		t.Fatal(err)
	}
	return `"` + v + `"`
}
