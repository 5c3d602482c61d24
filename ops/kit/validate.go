package kit

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ValidateHostPort checks an address given as host:port.
func ValidateHostPort(a string) string {
	host, port, err := net.SplitHostPort(a)
	if err != nil || host == "" {
		return "Give the address as host:port, e.g. redis.example.com:6379."
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "The port must be a number from 1 to 65535."
	}
	return ""
}

var domainRe = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$`)

// ValidateDomain checks a base domain ("" clears it).
func ValidateDomain(d string) string {
	if d == "" {
		return ""
	}
	if len(d) > 200 || !domainRe.MatchString(d) {
		return "Use a domain name such as functions.example.com (lowercase, without a scheme or a trailing dot)."
	}
	return ""
}

// CheckCertificate checks a PEM certificate and key for a function domain: they must
// pair, be valid now, and cover the domain. It returns the expiry.
func CheckCertificate(certPEM, keyPEM, domain string, now time.Time) (time.Time, map[string]string) {
	errs := map[string]string{}
	pair, err := tls.X509KeyPair([]byte(certPEM), []byte(keyPEM))
	if err != nil {
		if _, cerr := parseLeaf(certPEM); cerr != nil {
			errs["certificate"] = "Not a PEM certificate: " + cerr.Error()
		} else {
			errs["private_key"] = "The key does not match the certificate (or is not a PEM private key)."
		}
		return time.Time{}, errs
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		errs["certificate"] = "The certificate cannot be read: " + err.Error()
		return time.Time{}, errs
	}
	if now.After(leaf.NotAfter) {
		errs["certificate"] = fmt.Sprintf("The certificate expired on %s.", leaf.NotAfter.Format("2006-01-02"))
	} else if now.Before(leaf.NotBefore) {
		errs["certificate"] = fmt.Sprintf("The certificate is valid only from %s.", leaf.NotBefore.Format("2006-01-02"))
	}
	if domain == "" {
		errs["certificate"] = "The region has no function domain yet: set the platform's base domain first."
	} else if leaf.VerifyHostname("runr-tls-check."+domain) != nil {
		errs["certificate"] = fmt.Sprintf("The certificate's names (%s) do not cover *.%s.", strings.Join(leaf.DNSNames, ", "), domain)
	}
	if len(errs) > 0 {
		return leaf.NotAfter, errs
	}
	return leaf.NotAfter, nil
}

func parseLeaf(certPEM string) (*x509.Certificate, error) {
	b, _ := pem.Decode([]byte(certPEM))
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, errors.New("no CERTIFICATE block")
	}
	return x509.ParseCertificate(b.Bytes)
}

var regionNameRe = regexp.MustCompile(`^[a-z]([a-z0-9-]*[a-z0-9])?$`)

// ValidateRegionName checks the spec's rule: lowercase letters, digits and hyphens,
// starting with a letter and ending with a letter or digit, at most 63 characters.
func ValidateRegionName(name string) string {
	switch {
	case name == "":
		return "Give the region a name, such as eu-2."
	case len(name) > 63:
		return "Use at most 63 characters."
	case !regionNameRe.MatchString(name):
		return "Use lowercase letters, digits and hyphens; start with a letter and end with a letter or digit."
	}
	return ""
}
