package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
)

// AddressRefusedError is a connection the console refused to open: the address a
// cluster's server resolved to is one it never talks to.
type AddressRefusedError struct {
	Addr   string
	Reason string
}

func (e *AddressRefusedError) Error() string {
	return fmt.Sprintf("address %s refused: %s", e.Addr, e.Reason)
}

// CheckAddress decides whether the console may connect to an IP address: link-local
// (169.254.0.0/16, fe80::/10, the clouds' metadata services), unspecified (0.0.0.0/8,
// ::), multicast and broadcast addresses never; loopback only when allowLoopback
// (RUNR_ALLOW_LOOPBACK_CLUSTERS). IPv4-mapped IPv6 addresses are judged as IPv4.
func CheckAddress(ip netip.Addr, allowLoopback bool) error {
	ip = ip.Unmap()
	refuse := func(reason string) error { return &AddressRefusedError{Addr: ip.String(), Reason: reason} }
	switch {
	case !ip.IsValid():
		return refuse("not an IP address")
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return refuse("link-local addresses (such as a cloud's metadata service) are never contacted")
	case ip.IsUnspecified(), ip.Is4() && ip.As4()[0] == 0:
		return refuse("unspecified addresses are never contacted")
	case ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		return refuse("multicast addresses are never contacted")
	case ip.Is4() && ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return refuse("the broadcast address is never contacted")
	case ip.Is6() && isIPv4Compatible(ip):
		return refuse("IPv4-compatible IPv6 addresses are never contacted")
	case ip.IsLoopback() && !allowLoopback:
		return refuse("loopback addresses are refused (RUNR_ALLOW_LOOPBACK_CLUSTERS=true allows them, for local test clusters)")
	}
	return nil
}

// isIPv4Compatible reports the deprecated ::a.b.c.d form (other than :: and ::1).
func isIPv4Compatible(ip netip.Addr) bool {
	b := ip.As16()
	for _, x := range b[:12] {
		if x != 0 {
			return false
		}
	}
	return !ip.IsLoopback() && !ip.IsUnspecified()
}

// PolicyDialer returns a dialer that checks every connection's resolved address just
// before it is opened (net.Dialer's Control hook): whatever form the URL spelled the
// host in (a name, a decimal or octal IPv4, an IPv4-mapped IPv6), and whichever
// connection it is (the first, a retry, a redirect), the address is judged after DNS.
func PolicyDialer(allowLoopback bool) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second,
		Control: func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return &AddressRefusedError{Addr: address, Reason: "not an IP address and port"}
			}
			return CheckAddress(ap.Addr(), allowLoopback)
		}}
	return d.DialContext
}

// secureREST makes a client configuration safe to point at a user's server: every
// connection goes through the address policy, and never through a proxy (neither the
// kubeconfig's, which ParseKubeconfig refuses, nor the environment's).
func secureREST(rc *rest.Config, allowLoopback bool) {
	rc.Dial = PolicyDialer(allowLoopback)
	rc.Proxy = func(*http.Request) (*url.URL, error) { return nil, nil }
}

// IsAddressRefused reports whether err is (or wraps) a refusal of the address policy.
func IsAddressRefused(err error) bool {
	var ae *AddressRefusedError
	return errors.As(err, &ae)
}

// Evidence describes a failure of a call to a cluster for the checklist without
// echoing what the server answered: an HTTP status and its reason, never a body.
func Evidence(err error) string {
	var ae *AddressRefusedError
	if errors.As(err, &ae) {
		return ae.Error()
	}
	if st, ok := err.(apierrors.APIStatus); ok || errors.As(err, &st) {
		code := st.Status().Code
		reason := string(st.Status().Reason)
		if reason == "" {
			reason = http.StatusText(int(code))
		}
		return fmt.Sprintf("the server answered HTTP %d (%s)", code, reason)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Sprintf("%s %s: %s", ue.Op, redactURL(ue.URL), Short(ue.Err))
	}
	return Short(err)
}

// redactURL keeps the scheme, host and path of a URL (no query, no user info).
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "the server"
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}

// DNSCause names a failed DNS check in a few words, without the resolver's address.
func DNSCause(err error) string {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return "no answer in time"
	}
	return "the resolver could not be asked"
}
