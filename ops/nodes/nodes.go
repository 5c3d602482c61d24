package nodes

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"runr.dev/console/agent"
	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/problem"
	"runr.dev/console/store"
)

// Job kinds of the node actions of the Workers tab.
const (
	KindNodeCordon   = "node-cordon"
	KindNodeUncordon = "node-uncordon"
	KindNodeDrain    = "node-drain"
	KindNodeDelete   = "node-delete"
)

// NodeKinds are the job kinds of the node actions.
var NodeKinds = []string{KindNodeCordon, KindNodeUncordon, KindNodeDrain, KindNodeDelete, KindNodeProbe, KindKubernetesUpgrade}

// The preflight floor of a node (clusters-and-nodes.md, "Add a node").
const (
	MinNodeCPUm = 2000
	// MinNodeMemory is the spec's "3.5 GB", in decimal gigabytes as it writes it (3.26 GiB).
	MinNodeMemory = 3_500_000_000
)

// UbuntuLTS are the Ubuntu releases a node may run; interim releases fail.
var UbuntuLTS = []string{"22.04", "24.04", "26.04"}

// NodeView is a node as the Workers tab and GET /api/knative-regions/{id}/nodes show it.
type NodeView struct {
	Name         string   `json:"name"`
	Roles        []string `json:"roles"`
	ControlPlane bool     `json:"control_plane"`
	Worker       bool     `json:"worker"`
	// Status is ready, not_ready, or no_heartbeat (no heartbeat for HeartbeatTimeout).
	Status              kube.NodeState    `json:"status"`
	Ready               bool              `json:"ready"`
	LastHeartbeat       *time.Time        `json:"last_heartbeat"`
	HeartbeatAgeSeconds int64             `json:"heartbeat_age_seconds"`
	KubeletVersion      string            `json:"kubelet_version"`
	OSImage             string            `json:"os_image"`
	ContainerRuntime    string            `json:"container_runtime"`
	Schedulable         bool              `json:"schedulable"`
	Cordoned            bool              `json:"cordoned"`
	Dedicated           bool              `json:"dedicated"`
	DedicatedApplied    bool              `json:"dedicated_applied"`
	CPUAllocatableM     int64             `json:"cpu_allocatable_m"`
	CPURequestedM       int64             `json:"cpu_requested_m"`
	MemoryAllocatableMi int64             `json:"memory_allocatable_mi"`
	MemoryRequestedMi   int64             `json:"memory_requested_mi"`
	Pods                int               `json:"pods"`
	Taints              []string          `json:"taints"`
	Labels              map[string]string `json:"labels"`
	Preflight           []kit.CheckItem   `json:"preflight"`
	PreflightOK         bool              `json:"preflight_ok"`
	// Delete is what deleting the node would do to the cluster's shape.
	Delete NodeDeleteCheck `json:"delete"`
}

// ShapeWarning is a warning about the cluster's shape, with its reason.
type ShapeWarning struct {
	Key     string `json:"key"`
	Message string `json:"message"`
}

// Report is the Workers tab's view of a region's cluster.
type Report struct {
	Nodes         []NodeView     `json:"nodes"`
	ControlPlanes int            `json:"control_planes"`
	Warnings      []ShapeWarning `json:"warnings"`
	// DedicatedWorkers is the region's selection (empty: projects run on every schedulable node).
	DedicatedWorkers []string  `json:"dedicated_workers"`
	CheckedAt        time.Time `json:"checked_at"`
	// Upgrades is the cluster's Kubernetes version, whether the console upgrades it, and its progress.
	Upgrades Upgrades `json:"upgrades"`
}

// clusterState is one read of what the Workers tab and the capacity need.
type clusterState struct {
	Nodes []corev1.Node
	// Pods are the pods that hold resources (neither Succeeded nor Failed).
	Pods []corev1.Pod
	// ProjectNamespaces are the namespaces labelled runr.dev/region.
	ProjectNamespaces map[string]bool
	// Renewals are when each node's Lease was last renewed (its kubelet's heartbeat).
	Renewals map[string]time.Time
}

// readCluster lists the nodes, the pods that hold resources, the project namespaces and
// the nodes' Lease renewals.
func readCluster(ctx context.Context, c *kube.Cluster) (*clusterState, error) {
	nodes, err := c.Clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	pods, err := c.Clientset.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "status.phase!=Succeeded,status.phase!=Failed"})
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	nss, err := c.Clientset.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: "runr.dev/region"})
	if err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	st := &clusterState{Nodes: nodes.Items, Pods: pods.Items, ProjectNamespaces: map[string]bool{}, Renewals: c.NodeLeaseRenewals(ctx)}
	for _, ns := range nss.Items {
		st.ProjectNamespaces[ns.Name] = true
	}
	sort.Slice(st.Nodes, func(i, j int) bool { return st.Nodes[i].Name < st.Nodes[j].Name })
	return st, nil
}

