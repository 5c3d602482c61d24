package config

import (
	"fmt"
	"os"
	"strings"
)

// ImageMove is an earlier prefix of the console's own images and the prefix that replaces it.
type ImageMove struct{ From, To string }

// DefaultImageMoves are the image namespaces of earlier releases, tried in this order (the
// first that matches wins): up to 0.5.0 everything was under ghcr.io/runrsh, 0.5.1 moved
// it directly under ghcr.io/brf-tech, and this release publishes under ImageRepository
// without the component images' runr- prefix. Another package directly under
// ghcr.io/brf-tech is not RunR's and stays; a mirror's path never starts with these.
var DefaultImageMoves = []ImageMove{
	{"ghcr.io/runrsh/runr-", ImageRepository + "/"},
	{"ghcr.io/runrsh/reqs/", ImageRepository + "/reqs/"},
	{"ghcr.io/runrsh/", "ghcr.io/brf-tech/"},
	{"ghcr.io/brf-tech/runr-", ImageRepository + "/"},
	{"ghcr.io/brf-tech/reqs/", ImageRepository + "/reqs/"},
}

// MoveImage is ref under the prefix its first matching move gives, and whether it moved.
func MoveImage(moves []ImageMove, ref string) (string, bool) {
	for _, m := range moves {
		if rest, ok := strings.CutPrefix(ref, m.From); ok {
			return m.To + rest, true
		}
	}
	return ref, false
}

// loadImageMoves reads RUNR_IMAGE_MOVES, "from=to" pairs separated by commas, in the order
// they are tried (default DefaultImageMoves; "none" moves nothing).
func loadImageMoves() ([]ImageMove, error) {
	v := strings.TrimSpace(os.Getenv("RUNR_IMAGE_MOVES"))
	switch v {
	case "":
		return DefaultImageMoves, nil
	case "none":
		return nil, nil
	}
	var out []ImageMove
	for _, pair := range list(v) {
		from, to, ok := strings.Cut(pair, "=")
		from, to = strings.TrimSpace(from), strings.TrimSpace(to)
		if !ok || from == "" || to == "" || from == to {
			return nil, fmt.Errorf("config: RUNR_IMAGE_MOVES: %q is not a pair of two different prefixes, from=to", pair)
		}
		out = append(out, ImageMove{From: from, To: to})
	}
	return out, nil
}
