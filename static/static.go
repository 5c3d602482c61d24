// Package static serves the console's built CSS, htmx and small scripts, embedded in the binary.
package static

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/filesystem"
)

//go:embed app.css app.js htmx.min.js ws.min.js
var files embed.FS

// Handler serves the embedded files under /static. Fiber's filesystem middleware strips
// only a plain route prefix: mounted as GET /static/* it looks the whole path up, so
// the files are found with or without the /static prefix.
func Handler() fiber.Handler {
	return filesystem.New(filesystem.Config{Root: http.FS(stripStatic{files}), PathPrefix: "", MaxAge: 3600})
}

// stripStatic opens static/NAME as NAME.
type stripStatic struct{ fs.FS }

func (s stripStatic) Open(name string) (fs.File, error) {
	if rest, ok := strings.CutPrefix(name, "static/"); ok {
		name = rest
	}
	return s.FS.Open(name)
}
