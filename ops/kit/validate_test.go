package kit

import (
	"strings"
	"testing"
)

func TestValidateRegionName(t *testing.T) {
	for _, tc := range []struct {
		name, want string
	}{
		{"eu-2", ""},
		{"a", ""},
		{"", "Give the region a name"},
		{strings.Repeat("a", 64), "at most 63"},
		{"2eu", "start with a letter"},
		{"eu-", "end with a letter or digit"},
		{"EU", "lowercase"},
		{"eu_2", "lowercase"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ValidateRegionName(tc.name); !contains(got, tc.want) {
				t.Fatalf("%q: %q, want %q", tc.name, got, tc.want)
			}
		})
	}
}

func TestValidateDomain(t *testing.T) {
	for _, tc := range []struct {
		domain string
		ok     bool
	}{
		{"", true},
		{"functions.example.com", true},
		{"example.com", true},
		{"Example.com", false},
		{"https://example.com", false},
		{"example.com.", false},
		{"localhost", false},
		{strings.Repeat("a.", 100) + "com", false},
	} {
		t.Run(tc.domain, func(t *testing.T) {
			if got := ValidateDomain(tc.domain); (got == "") != tc.ok {
				t.Fatalf("%q: %q", tc.domain, got)
			}
		})
	}
}

func TestValidateHostPort(t *testing.T) {
	for _, tc := range []struct {
		addr, want string
	}{
		{"redis.example.com:6379", ""},
		{"10.0.0.1:1", ""},
		{"[::1]:65535", ""},
		{"redis.example.com", "host:port"},
		{":6379", "host:port"},
		{"redis:0", "1 to 65535"},
		{"redis:65536", "1 to 65535"},
		{"redis:x", "1 to 65535"},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			if got := ValidateHostPort(tc.addr); !contains(got, tc.want) {
				t.Fatalf("%q: %q, want %q", tc.addr, got, tc.want)
			}
		})
	}
}

// contains reports whether got says want ("" wants nothing said).
func contains(got, want string) bool {
	if want == "" {
		return got == ""
	}
	return strings.Contains(got, want)
}
