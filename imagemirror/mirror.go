// Package imagemirror maps the images the console puts into a cluster to a registry of the
// administrator's own that holds copies of them under their paths (an air-gapped region):
// ghcr.io/brf-tech/runr/agent:1.2.3 is pulled as <mirror>/ghcr.io/brf-tech/runr/agent:1.2.3,
// redis:7 as <mirror>/docker.io/library/redis:7. A mirror is "host[:port][/path]".
package imagemirror

import (
	"net"
	"regexp"
	"strconv"
	"strings"
)

// MaxLength is the longest mirror accepted.
const MaxLength = 200

var (
	hostnameRe  = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$`)
	componentRe = regexp.MustCompile(`^[a-z0-9]+([._-][a-z0-9]+)*$`)
)

// Normalize trims a mirror and its trailing slashes; "" means none (images are pulled
// from their own registries).
func Normalize(m string) string {
	return strings.TrimRight(strings.TrimSpace(m), "/")
}

// Validate says what is wrong with a normalized mirror ("" when nothing is, or when it is "").
func Validate(m string) string {
	const example = " Use host[:port][/path] without a scheme, e.g. registry.example.com:5000/mirror."
	if m == "" {
		return ""
	}
	if len(m) > MaxLength {
		return "Use at most " + strconv.Itoa(MaxLength) + " characters." + example
	}
	if strings.Contains(m, "://") {
		return "Leave out the scheme: containerd pulls over HTTPS (or as the nodes' hosts.toml says)." + example
	}
	host, path, _ := strings.Cut(m, "/")
	if m := validateHost(host); m != "" {
		return m + example
	}
	if path != "" {
		for _, c := range strings.Split(path, "/") {
			if !componentRe.MatchString(c) {
				return "The path " + strconv.Quote(path) + " may hold only lowercase letters, digits and . _ - between them." + example
			}
		}
	}
	return ""
}

// validateHost checks the registry host of a mirror: a DNS name or an IP address, with an
// optional port.
func validateHost(host string) string {
	name, port := host, ""
	if h, p, err := net.SplitHostPort(host); err == nil {
		name, port = h, p
	} else if strings.HasPrefix(host, "[") {
		return "The address " + strconv.Quote(host) + " is not an IPv6 address with a port."
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "The port " + strconv.Quote(port) + " is not 1 to 65535."
		}
	}
	if net.ParseIP(name) != nil {
		return ""
	}
	if name == "" || len(name) > 253 || !hostnameRe.MatchString(name) {
		return "The registry " + strconv.Quote(name) + " is not a host name (lowercase) or an IP address."
	}
	return ""
}

// Map returns the reference under which the mirror holds ref: the mirror, then ref's
// registry (docker.io for Docker Hub's short names), then its path, tag and digest. A
// reference already under the mirror, and every reference when mirror is "", stay.
func Map(mirror, ref string) string {
	if mirror == "" || ref == "" || strings.HasPrefix(ref, mirror+"/") {
		return ref
	}
	return mirror + "/" + Qualified(ref)
}

// Qualified is ref with its registry spelled out as Docker's rules read it: docker.io
// (library/ for a single name) when the first part is no host.
func Qualified(ref string) string {
	first, rest, ok := strings.Cut(ref, "/")
	if !ok {
		return "docker.io/library/" + ref
	}
	if !strings.ContainsAny(first, ".:") && first != "localhost" {
		return "docker.io/" + ref
	}
	switch first {
	case "index.docker.io", "registry-1.docker.io":
		first = "docker.io"
	}
	if first == "docker.io" && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	return first + "/" + rest
}
