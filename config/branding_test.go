package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBrandingSettings(t *testing.T) {
	// Without settings: the console's own name, no logo, the built-in palette.
	c, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if b := c.Branding; b.ProductName != DefaultProductName || b.Logo.Set() || b.Palette != nil {
		t.Fatalf("defaults: %+v", b)
	}

	svg := `<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8" height="8"/></svg>`
	file := filepath.Join(t.TempDir(), "logo")
	if err := os.WriteFile(file, []byte(svg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("RUNR_BRANDING_PRODUCT_NAME", "Acme Cloud")
	t.Setenv("RUNR_BRANDING_COMPANY_NAME", "Acme Inc.")
	t.Setenv("RUNR_BRANDING_LOGO", "data:image/png;base64,iVBORw0KGgo=")
	t.Setenv("RUNR_BRANDING_FAVICON", "file:"+file)
	t.Setenv("RUNR_BRANDING_PRIMARY_COLOR", "#0f766e")
	c, err = FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	b := c.Branding
	if b.ProductName != "Acme Cloud" || b.CompanyName != "Acme Inc." {
		t.Fatalf("names: %+v", b)
	}
	if b.Logo.ContentType != "image/png" || string(b.Logo.Data) != "\x89PNG\r\n\x1a\n" {
		t.Fatalf("logo from the data: URI: %q %q", b.Logo.ContentType, b.Logo.Data)
	}
	if b.Favicon.ContentType != "image/svg+xml" || string(b.Favicon.Data) != svg {
		t.Fatalf("favicon from the file: %q", b.Favicon.ContentType)
	}
	// One base colour: it is the 600, lighter shades above it, darker below.
	p := *b.Palette
	if p[6].Hex() != "#0f766e" || p[0] == p[6] || p[10] == p[6] || p[0][0] < p[3][0] || p[10][1] > p[8][1] {
		t.Fatalf("palette from one colour: %v", p)
	}

	// The full 300-900 scale is taken as given.
	t.Setenv("RUNR_BRANDING_PRIMARY_COLOR", "")
	t.Setenv("RUNR_BRANDING_PALETTE", "300=#fca5a5,400=#f87171,500=#ef4444,600=#dc2626,700=#b91c1c,800=#991b1b,900=#7f1d1d")
	t.Setenv("RUNR_BRANDING_LOGO", "https://cdn.example.test/acme.svg")
	if c, err = FromEnv(); err != nil {
		t.Fatal(err)
	}
	if p := *c.Branding.Palette; p[3].Hex() != "#fca5a5" || p[9].Hex() != "#7f1d1d" || p[0] == (RGB{}) || p[10] == (RGB{}) {
		t.Fatalf("scale: %v", p)
	}
	if c.Branding.Logo.URL != "https://cdn.example.test/acme.svg" || c.Branding.Logo.Data != nil {
		t.Fatalf("logo by address: %+v", c.Branding.Logo)
	}

	// What is not understood stops the start, naming the setting.
	for k, v := range map[string]string{
		"RUNR_BRANDING_PALETTE": "300=#fca5a5,900=#7f1d1d",
		"RUNR_BRANDING_LOGO":    "acme.svg",
		"RUNR_BRANDING_FAVICON": "data:image/png;base64,%%%",
	} {
		t.Run(k, func(t *testing.T) {
			t.Setenv(k, v)
			if _, err := FromEnv(); err == nil || !strings.Contains(err.Error(), k) {
				t.Fatalf("%s=%s: %v", k, v, err)
			}
		})
	}
	t.Setenv("RUNR_BRANDING_PRIMARY_COLOR", "#123456")
	if _, err := FromEnv(); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Fatalf("a colour and a scale: %v", err)
	}
}

// TestBrandingContrastWarning: a shade 600 that white button text cannot be read on is
// named at the start; a dark enough one and the console's own colours are not.
func TestBrandingContrastWarning(t *testing.T) {
	teal500, teal700 := PaletteFrom(RGB{0x14, 0xb8, 0xa6}), PaletteFrom(RGB{0x0f, 0x76, 0x6e})
	if w := (Branding{Palette: &teal500}).Warnings(); len(w) != 1 || !strings.Contains(w[0], "#14b8a6") || !strings.Contains(w[0], "2.49:1") {
		t.Fatalf("a light base colour: %q", w)
	}
	if w := (Branding{Palette: &teal700}).Warnings(); len(w) != 0 {
		t.Fatalf("a dark base colour: %q", w)
	}
	if w := (Branding{}).Warnings(); len(w) != 0 {
		t.Fatalf("no palette: %q", w)
	}
}
