package views

import (
	"strings"
	"testing"
)

// TestFoldText: a short message shows whole; raw output (long, or of several lines) shows
// its first sentence or its first line cut at a word, the rest folded.
func TestFoldText(t *testing.T) {
	helm := `install runr-zot: helm upgrade runr-registry/runr-zot: UPGRADE FAILED: cannot patch "runr-zot" with kind StatefulSet: ` +
		`StatefulSet.apps "runr-zot" is invalid: spec: Forbidden: updates to statefulset spec for fields other than 'replicas', ` +
		`'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden`
	for _, c := range []struct {
		in, head string
		folded   bool
	}{
		{"Gave up waiting for PVC x to bind after 4 s. Choose another StorageClass.", "Gave up waiting for PVC x to bind after 4 s. Choose another StorageClass.", false},
		{"The chart failed. " + helm, "The chart failed.", true},
		{"first line\nsecond line", "first line", true},
	} {
		head, folded := foldText(c.in)
		if head != c.head || folded != c.folded {
			t.Errorf("foldText(%.40q) = %q, %v; want %q, %v", c.in, head, folded, c.head, c.folded)
		}
	}
	head, folded := foldText(helm)
	if !folded || !strings.HasSuffix(head, " …") || len([]rune(head)) > foldLimit+2 || !strings.HasPrefix(helm, strings.TrimSuffix(head, " …")) {
		t.Errorf("a long line is cut at a word: %q", head)
	}
}