// Nodes reads the region's cluster: every node with its roles, heartbeat, resources and
// preflight, and the warnings about the cluster's shape.
func (s *Service) Nodes(ctx context.Context, r *store.Region) (*Report, error) {
	c, err := s.RegionCluster(r)
	if err != nil {
		return nil, err
	}
	st, err := readCluster(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("region %s: %w", r.Name, err)
	}
	rep := buildNodesReport(st, r.Nodes, s.Cfg.MinK8sMinor, time.Now())
	if rep.Upgrades.Upgradable {
		if rep.Upgrades.Progress, err = upgradeProgress(ctx, c); err != nil {
			return nil, fmt.Errorf("region %s: %w", r.Name, err)
		}
	}
	return rep, nil
}

// buildNodesReport builds the Workers tab's view from the cluster's nodes, the pods that
// hold resources and the nodes' Lease renewals; dedicated is the region's selection of
// workers.
func buildNodesReport(st *clusterState, dedicated []string, minMinor int, now time.Time) *Report {
	nodes, pods := st.Nodes, st.Pods
	type req struct{ cpu, mem int64 }
	byNode := map[string]*req{}
	counts := map[string]int{}
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		cpu, mem := agent.PodRequests(p)
		if byNode[p.Spec.NodeName] == nil {
			byNode[p.Spec.NodeName] = &req{}
		}
		byNode[p.Spec.NodeName].cpu += cpu
		byNode[p.Spec.NodeName].mem += mem
		counts[p.Spec.NodeName]++
	}
	sel := map[string]bool{}
	for _, n := range dedicated {
		sel[n] = true
	}
	rep := &Report{Nodes: []NodeView{}, DedicatedWorkers: append([]string{}, dedicated...), CheckedAt: now}
	var cps []string
	for i := range nodes {
		n := &nodes[i]
		ni := kit.NodeSummary(n)
		v := NodeView{Name: n.Name, Roles: ni.Roles, ControlPlane: ni.ControlPlane, KubeletVersion: ni.Kubelet, OSImage: ni.OSImage,
			ContainerRuntime: n.Status.NodeInfo.ContainerRuntimeVersion, Schedulable: !n.Spec.Unschedulable, Cordoned: n.Spec.Unschedulable,
			Dedicated: sel[n.Name], DedicatedApplied: n.Labels[DedicatedKey] == DedicatedValue && hasTaint(n, DedicatedTaint),
			CPUAllocatableM: n.Status.Allocatable.Cpu().MilliValue(), MemoryAllocatableMi: n.Status.Allocatable.Memory().Value() >> 20,
			Pods: counts[n.Name], Taints: []string{}, Labels: n.Labels}
		for _, r := range ni.Roles {
			if r == "worker" {
				v.Worker = true
			}
		}
		if v.Labels == nil {
			v.Labels = map[string]string{}
		}
		var renew *time.Time
		if t, ok := st.Renewals[n.Name]; ok {
			renew = &t
		}
		v.Status, v.LastHeartbeat = kube.NodeHeartbeat(n, renew, now)
		v.Ready = ni.Ready
		if v.LastHeartbeat != nil {
			v.HeartbeatAgeSeconds = int64(now.Sub(*v.LastHeartbeat).Seconds())
		}
		if rq := byNode[n.Name]; rq != nil {
			v.CPURequestedM, v.MemoryRequestedMi = rq.cpu, ceilMi(rq.mem)
		}
		for _, t := range n.Spec.Taints {
			v.Taints = append(v.Taints, TaintString(t))
		}
		v.Preflight = Preflight(n, minMinor)
		v.PreflightOK = true
		for _, it := range v.Preflight {
			if it.Status == kit.CheckFail {
				v.PreflightOK = false
			}
		}
		if v.ControlPlane {
			cps = append(cps, n.Name)
		}
		rep.Nodes = append(rep.Nodes, v)
	}
	rep.ControlPlanes = len(cps)
	rep.Warnings = ClusterShape(cps)
	rep.Upgrades = clusterUpgrades(nodes)
	for i := range rep.Nodes {
		rep.Nodes[i].Delete = checkNodeDelete(rep.Nodes[i].Name, rep.Nodes[i].ControlPlane, cps)
	}
	return rep
}

