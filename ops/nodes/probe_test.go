package nodes

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/agent/nodeprobe"
	"runr.dev/console/ops/kit"
)

// The probe's report becomes the floor's measured lines: cgroup v2 with cpu, memory and
// pids, 15 GiB free for images, and each egress target reached.
func TestProbeItems(t *testing.T) {
	good := nodeprobe.Report{Cgroup: "v2", Controllers: []string{"cpuset", "cpu", "io", "memory", "pids"}, DiskPath: "/var/lib/containerd",
		FreeBytes: 40 << 30, Egress: []nodeprobe.Egress{{Target: "pkgs.k8s.io:443", OK: true, Detail: "connected to 127.0.0.1"}}}
	for _, tc := range []struct {
		name  string
		edit  func(*nodeprobe.Report)
		fails map[string]string
	}{
		{"all pass", func(*nodeprobe.Report) {}, nil},
		{"cgroup v1", func(r *nodeprobe.Report) { r.Cgroup, r.Controllers = "v1", nil }, map[string]string{"cgroup": "cgroup v1: Kubernetes needs cgroup v2"}},
		{"no pids controller", func(r *nodeprobe.Report) { r.Controllers = []string{"cpu", "memory"} }, map[string]string{"cgroup": "without the pids controller(s)"}},
		{"small disk", func(r *nodeprobe.Report) { r.FreeBytes = 14<<30 + 1<<29 }, map[string]string{"disk": "14.5 GiB free on the volume of /var/lib/containerd (at least 15 GiB)"}},
		{"no egress", func(r *nodeprobe.Report) {
			r.Egress = []nodeprobe.Egress{{Target: "pkgs.k8s.io:443", Detail: "cannot resolve pkgs.k8s.io: no such host"}}
		}, map[string]string{"egress:pkgs.k8s.io:443": "cannot resolve pkgs.k8s.io"}},
	} {
		r := good
		tc.edit(&r)
		raw, _ := json.Marshal(r)
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{nodeprobe.Annotation: string(raw)}}}
		items := probeItems(n)
		if len(items) != 3 {
			t.Fatalf("%s: %+v", tc.name, items)
		}
		for _, it := range items {
			want, fails := tc.fails[it.Key]
			if fails != (it.Status == kit.CheckFail) || fails && !strings.Contains(it.Evidence, want) {
				t.Errorf("%s: %s is %s (%s)", tc.name, it.Key, it.Status, it.Evidence)
			}
		}
	}
	if items := probeItems(&corev1.Node{}); len(items) != 1 || items[0].Status != kit.CheckWarn || !strings.Contains(items[0].Evidence, "not probed yet") {
		t.Fatalf("a node not probed: %+v", items)
	}
}
