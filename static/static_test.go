package static

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
)

// The console mounts the handler as GET /static/* (web/app.go): every file answers 200
// with its type, and an unknown one 404.
func TestHandler(t *testing.T) {
	app := fiber.New()
	app.Get("/static/*", Handler())
	for path, typ := range map[string]string{
		"/static/app.css":     "text/css",
		"/static/app.js":      "javascript",
		"/static/htmx.min.js": "javascript",
		"/static/ws.min.js":   "javascript",
	} {
		resp, err := app.Test(httptest.NewRequest("GET", path, nil))
		if err != nil {
			t.Fatal(err)
		}
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || !strings.Contains(ct, typ) {
			t.Errorf("%s: %d %q", path, resp.StatusCode, ct)
		}
	}
	resp, err := app.Test(httptest.NewRequest("GET", "/static/nope.css", nil))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 404 {
		t.Errorf("an unknown file: %d", resp.StatusCode)
	}
}
