package apitest

import (
	"context"
	"strings"
	"testing"

	"runr.dev/console/config"
	"runr.dev/console/testcluster"
)

// TestRegionCreatedWithItsBillingType: POST /api/knative-regions takes billing_type (wizard
// step 1's choice) while the Billing module is on; a region created fixed refuses deploys
// until its Billing tab gives it an allocation; a type the module does not know is refused
// and creates nothing; with the module off the field is refused.
func TestRegionCreatedWithItsBillingType(t *testing.T) {
	cl := testcluster.New(t, testcluster.Options{})
	e := console(t, func(c *config.Config) { c.Billing = true })
	_, tok := e.User("owner")
	ctx := context.Background()

	var refused struct{ Fields map[string]string }
	body := map[string]any{"name": "billed", "kubeconfig": string(cl.Kubeconfig()), "redis_mode": "none", "billing_type": "monthly"}
	if st := e.JSON("POST", "/api/knative-regions", tok, body, &refused); st != 422 || refused.Fields["billing_type"] == "" {
		t.Fatalf("an unknown billing type: %d %+v", st, refused)
	}
	if _, err := e.Store.RegionByName(ctx, "billed"); err == nil {
		t.Fatal("a refused region was created")
	}

	r := newRegion(t, e, tok, cl, "billed", map[string]any{"billing_type": "fixed"})
	var rb struct {
		Data struct {
			Type string `json:"type"`
		} `json:"data"`
	}
	if st := e.JSON("GET", "/api/knative-regions/"+r.ID+"/billing", tok, nil, &rb); st != 200 || rb.Data.Type != "fixed" {
		t.Fatalf("the new region's billing: %d %+v", st, rb)
	}
	var p struct{ Data struct{ ID string } }
	if st := e.JSON("POST", "/api/projects", tok, map[string]any{"name": "web", "region_id": r.ID, "image": "ghcr.io/acme/web:1"}, &p); st != 201 {
		t.Fatalf("create project: %d", st)
	}
	status, out := e.Raw("POST", "/api/projects/"+p.Data.ID+"/deploy", tok, "")
	if status != 422 || !strings.Contains(out, "fixed resources") {
		t.Fatalf("a deploy to a fixed region without an allocation: %d %s", status, out)
	}

	off := console(t, nil)
	_, offTok := off.User("owner")
	body["billing_type"], body["name"] = "fixed", "unbilled"
	if st := off.JSON("POST", "/api/knative-regions", offTok, body, &refused); st != 422 || !strings.Contains(refused.Fields["billing_type"], "Billing module is off") {
		t.Fatalf("billing_type with the module off: %d %+v", st, refused)
	}
}
