package domains

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// Resolver answers the DNS questions of the status check: a configured server
// (RUNR_DNS_RESOLVER, host:port) or the system's resolver.
type Resolver struct {
	Server string
}

// Answer is what a name resolves to: the CNAME chain and the addresses at its end.
type Answer struct {
	CNAMEs []string
	Addrs  []string
	// NXDomain is set when the name does not exist.
	NXDomain bool
}

const maxCNAMEHops = 8

// Lookup resolves name to its A and AAAA addresses, following CNAMEs.
func (r *Resolver) Lookup(ctx context.Context, name string) (*Answer, error) {
	if r.Server == "" {
		return systemLookup(ctx, name)
	}
	ans := &Answer{}
	cur := dns.Fqdn(name)
	for hop := 0; hop < maxCNAMEHops; hop++ {
		next := ""
		found := false
		for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA} {
			m := new(dns.Msg)
			m.SetQuestion(cur, qt)
			m.RecursionDesired = true
			c := &dns.Client{Timeout: 3 * time.Second}
			in, _, err := c.ExchangeContext(ctx, m, r.Server)
			if err != nil {
				return nil, fmt.Errorf("DNS query for %s at %s: %w", cur, r.Server, err)
			}
			if in.Rcode == dns.RcodeNameError {
				ans.NXDomain = true
				return ans, nil
			}
			for _, rr := range in.Answer {
				switch v := rr.(type) {
				case *dns.CNAME:
					if strings.EqualFold(v.Hdr.Name, cur) || next != "" {
						next = v.Target
						ans.CNAMEs = appendUnique(ans.CNAMEs, strings.TrimSuffix(v.Target, "."))
					}
				case *dns.A:
					ans.Addrs = appendUnique(ans.Addrs, v.A.String())
					found = true
				case *dns.AAAA:
					ans.Addrs = appendUnique(ans.Addrs, v.AAAA.String())
					found = true
				}
			}
		}
		if found || next == "" {
			return ans, nil
		}
		cur = next
	}
	return ans, fmt.Errorf("DNS: more than %d CNAMEs from %s", maxCNAMEHops, name)
}

func appendUnique(l []string, v string) []string {
	for _, x := range l {
		if x == v {
			return l
		}
	}
	return append(l, v)
}

func systemLookup(ctx context.Context, name string) (*Answer, error) {
	ans := &Answer{}
	res := net.DefaultResolver
	if cname, err := res.LookupCNAME(ctx, name); err == nil && strings.TrimSuffix(cname, ".") != strings.TrimSuffix(name, ".") {
		ans.CNAMEs = append(ans.CNAMEs, strings.TrimSuffix(cname, "."))
	}
	addrs, err := res.LookupHost(ctx, name)
	var de *net.DNSError
	if errors.As(err, &de) && de.IsNotFound {
		ans.NXDomain = true
		return ans, nil
	}
	if err != nil {
		return nil, fmt.Errorf("DNS lookup of %s: %w", name, err)
	}
	ans.Addrs = addrs
	return ans, nil
}

// DNSCheck resolves dns-check.<domain> and says whether it reaches the external
// address: for an IP, the IP is among the answers (through any CNAME); for a load
// balancer's host name, the record is a CNAME to it or resolves to one of its addresses.
func (r *Resolver) DNSCheck(ctx context.Context, domain, external string) (bool, string, error) {
	name := "dns-check." + domain
	ans, err := r.Lookup(ctx, name)
	if err != nil {
		return false, "", err
	}
	if ans.NXDomain || len(ans.Addrs) == 0 && len(ans.CNAMEs) == 0 {
		return false, fmt.Sprintf("%s does not resolve: create the record *.%s → %s", name, domain, external), nil
	}
	if ip := net.ParseIP(external); ip != nil {
		for _, a := range ans.Addrs {
			if net.ParseIP(a).Equal(ip) {
				return true, fmt.Sprintf("%s resolves to %s", name, external), nil
			}
		}
		return false, fmt.Sprintf("%s resolves to %s, not to the external address %s: point *.%s at it", name, strings.Join(ans.Addrs, ", "), external, domain), nil
	}
	host := strings.TrimSuffix(strings.ToLower(external), ".")
	for _, c := range ans.CNAMEs {
		if strings.EqualFold(c, host) {
			return true, fmt.Sprintf("%s is a CNAME to %s", name, external), nil
		}
	}
	lb, err := r.Lookup(ctx, host)
	if err == nil {
		for _, a := range ans.Addrs {
			for _, b := range lb.Addrs {
				if a == b {
					return true, fmt.Sprintf("%s resolves to %s, an address of %s", name, a, external), nil
				}
			}
		}
	}
	return false, fmt.Sprintf("%s resolves to %s, not to the load balancer %s: make *.%s a CNAME to it", name, strings.Join(append(ans.CNAMEs, ans.Addrs...), ", "), external, domain), nil
}
