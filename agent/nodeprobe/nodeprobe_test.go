package nodeprobe

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
