package views

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"
)

// render renders a component and parses it.
func render(t *testing.T, c templ.Component) *goquery.Document {
	t.Helper()
	var b bytes.Buffer
	if err := c.Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(&b)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestBadgesSayStatesInWords: a badge shows a state as a person reads it and keeps the
// API's value in data-state; no badge text holds an underscore.
func TestBadgesSayStatesInWords(t *testing.T) {
	for value, want := range map[string]string{"not_installed": "not installed", "dns_check": "waiting for DNS",
		"rolled_back": "rolled back", "in_progress": "in progress", "some_new_state": "some new state", "ready": "ready"} {
		badge := render(t, Badge(value)).Find(`[data-state="` + value + `"]`)
		if badge.Length() != 1 || strings.TrimSpace(badge.Text()) != want {
			t.Errorf("badge of %s: %d badges saying %q, want %q", value, badge.Length(), badge.Text(), want)
		}
	}
}

// An agent that never reported says so, rather than "ready · last seen never".
func TestAgentThatNeverReported(t *testing.T) {
	now := time.Now().Add(-2 * time.Minute)
	for _, tc := range []struct {
		seen *time.Time
		want string
	}{{nil, "no report yet"}, {&now, "last seen 2 min ago"}} {
		d := RegionPageData{Region: RegionView{AgentStatus: "ready", AgentLastSeenAt: tc.seen}}
		if text := render(t, usage(d)).Text(); !strings.Contains(text, tc.want) || strings.Contains(text, "never") {
			t.Errorf("agent seen %v: %s", tc.seen, text)
		}
	}
}

// The remove link of a region draws its bin inline and is labelled; no emoji that a
// browser without the font shows as an empty box.
func TestRemoveRegionIconIsDrawnInline(t *testing.T) {
	if icon := render(t, TrashIcon()).Find(`svg[aria-hidden="true"]`); icon.Length() != 1 {
		t.Fatalf("the icon is not one hidden inline SVG: %d", icon.Length())
	}
	src, err := os.ReadFile("regions.templ")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(src), "🗑") {
		t.Fatal("the regions list still draws its remove link with an emoji")
	}
}
