package nodes

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/store"
)

func testNode(name, cpu, mem string, mod func(*corev1.Node)) corev1.Node {
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Status: corev1.NodeStatus{Capacity: res, Allocatable: res}}
	if mod != nil {
		mod(&n)
	}
	return n
}

func testPod(ns, name, node, cpu, mem string, phase corev1.PodPhase) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}}},
		Status: corev1.PodStatus{Phase: phase}}
}

func TestCapacityArithmetic(t *testing.T) {
	cpTaint := corev1.Taint{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}
	nodes := []corev1.Node{
		testNode("cp-1", "4", "8Gi", func(n *corev1.Node) {
			n.Labels["node-role.kubernetes.io/control-plane"] = ""
			n.Spec.Taints = []corev1.Taint{cpTaint}
		}),
		testNode("w-1", "8", "16Gi", nil),
		testNode("w-2", "8", "16Gi", func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{DedicatedTaint} }),
		testNode("w-3", "4", "8Gi", func(n *corev1.Node) { n.Spec.Unschedulable = true }),
		// A PreferNoSchedule taint does not keep projects off.
		testNode("w-4", "2", "4Gi", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule}}
		}),
	}
	pods := []corev1.Pod{
		testPod("kube-system", "proxy-w1", "w-1", "500m", "512Mi", corev1.PodRunning),
		testPod("knative-serving", "activator", "w-1", "250m", "256Mi", corev1.PodRunning),
		testPod("observability", "prom", "w-2", "1", "2Gi", corev1.PodRunning),
		testPod("kube-system", "cp-thing", "cp-1", "1", "1Gi", corev1.PodRunning),
		// Project pods are what the budgets admit: not subtracted.
		testPod("eu-2", "fn", "w-1", "2", "1Gi", corev1.PodRunning),
		// Finished and unscheduled pods hold nothing.
		testPod("kube-system", "done", "w-1", "4", "4Gi", corev1.PodSucceeded),
		testPod("kube-system", "pending", "", "4", "4Gi", corev1.PodPending),
	}
	projectNS := map[string]bool{"eu-2": true}

	cases := []struct {
		name      string
		dedicated []string
		counted   []string
		alloc     Resources
		platform  Resources
		total     Resources
	}{
		// Without dedicated workers every schedulable node without a hard taint counts:
		// w-1 and w-4 (cp-1 is tainted, w-2 carries another region's dedicated taint, w-3 is cordoned).
		{"every schedulable node", nil, []string{"w-1", "w-4"},
			Resources{10000, 20480}, Resources{750, 768}, Resources{9250, 19712}},
		// With dedicated workers only they count; their own taint is tolerated.
		{"dedicated workers", []string{"w-2"}, []string{"w-2"},
			Resources{8000, 16384}, Resources{1000, 2048}, Resources{7000, 14336}},
		{"dedicated, one cordoned", []string{"w-1", "w-3"}, []string{"w-1"},
			Resources{8000, 16384}, Resources{750, 768}, Resources{7250, 15616}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := ComputeCapacity(nodes, pods, projectNS, tc.dedicated)
			var got []string
			for _, n := range c.Nodes {
				if n.Counted {
					got = append(got, n.Name)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.counted, ",") {
				t.Fatalf("counted %v, want %v (%+v)", got, tc.counted, c.Nodes)
			}
			if c.Allocatable != tc.alloc || c.Platform != tc.platform || c.Total != tc.total {
				t.Fatalf("allocatable %+v platform %+v total %+v; want %+v %+v %+v", c.Allocatable, c.Platform, c.Total, tc.alloc, tc.platform, tc.total)
			}
			if c.Dedicated != (len(tc.dedicated) > 0) {
				t.Fatalf("dedicated %v", c.Dedicated)
			}
		})
	}

	// Budgets: 7000m / 14336Mi of capacity, factors 3 and 1.5.
	capa := ComputeCapacity(nodes, pods, projectNS, []string{"w-2"})
	b := ComputeBudgets(capa, 3, 1.5, store.Reservation{Projects: 1, CPUm: 2000, MemoryMi: 4096}, store.Reservation{Projects: 4, CPUm: 15000, MemoryMi: 8000})
	want := BudgetLine{Gross: 8000, Reserved: 1000, Budget: 7000, Used: 2000, Free: 5000}
	if b.AlwaysOn.CPU != want {
		t.Fatalf("always-on CPU %+v, want %+v", b.AlwaysOn.CPU, want)
	}
	if want := (BudgetLine{Gross: 16384, Reserved: 2048, Budget: 14336, Used: 4096, Free: 10240}); b.AlwaysOn.Memory != want {
		t.Fatalf("always-on memory %+v, want %+v", b.AlwaysOn.Memory, want)
	}
	// FaaS CPU: 7000 × 3 = 21000, minus 2000 always-on = 19000; 15000 used.
	if want := (BudgetLine{Gross: 21000, Reserved: 2000, Budget: 19000, Used: 15000, Free: 4000}); b.FaaS.CPU != want {
		t.Fatalf("FaaS CPU %+v, want %+v", b.FaaS.CPU, want)
	}
	// FaaS memory: 14336 × 1.5 = 21504, minus 4096 = 17408; 8000 used.
	if want := (BudgetLine{Gross: 21504, Reserved: 4096, Budget: 17408, Used: 8000, Free: 9408}); b.FaaS.Memory != want {
		t.Fatalf("FaaS memory %+v, want %+v", b.FaaS.Memory, want)
	}
	if b.AlwaysOn.Projects != 1 || b.FaaS.Projects != 4 {
		t.Fatalf("project counts %d %d", b.AlwaysOn.Projects, b.FaaS.Projects)
	}

	// Admission against those budgets.
	adm := []struct {
		name string
		req  AdmitRequest
		want string // "" admitted
	}{
		{"FaaS fits exactly", AdmitRequest{CPUm: 4000, MemoryMi: 512}, ""},
		{"FaaS CPU too big", AdmitRequest{CPUm: 5000, MemoryMi: 512},
			"CPU: this deploy asks 5000m; the FaaS budget is 19000m, 15000m used: 4000m free"},
		{"FaaS both too big", AdmitRequest{CPUm: 4001, MemoryMi: 10000},
			"CPU: this deploy asks 4001m; the FaaS budget is 19000m, 15000m used: 4000m free; memory: this deploy asks 10000Mi; the FaaS budget is 17408Mi, 8000Mi used: 9408Mi free"},
		{"always-on fits", AdmitRequest{CPUm: 5000, MemoryMi: 10240, AlwaysOn: true}, ""},
		{"always-on too big", AdmitRequest{CPUm: 5001, MemoryMi: 100, AlwaysOn: true},
			"CPU: this deploy asks 5001m; the always-on budget is 7000m, 2000m used: 5000m free"},
	}
	for _, tc := range adm {
		t.Run(tc.name, func(t *testing.T) {
			e := CheckAdmission("eu-2", b, tc.req)
			switch {
			case tc.want == "" && e != nil:
				t.Fatalf("refused: %v", e)
			case tc.want != "" && e == nil:
				t.Fatal("admitted")
			case tc.want != "" && e.Error() != tc.want:
				t.Fatalf("message\n got %q\nwant %q", e.Error(), tc.want)
			}
		})
	}
	// A FaaS budget that shrank below what is used says so.
	over := ComputeBudgets(capa, 1, 1, store.Reservation{CPUm: 6000}, store.Reservation{CPUm: 2000})
	var ae *AdmissionError
	if err := error(CheckAdmission("eu-2", over, AdmitRequest{CPUm: 100})); !errors.As(err, &ae) || !strings.Contains(err.Error(), "none free (1000m over)") {
		t.Fatalf("overspent budget: %v", err)
	}
}

