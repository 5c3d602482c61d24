package config

import (
	"encoding/base64"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// DefaultProductName is the console's name without a brand of one's own.
const DefaultProductName = "runr regions"

// Branding is the white-label look (branding.* chart values, RUNR_BRANDING_*), applied at
// the start of the console: no rebuild.
type Branding struct {
	// ProductName replaces "runr regions" in titles, the header and the login page.
	ProductName string
	// CompanyName is shown in the page footer ("" shows none).
	CompanyName string
	// Logo is shown in the header and on the login page; Favicon in the browser's tab.
	Logo, Favicon Asset
	// Palette is the primary colour's scale, 50 to 950 (nil: the console's indigo).
	Palette *Palette
	// LoginTitle and LoginText are the login page's heading and the line under it.
	LoginTitle, LoginText string
}

// Asset is a logo: an address the browser loads itself, or bytes the console serves
// (from a data: URI, or from a file the chart mounts out of a ConfigMap or Secret).
type Asset struct {
	URL         string
	Data        []byte
	ContentType string
}

// Set says whether there is a logo at all.
func (a Asset) Set() bool { return a.URL != "" || len(a.Data) > 0 }

// Shades are the steps of a colour scale, as Tailwind names them.
var Shades = [...]int{50, 100, 200, 300, 400, 500, 600, 700, 800, 900, 950}

// RGB is one colour.
type RGB [3]uint8

// Hex is the colour as #rrggbb.
func (c RGB) Hex() string { return fmt.Sprintf("#%02x%02x%02x", c[0], c[1], c[2]) }

// Palette is a colour scale, one colour per entry of Shades.
type Palette [len(Shades)]RGB

// maxLogoBytes bounds a logo the console serves itself.
const maxLogoBytes = 1 << 20

// loadBranding reads RUNR_BRANDING_*; a value that is not understood stops the start
// with the setting's name.
func loadBranding() (Branding, error) {
	b := Branding{
		ProductName: env("RUNR_BRANDING_PRODUCT_NAME", DefaultProductName),
		CompanyName: strings.TrimSpace(os.Getenv("RUNR_BRANDING_COMPANY_NAME")),
		LoginTitle:  strings.TrimSpace(os.Getenv("RUNR_BRANDING_LOGIN_TITLE")),
		LoginText:   strings.TrimSpace(os.Getenv("RUNR_BRANDING_LOGIN_TEXT")),
	}
	var err error
	if b.Logo, err = parseAsset("RUNR_BRANDING_LOGO", os.Getenv("RUNR_BRANDING_LOGO")); err != nil {
		return b, err
	}
	if b.Favicon, err = parseAsset("RUNR_BRANDING_FAVICON", os.Getenv("RUNR_BRANDING_FAVICON")); err != nil {
		return b, err
	}
	base, scale := strings.TrimSpace(os.Getenv("RUNR_BRANDING_PRIMARY_COLOR")), strings.TrimSpace(os.Getenv("RUNR_BRANDING_PALETTE"))
	switch {
	case base != "" && scale != "":
		return b, fmt.Errorf("config: set RUNR_BRANDING_PRIMARY_COLOR or RUNR_BRANDING_PALETTE, not both")
	case base != "":
		c, err := parseColor(base)
		if err != nil {
			return b, fmt.Errorf("config: RUNR_BRANDING_PRIMARY_COLOR: %w", err)
		}
		p := PaletteFrom(c)
		b.Palette = &p
	case scale != "":
		p, err := parseScale(scale)
		if err != nil {
			return b, fmt.Errorf("config: RUNR_BRANDING_PALETTE: %w", err)
		}
		b.Palette = &p
	}
	return b, nil
}

// parseAsset reads a logo setting: an http(s) address, a data: URI or file:<path>.
func parseAsset(name, v string) (Asset, error) {
	v = strings.TrimSpace(v)
	switch {
	case v == "":
		return Asset{}, nil
	case strings.HasPrefix(v, "https://") || strings.HasPrefix(v, "http://"):
		if _, err := url.Parse(v); err != nil {
			return Asset{}, fmt.Errorf("config: %s: %w", name, err)
		}
		return Asset{URL: v}, nil
	case strings.HasPrefix(v, "data:"):
		a, err := parseDataURI(v)
		if err != nil {
			return Asset{}, fmt.Errorf("config: %s: %w", name, err)
		}
		return a, nil
	case strings.HasPrefix(v, "file:"):
		data, err := os.ReadFile(strings.TrimPrefix(v, "file:"))
		if err != nil {
			return Asset{}, fmt.Errorf("config: %s: %w", name, err)
		}
		if len(data) > maxLogoBytes {
			return Asset{}, fmt.Errorf("config: %s: the file has %d bytes, at most %d", name, len(data), maxLogoBytes)
		}
		if text := strings.TrimSpace(string(data)); strings.HasPrefix(text, "data:") {
			// A ConfigMap key holding a data: URI rather than the image.
			a, err := parseDataURI(text)
			if err != nil {
				return Asset{}, fmt.Errorf("config: %s: %w", name, err)
			}
			return a, nil
		}
		return Asset{Data: data, ContentType: sniffImage(data)}, nil
	}
	return Asset{}, fmt.Errorf("config: %s: give an https:// address, a data: URI or file:<path> (the chart mounts a ConfigMap or Secret key there)", name)
}

// parseDataURI decodes data:[<type>][;base64],<data>.
func parseDataURI(v string) (Asset, error) {
	meta, payload, ok := strings.Cut(strings.TrimPrefix(v, "data:"), ",")
	if !ok {
		return Asset{}, fmt.Errorf("a data: URI needs a comma before its data")
	}
	var data []byte
	var err error
	if strings.HasSuffix(meta, ";base64") {
		meta = strings.TrimSuffix(meta, ";base64")
		data, err = base64.StdEncoding.DecodeString(payload)
	} else {
		var s string
		s, err = url.PathUnescape(payload)
		data = []byte(s)
	}
	if err != nil {
		return Asset{}, fmt.Errorf("decode the data: URI: %w", err)
	}
	if len(data) == 0 || len(data) > maxLogoBytes {
		return Asset{}, fmt.Errorf("the image has %d bytes: give 1 to %d", len(data), maxLogoBytes)
	}
	ct, _, _ := strings.Cut(meta, ";")
	if !strings.HasPrefix(ct, "image/") {
		ct = sniffImage(data)
	}
	return Asset{Data: data, ContentType: ct}, nil
}

// sniffImage names an image's type (SVG, which the standard sniffer calls text, included).
func sniffImage(data []byte) string {
	ct := http.DetectContentType(data)
	if strings.HasPrefix(ct, "text/") && strings.Contains(string(data[:min(len(data), 512)]), "<svg") {
		return "image/svg+xml"
	}
	return ct
}

// parseColor reads #rrggbb (or rrggbb).
func parseColor(v string) (RGB, error) {
	h := strings.TrimPrefix(strings.TrimSpace(v), "#")
	if len(h) != 6 {
		return RGB{}, fmt.Errorf("%q is not a colour #rrggbb", v)
	}
	n, err := strconv.ParseUint(h, 16, 32)
	if err != nil {
		return RGB{}, fmt.Errorf("%q is not a colour #rrggbb", v)
	}
	return RGB{uint8(n >> 16), uint8(n >> 8), uint8(n)}, nil
}

// parseScale reads the 300-900 scale, "300=#rrggbb,400=#rrggbb,…,900=#rrggbb" (all seven);
// 50-200 are mixed from 300 toward white, 950 from 900 toward black.
func parseScale(v string) (Palette, error) {
	given := map[int]RGB{}
	for _, part := range list(v) {
		k, c, ok := strings.Cut(part, "=")
		shade, err := strconv.Atoi(strings.TrimSpace(k))
		if !ok || err != nil || shade < 300 || shade > 900 || shade%100 != 0 {
			return Palette{}, fmt.Errorf("%q: give 300=#rrggbb to 900=#rrggbb", part)
		}
		if given[shade], err = parseColor(c); err != nil {
			return Palette{}, err
		}
	}
	var p Palette
	for i, s := range Shades {
		switch c, ok := given[s]; {
		case ok:
			p[i] = c
		case s >= 300 && s <= 900:
			return Palette{}, fmt.Errorf("shade %d is missing: the scale needs 300, 400, 500, 600, 700, 800 and 900", s)
		}
	}
	white, black := RGB{255, 255, 255}, RGB{0, 0, 0}
	p[0], p[1], p[2] = mix(p[3], white, 0.85), mix(p[3], white, 0.65), mix(p[3], white, 0.35)
	p[10] = mix(p[9], black, 0.35)
	return p, nil
}

// PaletteFrom derives a scale from one base colour, which becomes its 600 (the shade of
// the console's buttons): lighter shades mix it with white, darker ones with black.
func PaletteFrom(base RGB) Palette {
	white, black := RGB{255, 255, 255}, RGB{0, 0, 0}
	toWhite := map[int]float64{50: 0.95, 100: 0.88, 200: 0.76, 300: 0.6, 400: 0.4, 500: 0.2}
	toBlack := map[int]float64{700: 0.15, 800: 0.3, 900: 0.45, 950: 0.65}
	var p Palette
	for i, s := range Shades {
		switch {
		case s == 600:
			p[i] = base
		case s < 600:
			p[i] = mix(base, white, toWhite[s])
		default:
			p[i] = mix(base, black, toBlack[s])
		}
	}
	return p
}

// mix moves a colour the fraction f of the way to another.
func mix(a, b RGB, f float64) RGB {
	var out RGB
	for i := range a {
		out[i] = uint8(float64(a[i]) + (float64(b[i])-float64(a[i]))*f + 0.5)
	}
	return out
}

// Warnings name what of the brand will be hard to read: white text on the buttons' shade
// (600) below WCAG AA's 4.5:1.
func (b Branding) Warnings() []string {
	if b.Palette == nil {
		return nil
	}
	c := b.Palette[6]
	if r := contrast(c, RGB{255, 255, 255}); r < 4.5 {
		return []string{fmt.Sprintf("the primary colour's shade 600 (%s) has a contrast of %.2f:1 with the buttons' white text, below the 4.5:1 of WCAG AA: choose a darker colour", c.Hex(), r)}
	}
	return nil
}

// contrast is the WCAG contrast ratio of two colours.
func contrast(a, b RGB) float64 {
	la, lb := luminance(a), luminance(b)
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05)
}

// luminance is a colour's relative luminance (WCAG 2).
func luminance(c RGB) float64 {
	var l [3]float64
	for i, v := range c {
		s := float64(v) / 255
		if s <= 0.04045 {
			l[i] = s / 12.92
		} else {
			l[i] = math.Pow((s+0.055)/1.055, 2.4)
		}
	}
	return 0.2126*l[0] + 0.7152*l[1] + 0.0722*l[2]
}
