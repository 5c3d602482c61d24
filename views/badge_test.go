package views

import (
	"bytes"
	"context"
	"strings"
	"testing"
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