func ceilMi(b int64) int64 { return (b + (1 << 20) - 1) >> 20 }

// TaintString renders a taint as key=value:Effect.
func TaintString(t corev1.Taint) string {
	s := t.Key
	if t.Value != "" {
		s += "=" + t.Value
	}
	return s + ":" + string(t.Effect)
}

// ClusterShape warns, with the reason, about a single control-plane node and about an
// even number of them. A cluster whose control plane runs off its nodes (none carries
// the role) gets no warning: its shape is its provider's.
func ClusterShape(controlPlanes []string) []ShapeWarning {
	ws := []ShapeWarning{}
	n := len(controlPlanes)
	switch {
	case n == 1:
		ws = append(ws, ShapeWarning{Key: "single_control_plane", Message: fmt.Sprintf(
			"The cluster has a single control-plane node (%s): it is not highly available. If it fails, the Kubernetes API and etcd are gone; high availability needs an odd number of control-plane nodes, 3 is the standard count.", controlPlanes[0])})
	case n > 1 && n%2 == 0:
		ws = append(ws, ShapeWarning{Key: "even_control_planes", Message: fmt.Sprintf(
			"The cluster has %d control-plane nodes (%s), an even number of etcd members: etcd needs a majority of its members for quorum, so %s. Add or remove one to get an odd number; 3 is the standard count.",
			n, strings.Join(controlPlanes, ", "), tolerates(n))})
	}
	return ws
}

// tolerates says how many failures an even number n of etcd members survives: no more
// than n-1 members would.
func tolerates(n int) string {
	return fmt.Sprintf("%d members survive %d failure(s), no more than %d would", n, (n-1)/2, n-1)
}

// NodeDeleteCheck is what deleting a node would do to the cluster's shape (the
// delete-preflight of clusters-and-nodes.md).
type NodeDeleteCheck struct {
	Node         string `json:"node"`
	ControlPlane bool   `json:"control_plane"`
	// Refused is why the delete is refused ("" when it is allowed).
	Refused string `json:"refused,omitempty"`
	// Warning is advisory: the delete goes ahead.
	Warning string `json:"warning,omitempty"`
	// Etcd is what the delete of a control-plane node does to etcd (the API's preflight).
	Etcd *EtcdDeleteCheck `json:"etcd,omitempty"`
}

// CheckNodeDelete checks a delete against the cluster's nodes: the last control-plane
// node is refused; leaving an even number of etcd voting members is warned about.
func CheckNodeDelete(nodes []corev1.Node, name string) (NodeDeleteCheck, bool) {
	var cps []string
	found, isCP := false, false
	for i := range nodes {
		cp := kit.NodeSummary(&nodes[i]).ControlPlane
		if cp {
			cps = append(cps, nodes[i].Name)
		}
		if nodes[i].Name == name {
			found, isCP = true, cp
		}
	}
	if !found {
		return NodeDeleteCheck{Node: name}, false
	}
	return checkNodeDelete(name, isCP, cps), true
}

func checkNodeDelete(name string, isCP bool, cps []string) NodeDeleteCheck {
	d := NodeDeleteCheck{Node: name, ControlPlane: isCP}
	if !isCP {
		return d
	}
	left := len(cps) - 1
	switch {
	case left == 0:
		d.Refused = fmt.Sprintf("%s is the last control-plane node: deleting it would leave the cluster without its API server and etcd. Add another control-plane node first; the console does not reset clusters.", name)
	case left%2 == 0:
		d.Warning = fmt.Sprintf("Deleting %s leaves %d control-plane nodes, an even number of etcd voting members: %s. The warning is advisory; the delete goes ahead.", name, left, tolerates(left))
	}
	return d
}

var (
	ubuntuRe  = regexp.MustCompile(`(?i)^ubuntu\s+(\d{2})\.(\d{2})`)
	kubeletRe = regexp.MustCompile(`^v?(\d+)\.(\d+)`)
)

