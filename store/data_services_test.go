package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"runr.dev/console/store"
	"runr.dev/console/store/storetest"
)

// TestBindings: a binding's credentials are sealed at rest and come back decrypted; a
// second binding of a project to a service is a conflict; in a tenant's walls only the
// bindings of the tenant's projects exist; removing the region keeps the bindings with
// the region cleared.
func TestBindings(t *testing.T) {
	st := storetest.New(t)
	ctx := context.Background()
	a, err := st.CreateTenant(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.CreateTenant(ctx, "globex")
	if err != nil {
		t.Fatal(err)
	}
	inA, inB := store.WithTenant(ctx, a.ID), store.WithTenant(ctx, b.ID)
	r := &store.Region{Name: "shared-eu", Kubeconfig: "kc"}
	if err := st.CreateRegion(ctx, r); err != nil {
		t.Fatal(err)
	}
	pa := &store.Project{Name: "shop", RegionID: &r.ID, Image: "img"}
	if err := st.CreateProject(inA, pa); err != nil {
		t.Fatal(err)
	}
	pb := &store.Project{Name: "blog", RegionID: &r.ID, Image: "img"}
	if err := st.CreateProject(inB, pb); err != nil {
		t.Fatal(err)
	}
	ba := &store.Binding{ProjectID: pa.ID, RegionID: &r.ID, Service: store.DataKV, Resource: "runr-shop",
		Credentials: map[string]string{"REDIS_PASSWORD": "PW-OF-SHOP-0123456789"}}
	if err := st.CreateBinding(inA, ba); err != nil {
		t.Fatal(err)
	}
	bb := &store.Binding{ProjectID: pb.ID, RegionID: &r.ID, Service: store.DataKV, Resource: "runr-blog",
		Credentials: map[string]string{"REDIS_PASSWORD": "PW-OF-BLOG-0123456789"}}
	if err := st.CreateBinding(inB, bb); err != nil {
		t.Fatal(err)
	}
	var raw []string
	if err := st.DB.SelectContext(ctx, &raw, `SELECT credentials FROM bindings`); err != nil {
		t.Fatal(err)
	}
	for _, c := range raw {
		if strings.Contains(c, "PW-OF-") {
			t.Fatal("credentials must be sealed at rest")
		}
	}
	got, err := st.ProjectBinding(inA, pa.ID, store.DataKV)
	if err != nil || got.Credentials["REDIS_PASSWORD"] != "PW-OF-SHOP-0123456789" || got.ProjectSlug != pa.Slug {
		t.Fatalf("A's binding: %v %+v", err, got)
	}
	if err := st.CreateBinding(inA, &store.Binding{ProjectID: pa.ID, RegionID: &r.ID, Service: store.DataKV}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a second binding to kv: %v", err)
	}

	// The walls: each tenant sees its own; B cannot bind A's project; the platform sees both.
	for _, tc := range []struct {
		ctx  context.Context
		want string
	}{{inA, "runr-shop"}, {inB, "runr-blog"}, {ctx, "runr-blog,runr-shop"}} {
		bs, err := st.RegionBindings(tc.ctx, r.ID, "")
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, x := range bs {
			names = append(names, x.Resource)
		}
		if strings.Join(names, ",") != tc.want {
			t.Fatalf("bindings seen: %v, want %s", names, tc.want)
		}
	}
	if _, err := st.ProjectBinding(inB, pa.ID, store.DataKV); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("B reads A's binding: %v", err)
	}
	if err := st.CreateBinding(inB, &store.Binding{ProjectID: pa.ID, RegionID: &r.ID, Service: store.DataObject}); err == nil {
		t.Fatal("B bound A's project")
	}
	if err := st.DeleteBinding(inB, ba.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("B deleted A's binding: %v", err)
	}

	// Removing the region (once its projects left it) keeps the bindings, without a region.
	if _, err := st.DB.ExecContext(ctx, `UPDATE projects SET region_id = NULL`); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteRegion(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	left, err := st.ProjectBindings(ctx, pa.ID)
	if err != nil || len(left) != 1 || left[0].Region() != "" {
		t.Fatalf("after the region's removal: %v %+v", err, left)
	}
}
