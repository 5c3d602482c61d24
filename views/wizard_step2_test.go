package views

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestStep2OffersNone: the wizard offers what the CLI and the API take, a region without
// a registry or without Redis, and keeps that choice when the form comes back.
func TestStep2OffersNone(t *testing.T) {
	render := func(f Form) string {
		var b bytes.Buffer
		if err := Step2Form(Page{CSRF: "tok"}, Step2Data{Form: f, Action: "/regions/new/setup", Submit: "Save & Next"}).Render(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	html := render(Form{})
	for _, want := range []string{`name="registry_mode" value="none"`, `name="redis_mode" value="none"`} {
		if !strings.Contains(html, want) {
			t.Errorf("step 2 must offer %s", want)
		}
	}
	if !strings.Contains(html, `value="internal" checked`) || !strings.Contains(html, `value="managed" checked`) {
		t.Error("by default the internal registry and the managed Redis are chosen")
	}
	html = render(Form{Values: map[string]string{"registry_mode": "none", "redis_mode": "none"}})
	if !strings.Contains(html, `name="registry_mode" value="none" checked`) || !strings.Contains(html, `name="redis_mode" value="none" checked`) ||
		strings.Contains(html, `value="internal" checked`) || strings.Contains(html, `value="managed" checked`) {
		t.Error("a form that comes back keeps none chosen, and only none")
	}
}