// Preflight checks a node against the floor of clusters-and-nodes.md: CPU, memory, an
// Ubuntu LTS image and the kubelet's version from the Node, then what the node probe
// measured there (cgroup v2, free disk, egress). Each line is pass or fail with the value
// found; a node not probed yet has one advisory line.
func Preflight(n *corev1.Node, minMinor int) []kit.CheckItem {
	var items []kit.CheckItem
	add := func(key, title string, ok bool, evidence string) {
		st := kit.CheckPass
		if !ok {
			st = kit.CheckFail
		}
		items = append(items, kit.CheckItem{Key: key, Title: title, Status: st, Evidence: evidence})
	}
	capOf := func(name corev1.ResourceName) int64 {
		q, ok := n.Status.Capacity[name]
		if !ok || q.IsZero() {
			q = n.Status.Allocatable[name]
		}
		if name == corev1.ResourceCPU {
			return q.MilliValue()
		}
		return q.Value()
	}
	cpu := capOf(corev1.ResourceCPU)
	add("cpu", "CPU", cpu >= MinNodeCPUm, fmt.Sprintf("%s CPU (at least %d)", milliString(cpu), MinNodeCPUm/1000))
	mem := capOf(corev1.ResourceMemory)
	add("memory", "Memory", mem >= MinNodeMemory, fmt.Sprintf("%.3f GB (at least 3.5 GB)", float64(mem)/1e9))

	img := n.Status.NodeInfo.OSImage
	lts := strings.Join(UbuntuLTS[:len(UbuntuLTS)-1], ", ") + " or " + UbuntuLTS[len(UbuntuLTS)-1]
	if m := ubuntuRe.FindStringSubmatch(img); m == nil {
		add("os", "OS image", false, fmt.Sprintf("%s: not Ubuntu; use Ubuntu %s LTS", kit.OrDefault(img, "unknown"), lts))
	} else {
		rel := m[1] + "." + m[2]
		ok := false
		for _, v := range UbuntuLTS {
			ok = ok || v == rel
		}
		year, _ := strconv.Atoi(m[1])
		switch {
		case ok:
			add("os", "OS image", true, img)
		case m[2] == "04" && year%2 == 0:
			add("os", "OS image", false, fmt.Sprintf("%s: Ubuntu %s is not supported; use Ubuntu %s LTS", img, rel, lts))
		default:
			add("os", "OS image", false, fmt.Sprintf("%s: Ubuntu %s is an interim release; use Ubuntu %s LTS", img, rel, lts))
		}
	}

	kv := n.Status.NodeInfo.KubeletVersion
	if m := kubeletRe.FindStringSubmatch(kv); m == nil {
		add("kubelet", "Kubelet version", false, fmt.Sprintf("%s: not a version (at least 1.%d)", kit.OrDefault(kv, "unknown"), minMinor))
	} else {
		major, _ := strconv.Atoi(m[1])
		minor, _ := strconv.Atoi(m[2])
		add("kubelet", "Kubelet version", major > 1 || (major == 1 && minor >= minMinor), fmt.Sprintf("%s (at least 1.%d)", kv, minMinor))
	}
	return append(items, probeItems(n)...)
}

func milliString(m int64) string {
	if m%1000 == 0 {
		return strconv.FormatInt(m/1000, 10)
	}
	return strconv.FormatFloat(float64(m)/1000, 'f', -1, 64)
}

// NodeParams name the node of a node action.
type NodeParams struct {
	Node string `json:"node"`
	// TimeoutSeconds bounds the wait for the pods to leave (drain, delete); 0: the
	// console's install timeout.
	TimeoutSeconds int `json:"timeout_seconds,omitempty"`
}

func (p NodeParams) timeout(def time.Duration) time.Duration {
	if p.TimeoutSeconds > 0 {
		return time.Duration(p.TimeoutSeconds) * time.Second
	}
	return def
}

