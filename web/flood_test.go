package web_test

import (
	"errors"
	"net"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"runr.dev/console/config"
	"runr.dev/console/web/webtest"
)

// TestConnectionFlood: one address opening 400 idle connections holds its share (100
// here) and no more; one viewer opening 60 WebSockets gets RUNR_SOCKETS_PER_USER (20) of them and
// 429 for the rest; meanwhile the console answers /healthz and serves a signed-in user,
// and a socket closed gives its place back.
func TestConnectionFlood(t *testing.T) {
	const share = 100
	e := webtest.New(t, func(c *config.Config) { c.MaxConnectionsPerAddress = share })
	base := e.Listen()
	addr := strings.TrimPrefix(base, "http://")
	owner, _ := e.User("owner")
	jar, _ := cookiejar.New(nil)
	user := browserAt("127.0.0.83", jar)
	if got, _ := loginWith(t, user, base, owner.Email, "password-of-owner"); got != 303 {
		t.Fatalf("sign-in: %d", got)
	}

	// Idle connections from one address: the share is held, the rest closed at once.
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.80")}}
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for i := 0; i < 400; i++ {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		idle = append(idle, c)
	}
	held := 0
	for _, c := range idle {
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		_, err := c.Read(make([]byte, 1))
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			held++
		}
	}
	if held != share {
		t.Errorf("one address holds %d idle connections, want %d", held, share)
	}

	// WebSockets of one viewer: SocketsPerUser, then 429.
	_, tok := e.User("viewer")
	hdr := http.Header{"Authorization": {"Bearer " + tok}}
	ws := strings.Replace(base, "http://", "ws://", 1) + "/ws/banners"
	dialer := &websocket.Dialer{NetDial: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.81")}}).Dial}
	var sockets []*websocket.Conn
	defer func() {
		for _, s := range sockets {
			s.Close()
		}
	}()
	refused := 0
	for i := 0; i < 60; i++ {
		s, resp, err := dialer.Dial(ws, hdr)
		switch {
		case err == nil:
			sockets = append(sockets, s)
		case resp != nil && resp.StatusCode == 429:
			refused++
		default:
			t.Fatalf("socket %d: %v", i, err)
		}
	}
	if len(sockets) != config.DefaultSocketsPerUser || refused != 60-config.DefaultSocketsPerUser {
		t.Errorf("one viewer opened %d sockets (%d refused), want %d", len(sockets), refused, config.DefaultSocketsPerUser)
	}

	// The console answers and serves the signed-in user from elsewhere.
	health := browserAt("127.0.0.82", nil)
	resp, err := health.Get(base + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/healthz during the flood: %v %v", resp, err)
	}
	resp.Body.Close()
	resp, err = user.Get(base + "/regions")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("a signed-in user during the flood: %v %v", resp, err)
	}
	resp.Body.Close()

	// A socket closed gives its place back.
	sockets[0].Close()
	sockets = sockets[1:]
	deadline := time.Now().Add(5 * time.Second)
	for {
		s, _, err := dialer.Dial(ws, hdr)
		if err == nil {
			sockets = append(sockets, s)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a socket closed did not give its place back: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
