package static

import (
	"io/fs"
	"testing"
)

// The console mounts FS at GET /static/* (web/app.go), where the server may look a file
// up with or without the prefix: both find it, and an unknown file is not found.
func TestFS(t *testing.T) {
	for _, name := range []string{"app.css", "app.js", "htmx.min.js", "ws.min.js"} {
		for _, path := range []string{name, "static/" + name} {
			if b, err := fs.ReadFile(FS(), path); err != nil || len(b) == 0 {
				t.Errorf("%s: %v (%d bytes)", path, err, len(b))
			}
		}
	}
	if _, err := fs.ReadFile(FS(), "static/nope.css"); err == nil {
		t.Error("an unknown file must not be found")
	}
}
