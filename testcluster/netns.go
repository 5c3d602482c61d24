package testcluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A real node runs in a private network namespace (realnode.md): nothing in it can reach
// another address than its own, and the pod addresses it hands out exist nowhere else.
// The namespace is held by a small init process (this binary again, see init below) that
// also carries connections across its wall, through Unix sockets, which the two sides share
// because the filesystem is the same:
//
//   - "dial ADDR": the init dials ADDR inside and joins the two connections (the harness
//     reaches the API server, a Service or a pod);
//   - "listen ADDR SOCKET": the init listens on ADDR inside and joins each connection to a
//     new one on SOCKET, where the harness listens (pods reach the console under test, its
//     PostgreSQL, the image registry).
//
// Every process of the cluster is started inside with nsenter; when the init ends, the
// kernel ends everything in its PID namespace, containers included.

// netnsEnv tells this binary, started again by startNetns, to be the namespace's init.
const netnsEnv = "RUNR_TESTCLUSTER_NETNS_INIT"

// The addresses inside the namespace.
const (
	// NodeIP is the real node's address, on the bridge rn0 (it is also where the harness's
	// exposed services listen).
	NodeIP = "172.30.0.10"
	// InsideLBAddress is the LoadBalancer Services' address with Options.InsideLoadBalancer:
	// no interface has it; kube-proxy's rules send it to the Service.
	InsideLBAddress = "172.30.0.100"
	// PodCIDR is the real node's pod range (the CNI bridge cni0 and host-local IPAM).
	PodCIDR = "10.244.0.0/24"
	// ClusterCIDR is every pod range of a real-node cluster (kube-proxy's --cluster-cidr).
	ClusterCIDR = "10.244.0.0/16"
)

// privateDirs are host directories that the node's programs write to by fixed path; each
// is replaced inside the namespace by a folder of the cluster's own, so that clusters on one
// machine never share them and nothing is left on the machine. The directories are created
// on the machine when they are missing (a bind mount needs its mount point).
var privateDirs = []string{
	"/etc/containerd",     // containerd's config.toml and certs.d (what the node mirror edits)
	"/var/lib/containerd", // containerd's images, snapshots and pods
	"/run/containerd",     // its socket and the runc shims' sockets
	"/run/netns",          // the pods' network namespaces
	"/var/lib/cni",        // CNI's result cache
	"/var/lib/rancher",    // k3s and rke2 paths the node mirror mounts
	"/var/lib/kubelet",    // paths some pods mount
	"/var/log/pods",       // container logs
	"/var/log/containers", // the kubelet's links to them
	"/usr/local/sbin",     // the node's service manager (systemctl, see serviceManager)
}

func init() {
	if dir := os.Getenv(netnsEnv); dir != "" {
		os.Exit(netnsInit(dir))
	}
}

// netnsInit is the namespace's init (PID 1 of its PID namespace): it makes the mounts
// private, sets up the network, serves the control socket and reaps orphans until it is
// told to stop.
func netnsInit(dir string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "netns init:", err)
		return 1
	}
	if err := netnsSetup(dir); err != nil {
		return fail(err)
	}
	ln, err := net.Listen("unix", filepath.Join(dir, "netns.sock"))
	if err != nil {
		return fail(err)
	}
	go serveNetnsControl(ln, dir)
	if err := os.WriteFile(filepath.Join(dir, "netns.ready"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return fail(err)
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGCHLD, syscall.SIGTERM, syscall.SIGINT)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			return 0
		}
		// Processes whose parent ended (containerd's shims double-fork) are ours to reap.
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
	return 0
}

// podBridgeMAC is the MAC of the pods' bridge cni0, set once so that the kernel never
// changes it (see netnsSetup).
const podBridgeMAC = "02:72:75:6e:72:01"

