// Package static serves the console's built CSS, htmx and small scripts, embedded in the binary.
package static

import (
	"embed"
	"io/fs"
	"strings"
)

//go:embed app.css app.js htmx.min.js ws.min.js
var files embed.FS

// FS is the embedded files, found with or without the /static prefix (a server mounted
// at /static/* may look the whole path up).
func FS() fs.FS { return stripStatic{files} }

// stripStatic opens static/NAME as NAME.
type stripStatic struct{ fs.FS }

func (s stripStatic) Open(name string) (fs.File, error) {
	if rest, ok := strings.CutPrefix(name, "static/"); ok {
		name = rest
	}
	return s.FS.Open(name)
}
