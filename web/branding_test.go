package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"runr.dev/console/config"
	"runr.dev/console/web/webtest"
)

// brandingAnswer is GET /api/branding.
type brandingAnswer struct {
	ProductName string            `json:"product_name"`
	CompanyName string            `json:"company_name"`
	LogoURL     string            `json:"logo_url"`
	FaviconURL  string            `json:"favicon_url"`
	Palette     map[string]string `json:"palette"`
	Login       struct {
		Title string `json:"title"`
		Text  string `json:"text"`
	} `json:"login"`
}

func parsePage(t *testing.T, body string) *goquery.Document {
	t.Helper()
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestBrandingDefault: without branding settings the console is runr regions, with
// its own colours and no logo to serve.
func TestBrandingDefault(t *testing.T) {
	e := webtest.New(t, nil)
	var got brandingAnswer
	if code := e.JSON(http.MethodGet, "/api/branding", "", nil, &got); code != http.StatusOK {
		t.Fatalf("GET /api/branding: %d", code)
	}
	if got.ProductName != "runr regions" || got.LogoURL != "" || got.FaviconURL != "" || len(got.Palette) != 0 || got.Login.Title != "" {
		t.Fatalf("the default brand: %+v", got)
	}
	if code, _ := e.Raw(http.MethodGet, "/api/branding/logo", "", ""); code != http.StatusNotFound {
		t.Fatalf("a logo without a brand: %d", code)
	}
	_, body := e.NewBrowser().Get("/login")
	doc := parsePage(t, body)
	if title := strings.TrimSpace(doc.Find("[data-testid=login-title]").Text()); title != "Sign in to runr regions" {
		t.Fatalf("the login heading: %q", title)
	}
	if doc.Find("[data-testid=brand-colors], [data-testid=login-logo], [data-testid=brand-footer]").Length() != 0 {
		t.Fatal("the default login page shows a brand's colours, logo or footer")
	}
}

// TestBrandingApplied: a brand's names, logo, palette and login texts reach the login
// page, every signed-in page and GET /api/branding, which serves the logo's bytes.
func TestBrandingApplied(t *testing.T) {
	svg := `<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8" height="8" fill="#0d9488"/></svg>`
	palette := config.PaletteFrom(config.RGB{0x0d, 0x94, 0x88})
	e := webtest.New(t, func(c *config.Config) {
		c.Branding = config.Branding{ProductName: "Acme Cloud", CompanyName: "Acme Inc.",
			Logo:       config.Asset{Data: []byte(svg), ContentType: "image/svg+xml"},
			Favicon:    config.Asset{URL: "https://cdn.acme.test/favicon.ico"},
			Palette:    &palette,
			LoginTitle: "Welcome to Acme Cloud", LoginText: "Use your Acme account."}
	})
	var got brandingAnswer
	if code := e.JSON(http.MethodGet, "/api/branding", "", nil, &got); code != http.StatusOK {
		t.Fatalf("GET /api/branding: %d", code)
	}
	if got.ProductName != "Acme Cloud" || got.CompanyName != "Acme Inc." || got.LogoURL != "/api/branding/logo" ||
		got.FaviconURL != "https://cdn.acme.test/favicon.ico" || got.Palette["600"] != "#0d9488" || len(got.Palette) != 11 ||
		got.Login.Title != "Welcome to Acme Cloud" || got.Login.Text != "Use your Acme account." {
		raw, _ := json.Marshal(got)
		t.Fatalf("the brand: %s", raw)
	}
	resp := e.Do(webtest.Req(http.MethodGet, "/api/branding/logo", "", ""))
	logo, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/svg+xml" || string(logo) != svg ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "sandbox") {
		t.Fatalf("the logo: %d %v %q", resp.StatusCode, resp.Header, logo)
	}
	// The favicon is an address of its own: the console serves none.
	if code, _ := e.Raw(http.MethodGet, "/api/branding/favicon", "", ""); code != http.StatusNotFound {
		t.Fatalf("an external favicon served by the console: %d", code)
	}

	_, body := e.NewBrowser().Get("/login")
	doc := parsePage(t, body)
	if title := strings.TrimSpace(doc.Find("[data-testid=login-title]").Text()); title != "Welcome to Acme Cloud" {
		t.Fatalf("the login heading: %q", title)
	}
	if text := doc.Find("[data-testid=login-text]").Text(); text != "Use your Acme account." {
		t.Fatalf("the login text: %q", text)
	}
	if src, _ := doc.Find("[data-testid=login-logo]").Attr("src"); src != "/api/branding/logo" {
		t.Fatalf("the login logo: %q", src)
	}
	if css := doc.Find("style[data-testid=brand-colors]").Text(); !strings.Contains(css, "--brand-600:13 148 136;") {
		t.Fatalf("the brand's colours: %q", css)
	}
	if href, _ := doc.Find("link[rel=icon]").Attr("href"); href != "https://cdn.acme.test/favicon.ico" {
		t.Fatalf("the favicon: %q", href)
	}

	_, body = e.SignedIn("viewer").Get("/regions")
	doc = parsePage(t, body)
	if title := doc.Find("title").Text(); !strings.HasSuffix(title, " · Acme Cloud") {
		t.Fatalf("the page title: %q", title)
	}
	if name := doc.Find("header [data-testid=brand-name]").Text(); name != "Acme Cloud" {
		t.Fatalf("the header's name: %q", name)
	}
	if doc.Find("header [data-testid=brand-logo]").Length() != 1 || strings.Contains(doc.Find("header").Text(), "runr regions") {
		t.Fatal("the header keeps runr's wordmark or lacks the logo")
	}
	if footer := doc.Find("[data-testid=brand-footer]").Text(); !strings.Contains(footer, "Acme Inc.") {
		t.Fatalf("the footer: %q", footer)
	}
}
