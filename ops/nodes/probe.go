package nodes

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"runr.dev/console/agent/nodeprobe"
	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops/isolation"
	"runr.dev/console/ops/kit"
	"runr.dev/console/store"
)

// KindNodeProbe is the job that measures every node against the preflight floor.
const KindNodeProbe = "node-probe"

// NodeProbe is the name of the node probe's DaemonSet (in isolation.SandboxNamespace).
const NodeProbe = "runr-node-probe"

// The floor's measured part (clusters-and-nodes.md): cgroup v2 with these controllers,
// and room for images on the volume behind /var/lib/containerd.
var (
	CgroupControllers = []string{"cpu", "memory", "pids"}
	MinContainerdFree = uint64(15) << 30
)

// ProbeNodes queues the node probe of a region's cluster.
func (s *Service) ProbeNodes(ctx context.Context, actor kit.Actor, r *store.Region) (*store.Job, error) {
	return s.Enqueue(ctx, engine.Request{Kind: KindNodeProbe, Title: "Probe the nodes of " + r.Name + " against the preflight floor",
		Subject: r.ID, CreatedBy: actor.Email})
}

func (s *Service) registerProbeKind() {
	s.Engine.Register(&engine.Kind{Name: KindNodeProbe, Plan: func(*engine.JobContext) ([]engine.Step, error) {
		return []engine.Step{s.RegionStep("probe", "Probe every node: cgroup, disk, OS, egress", s.probeNodes)}, nil
	}})
}

// probeNodes runs the short-lived probe on every node: each pod writes its node's report
// as the annotation nodeprobe.Annotation (old reports are cleared first).
func (s *Service) probeNodes(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
	if err := isolation.EnsureNodeAccess(ctx, jc, c); err != nil {
		return err
	}
	list, err := c.Clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	clear := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:null}}}`, nodeprobe.Annotation)
	names := make([]string, len(list.Items))
	for i, n := range list.Items {
		names[i] = n.Name
		if _, err := c.Clientset.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, clear, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("clear the probe report of %s: %w", n.Name, err)
		}
	}
	image, err := s.RegionImage(ctx, r, s.Cfg.AgentImage)
	if err != nil {
		return err
	}
	if _, err := c.ApplyObject(ctx, isolation.NodeDaemonSet(NodeProbe, image, []string{"probe-node", "--root", "/host"}, nil)); err != nil {
		return err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10e9)
		defer cancel()
		_ = c.Delete(dctx, schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"}, isolation.SandboxNamespace, NodeProbe)
	}()
	if err := jc.Wait(ctx, "the node probe to report on every node", engine.WaitOpts{Hint: "read the probe's logs in " + isolation.SandboxNamespace},
		func(ctx context.Context) (bool, string, error) {
			var missing []string
			for _, name := range names {
				n, err := c.Clientset.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
				if err == nil && n.Annotations[nodeprobe.Annotation] == "" {
					missing = append(missing, name)
				}
			}
			return len(missing) == 0, "not yet on " + strings.Join(missing, ", "), nil
		}); err != nil {
		return err
	}
	list, err = c.Clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	var below []string
	for i := range list.Items {
		var failed []string
		for _, it := range probeItems(&list.Items[i]) {
			if it.Status == kit.CheckFail {
				failed = append(failed, it.Title+": "+it.Evidence)
			}
		}
		if len(failed) > 0 {
			below = append(below, list.Items[i].Name+" ("+strings.Join(failed, "; ")+")")
		}
	}
	if len(below) > 0 {
		jc.Warnf("Below the floor: %s", strings.Join(below, ", "))
	}
	jc.Note("Probed %d node(s); %d below the floor", len(list.Items), len(below))
	return nil
}

// probeItems are the floor's checks the node probe measured on a node, from its report;
// one advisory line when the node was not probed yet.
func probeItems(n *corev1.Node) []kit.CheckItem {
	raw := n.Annotations[nodeprobe.Annotation]
	if raw == "" {
		return []kit.CheckItem{{Key: "probe", Title: "Measured on the node", Status: kit.CheckWarn,
			Evidence: "not probed yet: cgroup, disk and egress are measured by the node probe (Probe nodes)"}}
	}
	var rep nodeprobe.Report
	if err := json.Unmarshal([]byte(raw), &rep); err != nil {
		return []kit.CheckItem{{Key: "probe", Title: "Measured on the node", Status: kit.CheckWarn, Evidence: "the probe's report is unreadable: " + err.Error()}}
	}
	item := func(key, title string, ok bool, evidence string) kit.CheckItem {
		st := kit.CheckPass
		if !ok {
			st = kit.CheckFail
		}
		return kit.CheckItem{Key: key, Title: title, Status: st, Evidence: evidence}
	}
	var missing []string
	for _, want := range CgroupControllers {
		if !slices.Contains(rep.Controllers, want) {
			missing = append(missing, want)
		}
	}
	cg := item("cgroup", "cgroup v2", rep.Cgroup == "v2" && len(missing) == 0, fmt.Sprintf("cgroup %s with %s", kit.OrDefault(rep.Cgroup, "unknown"), kit.OrNoneList(rep.Controllers)))
	switch {
	case rep.Cgroup != "v2":
		cg.Evidence = fmt.Sprintf("cgroup %s: Kubernetes needs cgroup v2 (boot with systemd.unified_cgroup_hierarchy=1)", kit.OrDefault(rep.Cgroup, "unknown"))
	case len(missing) > 0:
		cg.Evidence = fmt.Sprintf("cgroup v2 without the %s controller(s) (has %s)", strings.Join(missing, ", "), kit.OrNoneList(rep.Controllers))
	}
	items := []kit.CheckItem{cg,
		item("disk", "Free disk for images", rep.FreeBytes >= MinContainerdFree,
			fmt.Sprintf("%.1f GiB free on the volume of %s (at least %d GiB)", float64(rep.FreeBytes)/(1<<30), kit.OrDefault(rep.DiskPath, nodeprobe.ContainerdDir), MinContainerdFree>>30))}
	for _, e := range rep.Egress {
		items = append(items, item("egress:"+e.Target, "Reaches "+e.Target, e.OK, e.Detail))
	}
	return items
}
