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
// (169.254.0.0/16, fe80::/10, most clouds' metadata services), the other metadata
// addresses (metadataAddrs), unspecified (0.0.0.0/8, ::), multicast and broadcast
// addresses never; loopback only when allowLoopback (RUNR_ALLOW_LOOPBACK_CLUSTERS).
// IPv4-mapped IPv6 addresses are judged as IPv4, and so are NAT64 and 6to4 addresses
// as the IPv4 address they carry.
func CheckAddress(ip netip.Addr, allowLoopback bool) error {
	ip = ip.Unmap()
	refuse := func(reason string) error { return &AddressRefusedError{Addr: ip.String(), Reason: reason} }
	// An IPv4 address carried in IPv6 (NAT64, 6to4) reaches that IPv4 address: it is
	// judged as that address.
	if v4, ok := embeddedIPv4(ip); ok {
		if err := CheckAddress(v4, allowLoopback); err != nil {
			return refuse(fmt.Sprintf("it carries %s: %s", v4, err.(*AddressRefusedError).Reason))
		}
	}
	switch {
	case !ip.IsValid():
		return refuse("not an IP address")
	case metadataAddrs[ip]:
		return refuse("a cloud's metadata service is never contacted")
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

// metadataAddrs are the clouds' metadata services outside the link-local ranges: AWS's
// over IPv6 and Alibaba Cloud's.
var metadataAddrs = map[netip.Addr]bool{
	netip.MustParseAddr("fd00:ec2::254"):   true,
	netip.MustParseAddr("100.100.100.200"): true,
}

var (
	nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")   // RFC 6052's well-known prefix
	nat64Local  = netip.MustParsePrefix("64:ff9b:1::/48") // RFC 8215's local-use prefix
	sixToFour   = netip.MustParsePrefix("2002::/16")      // RFC 3056
)

// embeddedIPv4 is the IPv4 address an IPv6 address carries: the last 32 bits of a NAT64
// address (the well-known or a local-use /96), or bits 16-47 of a 6to4 address.
func embeddedIPv4(ip netip.Addr) (netip.Addr, bool) {
	if !ip.Is6() || ip.Is4In6() {
		return netip.Addr{}, false
	}
	b := ip.As16()
	switch {
	case nat64Prefix.Contains(ip), nat64Local.Contains(ip):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	}
	return netip.Addr{}, false
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
