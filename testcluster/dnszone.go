package testcluster

import (
	"fmt"
	"net"
	"strings"
	"sync"

	"github.com/miekg/dns"
)

// Zone is a real DNS server on a loopback port (UDP and TCP) whose A records a test sets:
// the records an administrator creates for a region's domains. A record named
// "*.<domain>" answers every name under the domain.
type Zone struct {
	// Addr is the server's address (host:port, the same port for UDP and TCP).
	Addr string

	mu      sync.Mutex
	a       map[string]string
	servers []*dns.Server
}

// StartZone starts a zone with no records.
func StartZone() (*Zone, error) {
	z := &Zone{a: map[string]string{}}
	mux := dns.NewServeMux()
	mux.HandleFunc(".", z.answer)
	for attempt := 0; attempt < 5; attempt++ {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("testcluster: DNS zone: %w", err)
		}
		ln, err := net.Listen("tcp", pc.LocalAddr().String())
		if err != nil { // the port is taken for TCP: another one
			pc.Close()
			continue
		}
		z.Addr = pc.LocalAddr().String()
		z.servers = []*dns.Server{{PacketConn: pc, Handler: mux}, {Listener: ln, Handler: mux}}
		for _, s := range z.servers {
			go s.ActivateAndServe()
		}
		return z, nil
	}
	return nil, fmt.Errorf("testcluster: DNS zone: no port free for both UDP and TCP")
}

// Set points a name (or "*.<domain>") at an address.
func (z *Zone) Set(name, ip string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.a[strings.ToLower(name)] = ip
}

// Close stops the server.
func (z *Zone) Close() {
	for _, s := range z.servers {
		_ = s.Shutdown()
	}
}

// lookup finds a name's address, itself or through the wildcard of a domain above it.
func (z *Zone) lookup(name string) (string, bool) {
	z.mu.Lock()
	defer z.mu.Unlock()
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	if ip, ok := z.a[name]; ok {
		return ip, true
	}
	for rest := name; strings.Contains(rest, "."); {
		_, rest, _ = strings.Cut(rest, ".")
		if ip, ok := z.a["*."+rest]; ok {
			return ip, true
		}
	}
	return "", false
}

func (z *Zone) answer(w dns.ResponseWriter, req *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(req)
	if len(req.Question) == 1 {
		q := req.Question[0]
		ip, ok := z.lookup(q.Name)
		switch {
		case !ok:
			m.Rcode = dns.RcodeNameError
		case q.Qtype == dns.TypeA:
			if rr, err := dns.NewRR(q.Name + " 30 IN A " + ip); err == nil {
				m.Answer = append(m.Answer, rr)
			}
		}
	}
	_ = w.WriteMsg(m)
}
