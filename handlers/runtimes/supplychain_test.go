package runtimes

import (
	"slices"
	"testing"
)

func TestSplitPEM(t *testing.T) {
	a := "-----BEGIN PUBLIC KEY-----\nAAA\n-----END PUBLIC KEY-----"
	b := "-----BEGIN PUBLIC KEY-----\nBBB\n-----END PUBLIC KEY-----"
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"", nil},
		{a, []string{a}},
		{a + "\n\n" + b + "\n", []string{a, b}},
		{"junk", []string{"junk"}},
		{a + "\njunk", []string{a, "junk"}},
	} {
		if got := splitPEM(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("splitPEM(%q) = %q", tc.text, got)
		}
	}
}