// registerNodeKinds registers the node actions: cordon, uncordon, drain, delete.
func (s *Service) registerKinds() {
	plan := func(steps func(p NodeParams) []engine.Step) func(jc *engine.JobContext) ([]engine.Step, error) {
		return func(jc *engine.JobContext) ([]engine.Step, error) {
			var p NodeParams
			if err := jc.Params(&p); err != nil {
				return nil, err
			}
			if p.Node == "" {
				return nil, errors.New("the job names no node")
			}
			return steps(p), nil
		}
	}
	s.Engine.Register(&engine.Kind{Name: KindNodeCordon, Plan: plan(func(p NodeParams) []engine.Step {
		return []engine.Step{s.cordonStep(p, true)}
	})})
	s.Engine.Register(&engine.Kind{Name: KindNodeUncordon, Plan: plan(func(p NodeParams) []engine.Step {
		return []engine.Step{s.cordonStep(p, false)}
	})})
	s.Engine.Register(&engine.Kind{Name: KindNodeDrain, Plan: plan(func(p NodeParams) []engine.Step {
		return []engine.Step{s.cordonStep(p, true), s.evictStep(p)}
	})})
	s.Engine.Register(&engine.Kind{Name: KindNodeDelete, Plan: plan(func(p NodeParams) []engine.Step {
		return []engine.Step{
			s.RegionStep("delete-preflight", "Delete preflight: the cluster's shape (an even etcd member count is advisory)", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
				nodes, err := c.Clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
				if err != nil {
					return fmt.Errorf("list nodes: %w", err)
				}
				d, found := CheckNodeDelete(nodes.Items, p.Node)
				switch {
				case !found:
					jc.Note("Node %s is not in the cluster (deleted already)", p.Node)
					return engine.ErrSkip
				case d.Refused != "":
					return errors.New(d.Refused)
				case d.Warning != "":
					jc.Warnf("%s", d.Warning)
				}
				if d.ControlPlane {
					if err := etcdPreflight(ctx, jc, c, p.Node); err != nil {
						return err
					}
				}
				jc.Note("%s may be deleted", p.Node)
				return nil
			}),
			s.cordonStep(p, true),
			s.evictStep(p),
			s.RegionStep("etcd-member", "Remove the node's etcd member", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
				return removeEtcdMember(ctx, jc, c, p.Node)
			}),
			s.RegionStep("delete", "Delete the node", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
				return s.deleteNode(ctx, jc, r, c, p.Node)
			}),
		}
	})})
}

// cordonStep marks a node unschedulable (or schedulable again).
func (s *Service) cordonStep(p NodeParams, on bool) engine.Step {
	name, title := "cordon", "Cordon "+p.Node
	if !on {
		name, title = "uncordon", "Uncordon "+p.Node
	}
	return s.RegionStep(name, title, func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
		n, err := c.Clientset.CoreV1().Nodes().Get(ctx, p.Node, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			if jc.Job.Kind == KindNodeDelete {
				jc.Note("Node %s is gone already", p.Node)
				return engine.ErrSkip
			}
			return fmt.Errorf("the cluster has no node %s", p.Node)
		}
		if err != nil {
			return fmt.Errorf("read node %s: %w", p.Node, err)
		}
		if n.Spec.Unschedulable == on {
			if on {
				jc.Note("%s is cordoned already", p.Node)
			} else {
				jc.Note("%s is schedulable already", p.Node)
			}
			return nil
		}
		patch := fmt.Appendf(nil, `{"spec":{"unschedulable":%t}}`, on)
		if _, err := c.Clientset.CoreV1().Nodes().Patch(ctx, p.Node, types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: kube.FieldManager}); err != nil {
			return fmt.Errorf("patch node %s: %w", p.Node, err)
		}
		if on {
			jc.Note("Cordoned %s: no new pods are scheduled on it", p.Node)
		} else {
			jc.Note("Uncordoned %s: pods are scheduled on it again", p.Node)
		}
		return nil
	})
}

// evictStep evicts every pod of a node through the Eviction API, which respects
// PodDisruptionBudgets, and waits until they are gone.
func (s *Service) evictStep(p NodeParams) engine.Step {
	return s.RegionStep("evict", "Evict the pods of "+p.Node, func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
		return s.evictPods(ctx, jc, c, p.Node, p.timeout(s.Cfg.InstallTimeout))
	})
}

// drainSkip says why a pod stays on a drained node ("" when it is evicted).
func drainSkip(p *corev1.Pod) string {
	if _, ok := p.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return "mirror pod"
	}
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" {
			return "DaemonSet pod"
		}
	}
	return ""
}

func (s *Service) evictPods(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, node string, timeout time.Duration) error {
	if _, err := c.Clientset.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		if jc.Job.Kind == KindNodeDelete {
			jc.Note("Node %s is gone already", node)
			return engine.ErrSkip
		}
		return fmt.Errorf("the cluster has no node %s", node)
	} else if err != nil {
		return fmt.Errorf("read node %s: %w", node, err)
	}
	d := &drain{s: s, jc: jc, c: c, node: node, evicted: map[string]bool{}, blockedBy: map[string]string{}}
	err := jc.Wait(ctx, "the pods to leave "+node, engine.WaitOpts{Timeout: timeout, Interval: 2 * time.Second,
		Hint: node + " stays cordoned: relax the PodDisruptionBudget or give its pods room on other nodes, then Retry"}, d.round)
	if err != nil {
		return err
	}
	msg := fmt.Sprintf("%s is drained: %d pod(s) evicted", node, len(d.evicted))
	if d.skipped > 0 {
		msg += fmt.Sprintf("; %d DaemonSet or mirror pod(s) stay", d.skipped)
	}
	jc.Note("%s", msg)
	return nil
}

