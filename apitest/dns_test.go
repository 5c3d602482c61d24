package apitest

import (
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"
)

// zone is a real DNS server on loopback whose A records a test changes.
type zone struct {
	mu   sync.Mutex
	a    map[string]string
	Addr string
}

func newZone(t *testing.T) *zone {
	z := &zone{a: map[string]string{}}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := dns.NewServeMux()
	mux.HandleFunc(".", func(w dns.ResponseWriter, req *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(req)
		q := req.Question[0]
		z.mu.Lock()
		ip, ok := z.a[strings.ToLower(strings.TrimSuffix(q.Name, "."))]
		z.mu.Unlock()
		switch {
		case !ok:
			m.Rcode = dns.RcodeNameError
		case q.Qtype == dns.TypeA:
			rr, _ := dns.NewRR(q.Name + " 30 IN A " + ip)
			m.Answer = append(m.Answer, rr)
		}
		_ = w.WriteMsg(m)
	})
	srv := &dns.Server{PacketConn: pc, Handler: mux}
	go srv.ActivateAndServe()
	t.Cleanup(func() { srv.Shutdown() })
	z.Addr = pc.LocalAddr().String()
	return z
}

// Set points a name at an address.
func (z *zone) Set(name, ip string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.a[name] = ip
}