func TestCapacityNodeChecks(t *testing.T) {
	now := time.Now()
	hb := func(ago time.Duration, st corev1.ConditionStatus) func(*corev1.Node) {
		return func(n *corev1.Node) {
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st, LastHeartbeatTime: metav1.NewTime(now.Add(-ago))}}
		}
	}
	for _, tc := range []struct {
		name string
		mod  func(*corev1.Node)
		want kube.NodeState
	}{
		{"fresh", hb(5*time.Second, corev1.ConditionTrue), kube.NodeReadyState},
		{"not ready", hb(5*time.Second, corev1.ConditionFalse), kube.NodeNotReady},
		{"stale", hb(31*time.Second, corev1.ConditionTrue), kube.NodeNoHeartbeat},
		{"unknown and stale", hb(45*time.Second, corev1.ConditionUnknown), kube.NodeNoHeartbeat},
		{"never", nil, kube.NodeNoHeartbeat},
	} {
		n := testNode("n", "2", "4Gi", tc.mod)
		if got, _ := kube.NodeHeartbeat(&n, nil, now); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	// A real kubelet posts its Ready condition only on a change or every 5 minutes; its
	// Lease, renewed every 10 s, is its heartbeat.
	fresh, old := now.Add(-3*time.Second), now.Add(-2*time.Minute)
	for _, tc := range []struct {
		name  string
		mod   func(*corev1.Node)
		renew *time.Time
		want  kube.NodeState
	}{
		{"stale condition, fresh lease", hb(4*time.Minute, corev1.ConditionTrue), &fresh, kube.NodeReadyState},
		{"not ready, fresh lease", hb(4*time.Minute, corev1.ConditionFalse), &fresh, kube.NodeNotReady},
		{"both stale", hb(4*time.Minute, corev1.ConditionTrue), &old, kube.NodeNoHeartbeat},
		{"fresh condition, old lease", hb(5*time.Second, corev1.ConditionTrue), &old, kube.NodeReadyState},
	} {
		n := testNode("n", "2", "4Gi", tc.mod)
		got, last := kube.NodeHeartbeat(&n, tc.renew, now)
		if got != tc.want || last == nil {
			t.Errorf("%s: %s (%v), want %s", tc.name, got, last, tc.want)
		}
	}

	info := func(cpu, mem, img, kubelet string) corev1.Node {
		return testNode("n", cpu, mem, func(n *corev1.Node) {
			n.Status.NodeInfo.OSImage, n.Status.NodeInfo.KubeletVersion = img, kubelet
		})
	}
	for _, tc := range []struct {
		name  string
		node  corev1.Node
		fails map[string]string // key -> part of the evidence
	}{
		{"floor", info("2", "3500M", "Ubuntu 22.04.5 LTS", "v1.30.0"), nil},
		// 3.5 GB is decimal, as the spec writes it: 3337 MiB is 3.499 GB.
		{"just under the floor", info("2", "3337Mi", "Ubuntu 22.04.5 LTS", "v1.30.0"), map[string]string{"memory": "3.499 GB (at least 3.5 GB)"}},
		{"1 CPU", info("1", "8Gi", "Ubuntu 24.04.2 LTS", "v1.36.3"), map[string]string{"cpu": "1 CPU (at least 2)"}},
		{"small memory", info("4", "3Gi", "Ubuntu 26.04 LTS", "v1.36.3"), map[string]string{"memory": "3.221 GB"}},
		{"interim", info("4", "8Gi", "Ubuntu 25.04", "v1.36.3"), map[string]string{"os": "interim release"}},
		{"old LTS", info("4", "8Gi", "Ubuntu 20.04.6 LTS", "v1.36.3"), map[string]string{"os": "not supported"}},
		{"not ubuntu", info("4", "8Gi", "Debian GNU/Linux 12 (bookworm)", "v1.36.3"), map[string]string{"os": "not Ubuntu"}},
		{"old kubelet", info("4", "8Gi", "Ubuntu 24.04 LTS", "v1.29.3"), map[string]string{"kubelet": "v1.29.3 (at least 1.30)"}},
	} {
		items := Preflight(&tc.node, 30)
		// The four lines read from the Node, and the advisory line of a node not probed yet.
		if len(items) != 5 || items[4].Key != "probe" || items[4].Status != kit.CheckWarn {
			t.Fatalf("%s: %d lines: %+v", tc.name, len(items), items)
		}
		for _, it := range items {
			want, fails := tc.fails[it.Key]
			if fails != (it.Status == kit.CheckFail) || (fails && !strings.Contains(it.Evidence, want)) {
				t.Errorf("%s: %s is %s (%s)", tc.name, it.Key, it.Status, it.Evidence)
			}
		}
	}

	cp := func(name string) corev1.Node {
		return testNode(name, "4", "8Gi", func(n *corev1.Node) { n.Labels["node-role.kubernetes.io/control-plane"] = "" })
	}
	three := []corev1.Node{cp("a"), cp("b"), cp("c"), testNode("w", "4", "8Gi", nil)}
	if d, ok := CheckNodeDelete(three, "c"); !ok || d.Refused != "" || !strings.Contains(d.Warning, "leaves 2 control-plane nodes") {
		t.Fatalf("3 -> 2: %+v", d)
	}
	if d, _ := CheckNodeDelete(three, "w"); d.Refused != "" || d.Warning != "" {
		t.Fatalf("worker: %+v", d)
	}
	if d, _ := CheckNodeDelete(three[2:], "c"); !strings.Contains(d.Refused, "last control-plane node") {
		t.Fatalf("last: %+v", d)
	}
	if _, ok := CheckNodeDelete(three, "nope"); ok {
		t.Fatal("unknown node found")
	}
	if ws := ClusterShape([]string{"a"}); len(ws) != 1 || ws[0].Key != "single_control_plane" {
		t.Fatalf("single: %+v", ws)
	}
	if ws := ClusterShape([]string{"a", "b"}); len(ws) != 1 || ws[0].Key != "even_control_planes" {
		t.Fatalf("even: %+v", ws)
	}
	if ws := ClusterShape([]string{"a", "b", "c"}); len(ws) != 0 {
		t.Fatalf("three: %+v", ws)
	}
}