// drain is the state of one node's drain across its rounds: what it evicted, what
// blocks which pod (logged once per change), and the pods that stay.
type drain struct {
	s         *Service
	jc        *engine.JobContext
	c         *kube.Cluster
	node      string
	evicted   map[string]bool
	blockedBy map[string]string
	skipped   int
	rounds    int
}

// round evicts what may go and reports whether the node is empty, and what is left.
func (d *drain) round(ctx context.Context) (bool, string, error) {
	n, err := d.c.Clientset.CoreV1().Nodes().Get(ctx, d.node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true, "", nil
	}
	if err != nil {
		return false, "", fmt.Errorf("read node %s: %w", d.node, err)
	}
	lost, _ := kube.NodeHeartbeat(n, d.c.NodeLeaseRenewal(ctx, d.node), time.Now())
	pods, err := d.c.Clientset.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + d.node})
	if err != nil {
		return false, "", fmt.Errorf("list the pods of %s: %w", d.node, err)
	}
	var left []string
	d.skipped = 0
	for i := range pods.Items {
		pod := &pods.Items[i]
		switch {
		case drainSkip(pod) != "":
			d.skipped++
		case pod.DeletionTimestamp != nil && lost == kube.NodeNoHeartbeat:
			// Nothing on the node confirms the pod's end: it goes with the node.
		case pod.DeletionTimestamp != nil:
			left = append(left, pod.Namespace+"/"+pod.Name+" (terminating)")
		default:
			why, err := d.evict(ctx, pod)
			if err != nil {
				return false, "", err
			}
			if why != "" {
				left = append(left, pod.Namespace+"/"+pod.Name+" ("+why+")")
			}
		}
	}
	if d.rounds == 0 && d.skipped > 0 {
		d.jc.Logf("%d DaemonSet or mirror pod(s) stay on %s", d.skipped, d.node)
	}
	d.rounds++
	if len(left) == 0 {
		return true, "", nil
	}
	shown := left
	if len(shown) > 5 {
		shown = append(append([]string{}, left[:5]...), fmt.Sprintf("and %d more", len(left)-5))
	}
	return false, fmt.Sprintf("%d pod(s) left: %s", len(left), strings.Join(shown, ", ")), nil
}

// evict asks to evict one pod; it says why the pod is still there ("" when it is gone),
// or fails when the console may not evict at all.
func (d *drain) evict(ctx context.Context, pod *corev1.Pod) (string, error) {
	key := pod.Namespace + "/" + pod.Name
	err := evict(ctx, d.c, pod)
	why := ""
	switch {
	case err == nil:
		if !d.evicted[key] {
			d.jc.Logf("Evicted pod %s", key)
			d.evicted[key] = true
		}
		return "terminating", nil
	case apierrors.IsNotFound(err):
		return "", nil
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		return "", fmt.Errorf("evict pod %s: %w", key, err)
	case apierrors.IsTooManyRequests(err):
		blocked, detail := d.s.pdbBlocking(ctx, d.c, pod, err)
		why = blocked
		if d.blockedBy[key] != blocked+detail {
			d.jc.Logf("waiting for pod %s: %s%s", key, blocked, detail)
			d.blockedBy[key] = blocked + detail
		}
	default:
		why = "eviction failed: " + kube.Short(err)
		if d.blockedBy[key] != why {
			d.jc.Logf("waiting for pod %s: %s", key, why)
			d.blockedBy[key] = why
		}
	}
	return why, nil
}

// evictTimeout bounds one eviction request: the drain's own deadline stays in charge.
const evictTimeout = 10 * time.Second

// evict asks the Eviction API to evict a pod, once. client-go would retry a 429 refusal
// (it carries Retry-After) for half a minute per pod and overrun the drain's deadline; a
// refusal here comes back at once, and the drain's wait asks again on its next round.
func evict(ctx context.Context, c *kube.Cluster, pod *corev1.Pod) error {
	ctx, cancel := context.WithTimeout(ctx, evictTimeout)
	defer cancel()
	ev := &policyv1.Eviction{TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "Eviction"},
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace}}
	return c.Clientset.CoreV1().RESTClient().Post().MaxRetries(0).Namespace(pod.Namespace).Resource("pods").
		Name(pod.Name).SubResource("eviction").Body(ev).Do(ctx).Error()
}

