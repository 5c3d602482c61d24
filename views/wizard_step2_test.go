package views

import (
	"testing"

	"github.com/PuerkitoBio/goquery"
)

// TestStep2OffersNone: the wizard offers what the CLI and the API take, a region without
// a registry or without Redis, and keeps that choice when the form comes back.
func TestStep2OffersNone(t *testing.T) {
	step2 := func(f Form) *goquery.Document {
		return render(t, Step2Form(Page{CSRF: "tok"}, Step2Data{Form: f, Action: "/regions/new/setup", Submit: "Save & Next"}))
	}
	checked := func(doc *goquery.Document, name string) []string {
		var vals []string
		doc.Find(`input[type=radio][name="` + name + `"]:checked`).Each(func(_ int, s *goquery.Selection) {
			vals = append(vals, s.AttrOr("value", ""))
		})
		return vals
	}
	doc := step2(Form{})
	for _, name := range []string{"registry_mode", "redis_mode"} {
		if doc.Find(`input[type=radio][name="`+name+`"][value="none"]`).Length() != 1 {
			t.Errorf("step 2 must offer %s none", name)
		}
	}
	if reg, redis := checked(doc, "registry_mode"), checked(doc, "redis_mode"); len(reg) != 1 || reg[0] != "internal" || len(redis) != 1 || redis[0] != "managed" {
		t.Errorf("by default the internal registry and the managed Redis are chosen, not %v %v", reg, redis)
	}
	doc = step2(Form{Values: map[string]string{"registry_mode": "none", "redis_mode": "none"}})
	if reg, redis := checked(doc, "registry_mode"), checked(doc, "redis_mode"); len(reg) != 1 || reg[0] != "none" || len(redis) != 1 || redis[0] != "none" {
		t.Errorf("a form that comes back keeps none chosen, and only none: %v %v", reg, redis)
	}
}