// netnsSetup makes every mount private, mounts the namespace's own /proc, replaces the
// private directories, and brings up loopback and the node's bridge.
func netnsSetup(dir string) error {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	for _, d := range privateDirs {
		own := filepath.Join(dir, "root", d)
		if err := os.MkdirAll(own, 0o755); err != nil {
			return err
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		if err := syscall.Mount(own, d, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s: %w", d, err)
		}
	}
	// The machine's resolver is outside: the namespace's names come from its own DNS.
	resolv := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver "+NodeIP+"\noptions timeout:1 attempts:1\n"), 0o644); err != nil {
		return err
	}
	if err := syscall.Mount(resolv, "/etc/resolv.conf", "", syscall.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind /etc/resolv.conf: %w", err)
	}
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"link", "add", "rn0", "type", "bridge"},
		{"addr", "add", NodeIP + "/24", "dev", "rn0"},
		{"link", "set", "rn0", "up"},
		{"route", "add", "default", "dev", "rn0"},
		// The pods' bridge (the CNI bridge plugin takes it as it finds it) gets a MAC of its
		// own: left to the kernel, a bridge takes the lowest MAC of its ports, so a pod
		// created or deleted could change the gateway's MAC under the other pods' ARP
		// entries, and their traffic through the node would stall for seconds.
		{"link", "add", "cni0", "type", "bridge"},
		{"link", "set", "cni0", "address", podBridgeMAC},
		{"link", "set", "cni0", "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	// Pods reach Services through the node (forwarding), and traffic between pods on the
	// bridge passes iptables, so that kube-proxy's NAT applies to it.
	for file, v := range map[string]string{
		"/proc/sys/net/ipv4/ip_forward":                "1",
		"/proc/sys/net/bridge/bridge-nf-call-iptables": "1",
		"/proc/sys/net/ipv4/conf/all/route_localnet":   "1",
	} {
		if err := os.WriteFile(file, []byte(v), 0o644); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("set %s: %w", file, err)
		}
	}
	return nil
}

// serveNetnsControl answers the harness's dial and listen requests.
func serveNetnsControl(ln net.Listener, dir string) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			r := bufio.NewReader(conn)
			line, err := r.ReadString('\n')
			if err != nil {
				conn.Close()
				return
			}
			f := strings.Fields(line)
			switch {
			case len(f) == 2 && f[0] == "dial":
				in, err := net.DialTimeout("tcp", f[1], 10*time.Second)
				if err != nil {
					fmt.Fprintf(conn, "error %v\n", err)
					conn.Close()
					return
				}
				io.WriteString(conn, "ok\n")
				join(in, &bufferedConn{Conn: conn, r: r})
			case len(f) == 3 && f[0] == "listen":
				l, err := net.Listen("tcp", f[1])
				if err != nil {
					fmt.Fprintf(conn, "error %v\n", err)
					conn.Close()
					return
				}
				io.WriteString(conn, "ok\n")
				// The listener lives as long as the harness keeps this connection.
				go func() { io.Copy(io.Discard, r); l.Close() }()
				relay(l, func() (net.Conn, error) { return net.DialTimeout("unix", f[2], 10*time.Second) })
				conn.Close()
			default:
				fmt.Fprintf(conn, "error unknown request %q\n", strings.TrimSpace(line))
				conn.Close()
			}
		}()
	}
}

// bufferedConn is a connection whose first bytes were read through r.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// relay accepts connections until ln closes and joins each to a new one that dial makes.
func relay(ln net.Listener, dial func() (net.Conn, error)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			out, err := dial()
			if err != nil {
				c.Close()
				return
			}
			join(c, out)
		}()
	}
}

// join copies between two connections until both directions end.
func join(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(2)
	half := func(dst, src net.Conn) {
		defer wg.Done()
		io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		} else {
			dst.Close()
		}
	}
	go half(a, b)
	go half(b, a)
	wg.Wait()
	a.Close()
	b.Close()
}

// Netns is a private network namespace with its init, as the harness sees it.
type Netns struct {
	Dir string
	// Pid is the init's process id on the machine (nsenter's target).
	Pid int

	cmd     *exec.Cmd
	mu      sync.Mutex
	closers []io.Closer
}