// refusingBudget reads the PodDisruptionBudget an eviction's 429 names in its causes.
func refusingBudget(err error) string {
	var st apierrors.APIStatus
	if !errors.As(err, &st) || st.Status().Details == nil {
		return ""
	}
	for _, c := range st.Status().Details.Causes {
		if c.Type == policyv1.DisruptionBudgetCause {
			if i := strings.Index(c.Message, "The disruption budget "); i >= 0 {
				if f := strings.Fields(c.Message[i+len("The disruption budget "):]); len(f) > 0 {
					return f[0]
				}
			}
		}
	}
	return ""
}

// pdbBlocking names the PodDisruptionBudget that refused a pod's eviction, and its state.
func (s *Service) pdbBlocking(ctx context.Context, c *kube.Cluster, pod *corev1.Pod, evictErr error) (string, string) {
	named := refusingBudget(evictErr)
	pdbs, err := c.Clientset.PolicyV1().PodDisruptionBudgets(pod.Namespace).List(ctx, metav1.ListOptions{})
	if err == nil {
		var names []string
		detail := ""
		for _, pdb := range pdbs.Items {
			sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
			if named != "" && pdb.Name != named || named == "" && (err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels))) {
				continue
			}
			names = append(names, pdb.Namespace+"/"+pdb.Name)
			detail = fmt.Sprintf(": it allows %d disruption(s) now, with %d healthy pod(s) of %d needed",
				pdb.Status.DisruptionsAllowed, pdb.Status.CurrentHealthy, pdb.Status.DesiredHealthy)
		}
		if len(names) == 1 {
			return "blocked by PodDisruptionBudget " + names[0], detail
		}
		if len(names) > 1 {
			return "blocked by PodDisruptionBudgets " + strings.Join(names, ", "), ""
		}
	}
	if named != "" {
		return "blocked by PodDisruptionBudget " + pod.Namespace + "/" + named, ""
	}
	return "blocked by a PodDisruptionBudget", ": " + kube.Short(evictErr)
}

// deleteNode deletes the Node object and takes it out of the region's dedicated workers.
func (s *Service) deleteNode(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster, name string) error {
	_, err := c.Clientset.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		jc.Logf("Node %s is gone already", name)
	case err != nil:
		return fmt.Errorf("read node %s: %w", name, err)
	default:
		if err := c.Clientset.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete node %s: %w", name, err)
		}
	}
	var keep []string
	for _, w := range r.Nodes {
		if w != name {
			keep = append(keep, w)
		}
	}
	if len(keep) != len(r.Nodes) {
		if err := s.Store.SetRegionNodes(ctx, r.ID, keep); err != nil {
			return err
		}
		jc.Logf("%s is no longer one of the region's dedicated workers", name)
	}
	jc.Note("Deleted node %s from the cluster; the machine itself is not touched", name)
	return nil
}

// NodeExists reads one node of a region's cluster (nil, nil when it has none).
func (s *Service) NodeExists(ctx context.Context, r *store.Region, name string) (*corev1.Node, error) {
	c, err := s.RegionCluster(r)
	if err != nil {
		return nil, err
	}
	n, err := c.Clientset.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("region %s: read node %s: %w", r.Name, name, err)
	}
	return n, nil
}

// NodeDeletePreflight checks the delete of a node of a region's cluster; found is false
// when the cluster has no such node.
func (s *Service) NodeDeletePreflight(ctx context.Context, r *store.Region, name string) (NodeDeleteCheck, bool, error) {
	c, err := s.RegionCluster(r)
	if err != nil {
		return NodeDeleteCheck{}, false, err
	}
	nodes, err := c.Clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return NodeDeleteCheck{}, false, fmt.Errorf("region %s: list nodes: %w", r.Name, err)
	}
	d, found := CheckNodeDelete(nodes.Items, name)
	if found && d.ControlPlane && d.Refused == "" {
		if d.Etcd, err = checkEtcdDelete(ctx, c, name); err != nil {
			return d, found, fmt.Errorf("region %s: %w", r.Name, err)
		}
		d.Refused = d.Etcd.Refused
	}
	return d, found, nil
}

// NodeNames lists the names of a region cluster's nodes.
func (s *Service) NodeNames(ctx context.Context, r *store.Region) ([]string, error) {
	nodes, err := s.clusterNodes(ctx, r)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	return names, nil
}

// clusterNodes lists the nodes of a region's cluster.
func (s *Service) clusterNodes(ctx context.Context, r *store.Region) ([]corev1.Node, error) {
	c, err := s.RegionCluster(r)
	if err != nil {
		return nil, err
	}
	nodes, err := c.Clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("region %s: list nodes: %w", r.Name, err)
	}
	return nodes.Items, nil
}

