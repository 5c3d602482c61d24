package domains

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// dnsServer runs a real DNS server on loopback with fixed records.
func dnsServer(t *testing.T, records map[string][]string) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := dns.NewServeMux()
	mux.HandleFunc(".", func(w dns.ResponseWriter, req *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(req)
		q := req.Question[0]
		rrs, ok := records[strings.ToLower(q.Name)]
		if !ok {
			m.Rcode = dns.RcodeNameError
		}
		for _, s := range rrs {
			rr, err := dns.NewRR(s)
			if err != nil {
				t.Errorf("bad record %q: %v", s, err)
				continue
			}
			if rr.Header().Rrtype == q.Qtype || rr.Header().Rrtype == dns.TypeCNAME {
				m.Answer = append(m.Answer, rr)
			}
		}
		_ = w.WriteMsg(m)
	})
	srv := &dns.Server{PacketConn: pc, Handler: mux}
	go srv.ActivateAndServe()
	t.Cleanup(func() { srv.Shutdown() })
	return pc.LocalAddr().String()
}

func TestDNSCheck(t *testing.T) {
	addr := dnsServer(t, map[string][]string{
		"dns-check.a.test.": {"dns-check.a.test. 60 IN A 127.0.0.5"},
		"dns-check.b.test.": {"dns-check.b.test. 60 IN CNAME edge.b.test."},
		"edge.b.test.":      {"edge.b.test. 60 IN CNAME lb.b.test."},
		"lb.b.test.":        {"lb.b.test. 60 IN A 127.0.0.5", "lb.b.test. 60 IN AAAA ::1"},
		"dns-check.c.test.": {"dns-check.c.test. 60 IN A 127.0.0.9"},
		"dns-check.e.test.": {"dns-check.e.test. 60 IN CNAME lb-123.elb.test."},
		"lb-123.elb.test.":  {"lb-123.elb.test. 60 IN A 127.0.0.7"},
		"dns-check.f.test.": {"dns-check.f.test. 60 IN A 127.0.0.7"},
	})
	r := &Resolver{Server: addr}
	cases := []struct {
		name, domain, external string
		ok                     bool
		reason                 string
	}{
		{"A record", "a.test", "127.0.0.5", true, "resolves to 127.0.0.5"},
		{"CNAME chain", "b.test", "127.0.0.5", true, "resolves to 127.0.0.5"},
		{"AAAA through the chain", "b.test", "::1", true, "resolves to ::1"},
		{"points elsewhere", "c.test", "127.0.0.5", false, "not to the external address 127.0.0.5"},
		{"NXDOMAIN", "d.test", "127.0.0.5", false, "does not resolve"},
		{"CNAME to the load balancer's host name", "e.test", "lb-123.elb.test", true, "CNAME to lb-123.elb.test"},
		{"an address of the load balancer's host name", "f.test", "lb-123.elb.test", true, "an address of lb-123.elb.test"},
		{"host name elsewhere", "c.test", "lb-123.elb.test", false, "not to the load balancer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ok, reason, err := r.DNSCheck(context.Background(), tc.domain, tc.external)
			if err != nil {
				t.Fatal(err)
			}
			if ok != tc.ok || !strings.Contains(reason, tc.reason) {
				t.Fatalf("got %v %q, want %v with %q", ok, reason, tc.ok, tc.reason)
			}
		})
	}
}
