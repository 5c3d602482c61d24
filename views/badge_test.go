package views

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestBadgesSayStatesInWords: a badge shows a state as a person reads it and keeps the
// API's value in data-state; no badge text holds an underscore.
func TestBadgesSayStatesInWords(t *testing.T) {
	for value, want := range map[string]string{"not_installed": "not installed", "dns_check": "waiting for DNS",
		"rolled_back": "rolled back", "in_progress": "in progress", "some_new_state": "some new state", "ready": "ready"} {
		var b bytes.Buffer
		if err := Badge(value).Render(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		html := b.String()
		if !strings.Contains(html, `data-state="`+value+`"`) || !strings.Contains(html, ">"+want+"</span>") {
			t.Errorf("badge of %s: %s", value, html)
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
		var b bytes.Buffer
		d := RegionPageData{Region: RegionView{AgentStatus: "ready", AgentLastSeenAt: tc.seen}}
		if err := usage(d).Render(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		if html := b.String(); !strings.Contains(html, tc.want) || strings.Contains(html, "never") {
			t.Errorf("agent seen %v: %s", tc.seen, html)
		}
	}
}

// The remove link of a region draws its bin inline and is labelled; no emoji that a
// browser without the font shows as an empty box.
func TestRemoveRegionIconIsDrawnInline(t *testing.T) {
	var b bytes.Buffer
	if err := TrashIcon().Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	if html := b.String(); !strings.Contains(html, "<svg") || !strings.Contains(html, `aria-hidden="true"`) {
		t.Fatalf("the icon: %s", html)
	}
	src, err := os.ReadFile("regions.templ")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(src), "🗑") {
		t.Fatal("the regions list still draws its remove link with an emoji")
	}
}
