package handlers_test

import (
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/config"
	"runr.dev/console/handlers"
)

// TestClientIP: X-Forwarded-For is believed from a trusted proxy only, and from the right:
// the last hop that is no trusted proxy is the client (what a client writes in front of
// it is not). app.Test's connections come from 0.0.0.0.
func TestClientIP(t *testing.T) {
	for _, tc := range []struct {
		trusted []string
		xff     string
		want    string
	}{
		{nil, "", "0.0.0.0"},
		{nil, "203.0.113.9", "0.0.0.0"},
		{[]string{"0.0.0.0/32"}, "", "0.0.0.0"},
		{[]string{"0.0.0.0/32"}, "203.0.113.9", "203.0.113.9"},
		{[]string{"0.0.0.0/32", "10.0.0.0/8"}, "198.51.100.1, 203.0.113.9, 10.1.2.3", "203.0.113.9"},
		{[]string{"0.0.0.0/32", "10.0.0.0/8"}, "10.1.2.4, 10.1.2.3", "10.1.2.4"},
		{[]string{"0.0.0.0/32"}, "not-an-ip, 203.0.113.9", "203.0.113.9"},
		{[]string{"0.0.0.0/32"}, "2001:db8::1", "2001:db8::1"},
	} {
		cfg := &config.Config{}
		for _, p := range tc.trusted {
			cfg.TrustedProxies = append(cfg.TrustedProxies, netip.MustParsePrefix(p))
		}
		app := fiber.New()
		var got string
		app.Get("/", func(c *fiber.Ctx) error { got = handlers.ClientIP(c, cfg); return nil })
		req := httptest.NewRequest("GET", "/", nil)
		if tc.xff != "" {
			req.Header.Set("X-Forwarded-For", tc.xff)
		}
		if _, err := app.Test(req); err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("trusted %v, X-Forwarded-For %q: %s, want %s", tc.trusted, tc.xff, got, tc.want)
		}
	}
}
