package views

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

// parseHTML reads rendered markup into a document to query.
func parseHTML(t *testing.T, html string) *goquery.Document {
	t.Helper()
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(html))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestJobEndRefreshKeepsEditedForms: the update of a job that ended while a region tab
// or a wizard step watched it holds no form of the tab (only the job's own parts, out of
// band) and fetches the tab or step again with data-keep-edited, by which static/app.js
// keeps the forms the user is filling in (a region status chosen and not sent yet stays
// chosen; see e2e TestRegionLiveRefreshKeepsEditedForm).
func TestJobEndRefreshKeepsEditedForms(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts JobPanelOptions
		get  string
	}{
		{"region tab", JobPanelOptions{JustFinished: true, Tab: "general"}, "/regions/r1/tabs/general"},
		{"wizard step", JobPanelOptions{JustFinished: true, WizardStep: 3}, "/regions/r1/wizard?step=3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := JobView{ID: "j1", Title: "Apply the settings of r", Status: "succeeded", Phase: PhaseDone, Succeeded: true, Done: true,
				RegionID: "r1", JobPanelOptions: tc.opts}
			var b bytes.Buffer
			if err := JobUpdate(Page{CSRF: "tok"}, d, JobChange{JobChanged: true}).Render(context.Background(), &b); err != nil {
				t.Fatal(err)
			}
			html := b.String()
			if strings.Contains(html, "region_status") || strings.Contains(html, "status-form") {
				t.Fatalf("the job's update must not carry the tab's forms:\n%s", html)
			}
			divs := parseHTML(t, html).Find(`div[hx-get][hx-trigger="load"]`)
			if get, _ := divs.Attr("hx-get"); divs.Length() != 1 || get != tc.get {
				t.Fatalf("want one refresh of %s, got %d (%q) in\n%s", tc.get, divs.Length(), get, html)
			}
			if _, ok := divs.Attr("data-keep-edited"); !ok {
				t.Fatalf("the refresh must keep the forms being edited (data-keep-edited):\n%s", html)
			}
		})
	}
}

// A log line names its step (steps can run side by side); the job's own lines name none.
func TestJobLogLineNamesItsStep(t *testing.T) {
	for _, tc := range []struct {
		line LogLine
		want string // "" for no step
	}{
		{LogLine{Text: "Installing Helm release observability/loki-stack", Step: "loki"}, "loki"},
		{LogLine{Text: "Job succeeded"}, ""},
	} {
		var b bytes.Buffer
		if err := JobLogLine(tc.line).Render(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		html := b.String()
		step := parseHTML(t, html).Find(`[data-testid="log-step"]`)
		switch {
		case tc.want == "" && step.Length() != 0, tc.want != "" && (step.Length() != 1 || step.Text() != tc.want):
			t.Errorf("%q: step %q (%d), want %q\n%s", tc.line.Text, step.Text(), step.Length(), tc.want, html)
		case !strings.Contains(html, tc.line.Text):
			t.Errorf("the line lost its text:\n%s", html)
		}
	}
}
