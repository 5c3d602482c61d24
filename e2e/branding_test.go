package e2e

import (
	"encoding/base64"
	"testing"
)

// White-label: the test brand of the upgrade notes (Acme Cloud, a logo as a data: URI, a
// primary 300–900 scale) colours the login page and the signed-in pages in Chromium.
func TestBranding(t *testing.T) {
	svg := `<svg xmlns="http://www.w3.org/2000/svg" width="40" height="16"><rect width="40" height="16" fill="#0f766e"/></svg>`
	c := startConsole(t,
		"RUNR_BRANDING_PRODUCT_NAME=Acme Cloud",
		"RUNR_BRANDING_COMPANY_NAME=Acme Inc.",
		"RUNR_BRANDING_LOGO=data:image/svg+xml;base64,"+base64.StdEncoding.EncodeToString([]byte(svg)),
		"RUNR_BRANDING_PALETTE=300=#5eead4,400=#2dd4bf,500=#14b8a6,600=#0f766e,700=#115e59,800=#134e4a,900=#042f2e",
		"RUNR_BRANDING_LOGIN_TITLE=Welcome to Acme Cloud",
	)
	b := newBrowser(t, c.URL)
	b.open("/login", "[data-testid=login-form]")
	if got := b.text("[data-testid=login-title]"); got != "Welcome to Acme Cloud" {
		t.Fatalf("the login heading: %q", got)
	}
	// The logo is loaded from the console (its data: URI served as an image) and drawn.
	b.waitJS("the login logo to load", `(() => { const i = document.querySelector("[data-testid=login-logo]"); return i && i.complete && i.naturalWidth === 40 })()`, shortWait)
	var colour string
	b.eval(`getComputedStyle(document.querySelector("[data-testid=login-form] button[type=submit]")).backgroundColor`, &colour)
	if colour != "rgb(15, 118, 110)" {
		t.Fatalf("the primary button's colour: %q, want the brand's 600 rgb(15, 118, 110)", colour)
	}
	b.shot("branded login")

	b.login(ownerEmail, ownerPassword)
	b.open("/regions", "[data-testid=brand-name]")
	var title string
	b.eval(`document.title`, &title)
	if got := b.text("[data-testid=brand-name]"); got != "Acme Cloud" || title != "Knative Regions · Acme Cloud" {
		t.Fatalf("the header's name %q, the title %q", got, title)
	}
	if got := b.text("[data-testid=brand-footer]"); got != "Acme Cloud · Acme Inc." {
		t.Fatalf("the footer: %q", got)
	}
	b.checkFeel("branded regions")
}
