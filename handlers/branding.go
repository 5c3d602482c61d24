package handlers

import (
	"strconv"
	"sync"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/config"
	"runr.dev/console/views"
)

// Addresses of the logos the console serves itself (data: URIs and mounted files).
const (
	brandLogoPath    = "/api/branding/logo"
	brandFaviconPath = "/api/branding/favicon"
)

// pageBrandOnce builds the pages' brand once: the settings are read at the start.
type pageBrandOnce struct {
	once  sync.Once
	brand views.Brand
}

// brand is the white-label look every page shows.
func (h *Handlers) brand() views.Brand {
	h.pageBrand.once.Do(func() { h.pageBrand.brand = pageBrand(h.Cfg.Branding) })
	return h.pageBrand.brand
}

// pageBrand turns the branding settings into what a page needs (the zero Brand keeps the
// console's own wordmark and colours).
func pageBrand(b config.Branding) views.Brand {
	out := views.Brand{CompanyName: b.CompanyName, LoginTitle: b.LoginTitle, LoginText: b.LoginText}
	if b.ProductName != config.DefaultProductName {
		out.ProductName = b.ProductName
	}
	out.LogoURL = assetURL(b.Logo, brandLogoPath)
	out.FaviconURL = assetURL(b.Favicon, brandFaviconPath)
	if b.Palette != nil {
		out.Colors = map[string]string{}
		for i, s := range config.Shades {
			c := b.Palette[i]
			out.Colors["--brand-"+strconv.Itoa(s)] = strconv.Itoa(int(c[0])) + " " + strconv.Itoa(int(c[1])) + " " + strconv.Itoa(int(c[2]))
		}
	}
	return out
}

// assetURL is where the browser loads a logo: its own address, or the console's route.
func assetURL(a config.Asset, served string) string {
	switch {
	case a.URL != "":
		return a.URL
	case len(a.Data) > 0:
		return served
	}
	return ""
}

// APIBranding answers GET /api/branding: the brand in effect (public: the login page
// and other tools show it before anyone signs in).
func (h *Handlers) APIBranding(c *fiber.Ctx) error {
	b := h.Cfg.Branding
	pb := h.brand()
	palette := fiber.Map{}
	if b.Palette != nil {
		for i, s := range config.Shades {
			palette[strconv.Itoa(s)] = b.Palette[i].Hex()
		}
	}
	return c.JSON(fiber.Map{
		"product_name": b.ProductName,
		"company_name": b.CompanyName,
		"logo_url":     pb.LogoURL,
		"favicon_url":  pb.FaviconURL,
		"palette":      palette,
		"login":        fiber.Map{"title": pb.LoginTitle, "text": pb.LoginText},
	})
}

// BrandAsset answers GET /api/branding/logo and /api/branding/favicon with the image's
// bytes (404 when the brand has none, or names an address of its own).
func BrandAsset(a config.Asset) fiber.Handler {
	return func(c *fiber.Ctx) error { return serveAsset(c, a) }
}

// serveAsset sends an image the console holds; an SVG opened on its own runs no script.
func serveAsset(c *fiber.Ctx, a config.Asset) error {
	if len(a.Data) == 0 {
		return fiber.NewError(fiber.StatusNotFound, "this console's brand has no such image here")
	}
	c.Set(fiber.HeaderContentType, a.ContentType)
	c.Set(fiber.HeaderCacheControl, "public, max-age=3600")
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	c.Set(fiber.HeaderContentSecurityPolicy, "default-src 'none'; style-src 'unsafe-inline'; sandbox")
	return c.Send(a.Data)
}
