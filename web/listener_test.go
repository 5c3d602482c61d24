package web

import (
	"errors"
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"
)

// failingListener fails its first accepts with an error, then accepts from the real one.
type failingListener struct {
	net.Listener
	fail  error
	times int
}

func (f *failingListener) Accept() (net.Conn, error) {
	if f.times > 0 {
		f.times--
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: f.fail}
	}
	return f.Listener.Accept()
}

// TestListenerOutlivesDescriptorExhaustion: an accept that fails with EMFILE or ENFILE
// (out of file descriptors) is retried after a pause, never returned (fasthttp ends the
// server on any accept error it is given); another error is returned.
func TestListenerOutlivesDescriptorExhaustion(t *testing.T) {
	for _, errno := range []error{syscall.EMFILE, syscall.ENFILE} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		l := newLimitedListener(&failingListener{Listener: ln, fail: errno, times: 3}, 10, 10, func(netip.Addr) bool { return false }, nil)
		go func() {
			if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
				time.Sleep(time.Second)
				c.Close()
			}
		}()
		c, err := l.Accept()
		if err != nil {
			t.Fatalf("%v: Accept returned %v, want a connection after retrying", errno, err)
		}
		c.Close()
		ln.Close()
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	l := newLimitedListener(&failingListener{Listener: ln, fail: syscall.EINVAL, times: 1}, 10, 10, func(netip.Addr) bool { return false }, nil)
	if _, err := l.Accept(); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("EINVAL: %v, want it returned", err)
	}
}

// TestListenerLimits: past the total a connection is closed at once, and past an
// address's share too, unless the address is a trusted proxy; a closed connection gives
// its place back (once, however often it is closed).
func TestListenerLimits(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	proxy := netip.MustParseAddr("127.0.0.3")
	l := newLimitedListener(ln, 4, 2, func(a netip.Addr) bool { return a == proxy }, nil)
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	dial := func(src string) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		c, err := d.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// closedByServer reports whether the server closed the connection right away.
	closedByServer := func(c net.Conn) bool {
		_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		_, err := c.Read(make([]byte, 1))
		var ne net.Error
		return err != nil && !(errors.As(err, &ne) && ne.Timeout())
	}
	a1, a2, a3 := dial("127.0.0.2"), dial("127.0.0.2"), dial("127.0.0.2")
	if closedByServer(a1) || closedByServer(a2) || !closedByServer(a3) {
		t.Fatal("the third connection of one address must be closed, the first two kept")
	}
	p1, p2 := dial("127.0.0.3"), dial("127.0.0.3")
	if closedByServer(p1) || closedByServer(p2) {
		t.Fatal("a trusted proxy has no share")
	}
	if over := dial("127.0.0.4"); !closedByServer(over) {
		t.Fatal("the fifth connection must be closed: the total is 4")
	}
	if l.Open() != 4 {
		t.Fatalf("%d open, want 4", l.Open())
	}
	first := <-accepted
	first.Close()
	first.Close()
	if l.Open() != 3 {
		t.Fatalf("after one close: %d open, want 3", l.Open())
	}
	if c := dial("127.0.0.2"); closedByServer(c) {
		t.Fatal("the place given back was not taken")
	}
}
