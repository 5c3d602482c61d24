// Package static serves the console's built CSS, htmx and small scripts, embedded in the binary.
package static

import (
	"embed"
	"net/http"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/filesystem"
)

//go:embed app.css app.js htmx.min.js ws.min.js
var files embed.FS

// Handler serves the embedded files under /static.
func Handler() fiber.Handler {
	return filesystem.New(filesystem.Config{Root: http.FS(files), PathPrefix: "", MaxAge: 3600})
}
