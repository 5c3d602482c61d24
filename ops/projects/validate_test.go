package projects

import (
	"strings"
	"testing"
)

func TestEnvNameOK(t *testing.T) {
	for name, ok := range map[string]bool{"PORT": true, "_x": true, "a1": true, "1a": false, "": false, "A-B": false,
		"A B": false, strings.Repeat("A", 129): false} {
		if envNameOK(name) != ok {
			t.Errorf("%q: want %v", name, ok)
		}
	}
}