// NodeActions are the node actions that run as jobs, by the name in their route, with
// the verb of their titles.
var NodeActions = map[string]struct{ Kind, Verb string }{
	"cordon":   {KindNodeCordon, "Cordon"},
	"uncordon": {KindNodeUncordon, "Uncordon"},
	"drain":    {KindNodeDrain, "Drain"},
}

// NodeAction queues a cordon, uncordon or drain (action) of a node the cluster has;
// timeoutSeconds bounds a drain's wait for the pods to leave (0: the install timeout).
func (s *Service) NodeAction(ctx context.Context, actor kit.Actor, r *store.Region, action, node string, timeoutSeconds int) (*store.Job, error) {
	a, ok := NodeActions[action]
	if !ok {
		return nil, fmt.Errorf("node action %q: %w", action, store.ErrNotFound)
	}
	if timeoutSeconds < 0 || timeoutSeconds > 24*3600 {
		return nil, &problem.Invalid{Fields: map[string]string{"timeout_seconds": "Use 1 to 86400 seconds, or leave it out."}}
	}
	if err := s.notUpgrading(ctx, r); err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, ClusterReadTimeout)
	defer cancel()
	n, err := s.NodeExists(cctx, r, node)
	if err != nil {
		return nil, &problem.Unreachable{Region: r.Name, Err: err}
	}
	if n == nil {
		return nil, &problem.Missing{Reason: noNode(node)}
	}
	j, err := s.Enqueue(ctx, engine.Request{Kind: a.Kind, Title: a.Verb + " node " + node + " of " + r.Name,
		Subject: r.ID, Params: NodeParams{Node: node, TimeoutSeconds: timeoutSeconds}, CreatedBy: actor.Email})
	if err != nil {
		return nil, err
	}
	s.Log.Info("node action", "region", r.Name, "node", node, "action", action, "user", actor.Email)
	return j, nil
}

// DeleteNode checks and queues the delete of a node from the region's cluster: the last
// control-plane node is refused, and the check's warning (an even number of
// control-plane nodes left) comes back with the job.
func (s *Service) DeleteNode(ctx context.Context, actor kit.Actor, r *store.Region, node string) (*store.Job, NodeDeleteCheck, error) {
	if err := s.notUpgrading(ctx, r); err != nil {
		return nil, NodeDeleteCheck{}, err
	}
	cctx, cancel := context.WithTimeout(ctx, ClusterReadTimeout)
	defer cancel()
	d, found, err := s.NodeDeletePreflight(cctx, r, node)
	if err != nil {
		return nil, d, &problem.Unreachable{Region: r.Name, Err: err}
	}
	if !found {
		return nil, d, &problem.Missing{Reason: noNode(node)}
	}
	if d.Refused != "" {
		return nil, d, &problem.Refused{Reason: d.Refused}
	}
	j, err := s.Enqueue(ctx, engine.Request{Kind: KindNodeDelete, Title: "Delete node " + node + " from the cluster of " + r.Name,
		Subject: r.ID, Params: NodeParams{Node: node}, CreatedBy: actor.Email})
	if err != nil {
		return nil, d, err
	}
	s.Log.Info("node delete", "region", r.Name, "node", node, "warning", d.Warning, "user", actor.Email)
	return j, d, nil
}

// NodesExist checks a worker selection against the cluster's nodes ("" when each exists).
func NodesExist(selected []string, nodes []kit.NodeInfo) string {
	have := map[string]bool{}
	for _, n := range nodes {
		have[n.Name] = true
	}
	for _, n := range selected {
		if !have[n] {
			return noNode(n)
		}
	}
	return ""
}

// noNode says that the cluster has no node of that name.
func noNode(name string) string { return fmt.Sprintf("The cluster has no node %q.", name) }

// validateOvercommit checks the FaaS overcommit factors that are sent.
func validateOvercommit(in OvercommitInput) map[string]string {
	errs := map[string]string{}
	check := func(key string, v *float64) {
		if v != nil && (*v < MinOvercommit || *v > MaxOvercommit) {
			errs[key] = fmt.Sprintf("Use a factor from %d to %d.", MinOvercommit, MaxOvercommit)
		}
	}
	check("faas_cpu_overcommit", in.CPU)
	check("faas_memory_overcommit", in.Memory)
	if in.CPU == nil && in.Memory == nil {
		errs["faas_cpu_overcommit"] = "Send faas_cpu_overcommit, faas_memory_overcommit or both."
	}
	return errs
}
