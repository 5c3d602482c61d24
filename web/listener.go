package web

import (
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"
)

// Connection limits. The console holds every connection open on a file descriptor, and a
// WebSocket for as long as a page stays open: without a bound, a flood of connections
// takes the descriptors the database, the clusters and the log need. The defaults come
// from the descriptor limit; RUNR_MAX_CONNECTIONS and RUNR_MAX_CONNECTIONS_PER_ADDRESS
// set them.
const (
	// reservedDescriptors are kept for everything but client connections.
	reservedDescriptors = 256
	// maxDefaultConnections bounds the default however high the descriptor limit is.
	maxDefaultConnections = 16384
	// DefaultConnectionsPerAddress is how many connections one client address holds.
	DefaultConnectionsPerAddress = 256
)

// DefaultMaxConnections is the default limit of open client connections: three quarters
// of the descriptors above a reserve, at most maxDefaultConnections.
func DefaultMaxConnections() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == 0 {
		return 1024
	}
	n := (int(min(lim.Cur, 1<<30)) - reservedDescriptors) * 3 / 4
	return max(64, min(n, maxDefaultConnections))
}

// limitedListener accepts connections within the limits: past the total or an address's
// share a new connection is closed at once (trusted proxies carry many clients and have
// no share); when the process is out of descriptors (EMFILE, ENFILE) or buffers, it
// waits and accepts again, as net/http does, instead of ending the server.
type limitedListener struct {
	net.Listener
	max, perAddress int
	trusted         func(netip.Addr) bool
	log             *slog.Logger

	mu     sync.Mutex
	open   int
	byAddr map[netip.Addr]int
	// refusedAt rate-limits the warnings: one per second at most.
	refusedAt time.Time
}

func newLimitedListener(ln net.Listener, max, perAddress int, trusted func(netip.Addr) bool, log *slog.Logger) *limitedListener {
	return &limitedListener{Listener: ln, max: max, perAddress: perAddress, trusted: trusted, log: log, byAddr: map[netip.Addr]int{}}
}

// Accept returns the next connection within the limits.
func (l *limitedListener) Accept() (net.Conn, error) {
	var wait time.Duration
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if !retryableAccept(err) {
				return nil, err
			}
			wait = min(max(2*wait, 5*time.Millisecond), time.Second)
			l.warn("cannot accept connections: out of file descriptors or buffers; retrying", "err", err, "in", wait)
			time.Sleep(wait)
			continue
		}
		wait = 0
		addr := remoteAddr(c)
		if why := l.admit(addr); why != "" {
			c.Close()
			l.warn("connection refused: "+why, "ip", addr.String())
			continue
		}
		return &countedConn{Conn: c, l: l, addr: addr}, nil
	}
}

// admit counts a new connection, or says why it is refused.
func (l *limitedListener) admit(addr netip.Addr) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open >= l.max {
		return "the console holds its most connections"
	}
	if l.perAddress > 0 && addr.IsValid() && !l.trusted(addr) {
		if l.byAddr[addr] >= l.perAddress {
			return "the address holds its most connections"
		}
		l.byAddr[addr]++
	}
	l.open++
	return ""
}

func (l *limitedListener) release(addr netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if n, ok := l.byAddr[addr]; ok {
		if n <= 1 {
			delete(l.byAddr, addr)
		} else {
			l.byAddr[addr] = n - 1
		}
	}
}

// Open is how many connections are open.
func (l *limitedListener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

func (l *limitedListener) warn(msg string, args ...any) {
	l.mu.Lock()
	now := time.Now()
	quiet := now.Sub(l.refusedAt) < time.Second
	if !quiet {
		l.refusedAt = now
	}
	l.mu.Unlock()
	if !quiet && l.log != nil {
		l.log.Warn(msg, args...)
	}
}

// retryableAccept reports whether an accept failed for want of resources that come back.
func retryableAccept(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.ENOBUFS) ||
		errors.Is(err, syscall.ENOMEM) || errors.Is(err, syscall.ECONNABORTED)
}

func remoteAddr(c net.Conn) netip.Addr {
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		if a, ok := netip.AddrFromSlice(ta.IP); ok {
			return a.Unmap()
		}
	}
	return netip.Addr{}
}

// countedConn gives its place back when it closes (once, however often Close is called).
type countedConn struct {
	net.Conn
	l    *limitedListener
	addr netip.Addr
	once sync.Once
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.addr) })
	return err
}
