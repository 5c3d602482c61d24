// Package nodeprobe measures a node against the preflight floor from inside a pod that
// mounts the host's filesystem: cgroup version and controllers, free space on the volume
// behind /var/lib/containerd, the OS release, and egress to Kubernetes' package and image
// hosts. The console's node probe DaemonSet runs it and writes the Report on its node.
package nodeprobe

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Annotation is the node annotation that holds a node's Report (JSON).
const Annotation = "runr.dev/node-probe"

// ContainerdDir is the directory whose volume must have room for images.
const ContainerdDir = "/var/lib/containerd"

// Targets are the hosts a node must reach to install and upgrade Kubernetes.
var Targets = []string{"pkgs.k8s.io:443", "registry.k8s.io:443"}

// Report is what the probe found on its node.
type Report struct {
	// Cgroup is "v2" or "v1"; Controllers are the v2 root's controllers.
	Cgroup      string   `json:"cgroup"`
	Controllers []string `json:"controllers,omitempty"`
	// FreeBytes is the free space of the volume behind DiskPath (ContainerdDir, or its
	// nearest existing parent).
	DiskPath  string `json:"disk_path"`
	FreeBytes uint64 `json:"free_bytes"`
	// OSRelease is /etc/os-release's PRETTY_NAME.
	OSRelease string   `json:"os_release,omitempty"`
	Egress    []Egress `json:"egress"`
	// Error says what the probe could not read (the rest of the report stands).
	Error string `json:"error,omitempty"`
}

// Egress is one target's outcome: resolved and connected, or why not.
type Egress struct {
	Target string `json:"target"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Probe measures the node whose root filesystem is mounted at root, resolving the targets
// with the node's resolver.
func Probe(ctx context.Context, root string, targets []string) Report {
	return ProbeWith(ctx, root, targets, net.DefaultResolver)
}

// ProbeWith is Probe with the resolver of the targets' names.
func ProbeWith(ctx context.Context, root string, targets []string, resolver *net.Resolver) Report {
	var r Report
	var errs []error
	if raw, err := os.ReadFile(filepath.Join(root, "sys/fs/cgroup/cgroup.controllers")); err == nil {
		r.Cgroup, r.Controllers = "v2", strings.Fields(string(raw))
	} else if _, err := os.Stat(filepath.Join(root, "sys/fs/cgroup")); err == nil {
		r.Cgroup = "v1"
	} else {
		errs = append(errs, err)
	}
	dir := filepath.Join(root, ContainerdDir)
	for {
		if _, err := os.Stat(dir); err == nil || dir == root || dir == "/" {
			break
		}
		dir = filepath.Dir(dir)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err == nil {
		r.DiskPath, r.FreeBytes = "/"+strings.TrimPrefix(strings.TrimPrefix(dir, root), "/"), st.Bavail*uint64(st.Bsize)
	} else {
		errs = append(errs, err)
	}
	r.OSRelease = prettyName(filepath.Join(root, "etc/os-release"))
	for _, t := range targets {
		r.Egress = append(r.Egress, reach(ctx, resolver, t))
	}
	if err := errors.Join(errs...); err != nil {
		r.Error = err.Error()
	}
	return r
}

// prettyName reads PRETTY_NAME of an os-release file ("" when it has none).
func prettyName(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "PRETTY_NAME="); ok {
			return strings.Trim(v, `"'`)
		}
	}
	return ""
}

// reach resolves a host:port target and opens a TCP connection to it.
func reach(ctx context.Context, resolver *net.Resolver, target string) Egress {
	host, port, err := net.SplitHostPort(target)
	if err != nil {
		return Egress{Target: target, Detail: err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := resolver.LookupHost(ctx, host)
	if err != nil || len(addrs) == 0 {
		return Egress{Target: target, Detail: "cannot resolve " + host + ": " + errString(err)}
	}
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort(addrs[0], port))
	if err != nil {
		return Egress{Target: target, Detail: "resolved to " + addrs[0] + ", cannot connect: " + err.Error()}
	}
	conn.Close()
	return Egress{Target: target, OK: true, Detail: "connected to " + addrs[0]}
}

func errString(err error) string {
	if err == nil {
		return "no address"
	}
	return err.Error()
}
