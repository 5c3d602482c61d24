package nodeprobe

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// The probe reads a host's filesystem under root and reaches its targets; here a
// directory stands for the host and the targets are loopback addresses (one listening,
// one not): no name is resolved and nothing leaves the machine.
func TestProbe(t *testing.T) {
	root := t.TempDir()
	for path, body := range map[string]string{
		"sys/fs/cgroup/cgroup.controllers": "cpuset cpu io memory pids\n",
		"etc/os-release":                   "NAME=\"Ubuntu\"\nPRETTY_NAME=\"Ubuntu 24.04.2 LTS\"\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, path), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedAddr := closed.Addr().String()
	closed.Close()
	r := Probe(context.Background(), root, []string{l.Addr().String(), closedAddr})
	if r.Cgroup != "v2" || strings.Join(r.Controllers, ",") != "cpuset,cpu,io,memory,pids" || r.OSRelease != "Ubuntu 24.04.2 LTS" || r.Error != "" {
		t.Fatalf("report %+v", r)
	}
	// /var/lib/containerd does not exist here: its nearest existing parent is measured.
	if r.DiskPath != "/" || r.FreeBytes == 0 {
		t.Fatalf("disk %q %d", r.DiskPath, r.FreeBytes)
	}
	if len(r.Egress) != 2 || !r.Egress[0].OK || r.Egress[1].OK || !strings.Contains(r.Egress[1].Detail, "cannot connect") {
		t.Fatalf("egress %+v", r.Egress)
	}
	// Without the v2 root's controllers file, a cgroup tree is v1.
	os.Remove(filepath.Join(root, "sys/fs/cgroup/cgroup.controllers"))
	if r := Probe(context.Background(), root, nil); r.Cgroup != "v1" {
		t.Fatalf("v1: %+v", r)
	}
}

// The egress check resolves the targets' names: a DNS server of the test answers
// pkgs.k8s.io and registry.k8s.io with the loopback address of a listener it runs (and
// nothing for another name), so that the probe's whole path is taken without leaving the
// machine.
func TestProbeResolvesTargets(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	dnsAddr := testDNS(t, map[string]net.IP{"pkgs.k8s.io.": net.IPv4(127, 0, 0, 1), "registry.k8s.io.": net.IPv4(127, 0, 0, 1)})
	resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "udp", dnsAddr)
	}}
	_, port, _ := net.SplitHostPort(l.Addr().String())
	r := ProbeWith(context.Background(), t.TempDir(), []string{"pkgs.k8s.io:" + port, "registry.k8s.io:" + port, "elsewhere.invalid:" + port}, resolver)
	if len(r.Egress) != 3 || !r.Egress[0].OK || !r.Egress[1].OK || r.Egress[0].Detail != "connected to 127.0.0.1" {
		t.Fatalf("egress %+v", r.Egress)
	}
	if e := r.Egress[2]; e.OK || !strings.HasPrefix(e.Detail, "cannot resolve elsewhere.invalid") {
		t.Fatalf("an unknown name: %+v", e)
	}
}

// testDNS answers A questions for the names it has (NXDOMAIN for the others) on a UDP
// port of 127.0.0.1, until the test ends.
func testDNS(t *testing.T, names map[string]net.IP) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var p dnsmessage.Parser
			h, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RCode: dnsmessage.RCodeSuccess})
			b.EnableCompression()
			ip, ok := names[q.Name.String()]
			if !ok {
				b = dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, RCode: dnsmessage.RCodeNameError})
			}
			_ = b.StartQuestions()
			_ = b.Question(q)
			if ok && q.Type == dnsmessage.TypeA {
				_ = b.StartAnswers()
				var a [4]byte
				copy(a[:], ip.To4())
				_ = b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}, dnsmessage.AResource{A: a})
			}
			if msg, err := b.Finish(); err == nil {
				pc.WriteTo(msg, from)
			}
		}
	}()
	return pc.LocalAddr().String()
}
