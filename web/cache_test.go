package web_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"runr.dev/console/store"
	"runr.dev/console/web/webtest"
)

var csrfField = regexp.MustCompile(`name="_csrf" value="([^"]*)"`)

// The kept region lists and region pages: each viewer gets its own CSRF token in a kept
// page, and a change written to the database straight (as another console or a job
// runner would) is shown once its notification is heard.
func TestKeptPagesFollowTheDatabase(t *testing.T) {
	e := webtest.New(t, nil)
	e.Run()
	ctx := context.Background()
	r := &store.Region{Name: "kept-eu", Kubeconfig: "kc"}
	if err := e.Store.CreateRegion(ctx, r); err != nil {
		t.Fatal(err)
	}
	var browsers []*webtest.Browser
	for _, email := range []string{"kept-a@example.com", "kept-b@example.com"} {
		if _, err := e.Store.CreateUser(ctx, email, "", "owner", "password-of-kept"); err != nil {
			t.Fatal(err)
		}
		b := e.NewBrowser()
		b.Login(email, "password-of-kept")
		browsers = append(browsers, b)
	}
	for round := range 3 {
		for i, b := range browsers {
			resp, body := b.Get("/regions/" + r.ID)
			if resp.StatusCode != 200 {
				t.Fatalf("browser %d: status %d", i, resp.StatusCode)
			}
			fields := csrfField.FindAllStringSubmatch(body, -1)
			if len(fields) == 0 {
				t.Fatalf("browser %d: no CSRF field on the region page", i)
			}
			for _, f := range fields {
				if f[1] != b.CSRF || f[1] == "" {
					t.Fatalf("round %d, browser %d: form token %q, the session's is %q", round, i, f[1], b.CSRF)
				}
			}
			if strings.Contains(body, "csrf-placeholder-") {
				t.Fatal("the placeholder reached the page")
			}
		}
	}
	// A change written straight to the database.
	st := store.RegionSettings{RequestTimeout: 123}
	if err := e.Store.SetRegionSettings(ctx, r.ID, st); err != nil {
		t.Fatal(err)
	}
	if err := e.Store.SetSetting(ctx, "base_domain", "fn.kept.test"); err != nil {
		t.Fatal(err)
	}
	_, token := e.User("owner")
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, list := e.Raw("GET", "/api/knative-regions", token, "")
		// The General tab named: the status sweep may find the region's cluster (it has
		// none) down at any time, and a region found down opens on its Migration tab.
		_, page := browsers[0].Get("/regions/" + r.ID + "?tab=general")
		htmlResp, html := browsers[1].Get("/regions")
		listOK := strings.Contains(list, `"request_timeout":123`) && strings.Contains(list, "fn.kept.test")
		pageOK, htmlOK := strings.Contains(page, "fn.kept.test"), strings.Contains(html, "kept-eu")
		if listOK && pageOK && htmlOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the change is not shown 5 s after it was written (API list %v, region page %v, regions page %v, status %d):\n%s\n%s", listOK, pageOK, htmlOK, htmlResp.StatusCode, list, page)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