// startNetns starts the namespace's init (this binary with netnsEnv) in new network,
// mount and PID namespaces, and waits until it serves.
func startNetns(dir string) (*Netns, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("testcluster: find this program: %w", err)
	}
	logf, err := os.Create(filepath.Join(dir, "netns.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), netnsEnv+"="+dir)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID,
		Setpgid:    true, Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("testcluster: start the network namespace (needs root): %w", err)
	}
	logf.Close()
	n := &Netns{Dir: dir, Pid: cmd.Process.Pid, cmd: cmd}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	deadline := time.After(20 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, "netns.ready")); err == nil {
			return n, nil
		}
		select {
		case <-exited:
			raw, _ := os.ReadFile(filepath.Join(dir, "netns.log"))
			return nil, fmt.Errorf("testcluster: the network namespace's init ended: %s", strings.TrimSpace(string(raw)))
		case <-deadline:
			n.Close()
			return nil, errors.New("testcluster: the network namespace's init did not start in 20 s")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Command is a command that runs inside the namespace (nsenter into its network, mount and
// PID namespaces).
func (n *Netns) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--target", strconv.Itoa(n.Pid), "--net", "--mount", "--pid", "--", name}, args...)...)
}

// DialContext connects to a TCP address inside the namespace.
func (n *Netns) DialContext(ctx context.Context, _, addr string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", filepath.Join(n.Dir, "netns.sock"))
	if err != nil {
		return nil, fmt.Errorf("testcluster: the network namespace: %w", err)
	}
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	fmt.Fprintf(conn, "dial %s\n", addr)
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("testcluster: dial %s in the namespace: %w", addr, err)
	}
	if line != "ok\n" {
		conn.Close()
		return nil, fmt.Errorf("testcluster: dial %s in the namespace: %s", addr, strings.TrimSpace(strings.TrimPrefix(line, "error ")))
	}
	conn.SetDeadline(time.Time{})
	return &bufferedConn{Conn: conn, r: r}, nil
}

// Forward listens on a loopback port of the machine and carries each connection to addr
// inside the namespace; it returns the loopback address.
func (n *Netns) Forward(addr string) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	n.keep(ln)
	go relay(ln, func() (net.Conn, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return n.DialContext(ctx, "tcp", addr)
	})
	return ln.Addr().String(), nil
}

// Expose makes a loopback address of the machine (hostAddr) reachable inside the namespace
// at inside (e.g. NodeIP:8080), for as long as the namespace lives.
func (n *Netns) Expose(inside, hostAddr string) error {
	sock := filepath.Join(n.Dir, fmt.Sprintf("expose-%s.sock", strings.NewReplacer(":", "_", ".", "_").Replace(inside)))
	os.Remove(sock)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return err
	}
	n.keep(ln)
	go relay(ln, func() (net.Conn, error) { return net.DialTimeout("tcp", hostAddr, 10*time.Second) })
	ctl, err := net.Dial("unix", filepath.Join(n.Dir, "netns.sock"))
	if err != nil {
		return err
	}
	fmt.Fprintf(ctl, "listen %s %s\n", inside, sock)
	line, err := bufio.NewReader(ctl).ReadString('\n')
	if err != nil || line != "ok\n" {
		ctl.Close()
		return fmt.Errorf("testcluster: listen on %s in the namespace: %v %s", inside, err, strings.TrimSpace(line))
	}
	n.keep(ctl)
	return nil
}

func (n *Netns) keep(c io.Closer) {
	n.mu.Lock()
	n.closers = append(n.closers, c)
	n.mu.Unlock()
}

// Close ends the namespace and everything in it.
func (n *Netns) Close() {
	n.mu.Lock()
	for _, c := range n.closers {
		c.Close()
	}
	n.closers = nil
	n.mu.Unlock()
	if n.cmd.Process != nil {
		n.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() {
			for {
				if err := syscall.Kill(n.Pid, 0); err != nil {
					close(done)
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			n.cmd.Process.Kill()
		}
	}
}
