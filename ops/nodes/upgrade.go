package nodes

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"runr.dev/console/engine"
	"runr.dev/console/helm"
	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/problem"
	"runr.dev/console/store"
)

// Rancher's system-upgrade-controller, which upgrades k3s and rke2 node by node through
// Plans: the chart of charts.rancher.io, whose templates all go to cattle-system.
var ChartSystemUpgradeController = helm.ChartRef{Repo: "https://charts.rancher.io", Name: "system-upgrade-controller", Version: "105.0.0"}

// Where the system-upgrade-controller runs, and its Plans with it.
const (
	SUCRelease   = "system-upgrade-controller"
	SUCNamespace = "cattle-system"
	// SUCServiceAccount is the chart's account (bound to cluster-admin): the upgrade Jobs
	// run with it.
	SUCServiceAccount = "system-upgrade-controller"
)

// KindKubernetesUpgrade is the job that upgrades a k3s or rke2 cluster node by node.
const KindKubernetesUpgrade = "kubernetes-upgrade"

// The Plans of an upgrade: the control-plane nodes first, then the others, one at a time.
const (
	PlanControlPlane = "runr-control-plane"
	PlanWorkers      = "runr-workers"
)

// SUCValues are the values the console sends to the system-upgrade-controller's chart:
// none (its images at the chart's version; the console's mirror rewrites them).
func SUCValues() map[string]any { return map[string]any{} }

var gvrPlan = schema.GroupVersionResource{Group: "upgrade.cattle.io", Version: "v1", Resource: "plans"}

// UpgradeInput is the body of POST /api/knative-regions/{id}/kubernetes-upgrade.
type UpgradeInput struct {
	// Version is the release to upgrade to, such as v1.34.2+k3s1.
	Version string `json:"version"`
	// TimeoutSeconds bounds each node's upgrade (0: 15 minutes).
	TimeoutSeconds int `json:"timeout_seconds"`
}

// upgradeParams are the upgrade job's parameters.
type upgradeParams struct {
	Version        string `json:"version"`
	Distribution   string `json:"distribution"`
	TimeoutSeconds int    `json:"timeout_seconds"`
}

// upgradeImages are the upgrade images of the distributions the console upgrades.
var upgradeImages = map[string]string{"k3s": "rancher/k3s-upgrade", "rke2": "rancher/rke2-upgrade"}

// releaseVersion is a k3s or rke2 release: v1.MINOR.PATCH+k3sN or +rke2rN.
var releaseVersion = regexp.MustCompile(`^v1\.(\d+)\.(\d+)\+(k3s|rke2r)(\d+)$`)

// parseRelease reads a release's minor, patch and build, with its distribution.
func parseRelease(v string) (dist string, n [3]int, ok bool) {
	m := releaseVersion.FindStringSubmatch(v)
	if m == nil {
		return "", n, false
	}
	for i, s := range []string{m[1], m[2], m[4]} {
		n[i], _ = strconv.Atoi(s)
	}
	dist = "k3s"
	if m[3] == "rke2r" {
		dist = "rke2"
	}
	return dist, n, true
}

func compareRelease(a, b [3]int) int { return slices.Compare(a[:], b[:]) }

// CheckUpgradeTarget says why the cluster cannot be upgraded to a version ("" when it
// can): only k3s and rke2, a release of the cluster's distribution, newer than every node
// runs (no downgrade), and at most one minor version above the oldest node.
func CheckUpgradeTarget(u Upgrades, target string) string {
	img := upgradeImages[u.Distribution]
	example := "v1.34.2+k3s1"
	if u.Distribution == "rke2" {
		example = "v1.34.2+rke2r1"
	}
	switch {
	case img == "":
		return "The console upgrades k3s and rke2 clusters only (through Rancher's system-upgrade-controller). " + u.Why
	case strings.TrimSpace(target) == "":
		return "Give the release to upgrade to, such as " + example + "."
	}
	dist, want, ok := parseRelease(target)
	if !ok || dist != u.Distribution {
		return fmt.Sprintf("%q is not a %s release: use one such as %s.", target, u.Distribution, example)
	}
	newer, oldestMinor := false, -1
	for _, v := range u.Versions {
		_, have, ok := parseRelease(v.Version)
		if !ok {
			return fmt.Sprintf("%s run %q, which is not a %s release: upgrade them by hand.", strings.Join(v.Nodes, ", "), v.Version, u.Distribution)
		}
		if compareRelease(want, have) < 0 {
			return fmt.Sprintf("%s is older than %s on %s: the console does not downgrade.", target, v.Version, strings.Join(v.Nodes, ", "))
		}
		if compareRelease(want, have) > 0 {
			newer = true
		}
		if oldestMinor < 0 || have[0] < oldestMinor {
			oldestMinor = have[0]
		}
	}
	switch {
	case !newer:
		return "Every node runs " + target + " already."
	case want[0] > oldestMinor+1:
		return fmt.Sprintf("Upgrade one minor version at a time: the oldest node runs 1.%d, so the next is a 1.%d release.", oldestMinor, oldestMinor+1)
	}
	return ""
}

// UpgradeKubernetes checks and queues a node-by-node upgrade of the region's cluster.
func (s *Service) UpgradeKubernetes(ctx context.Context, actor kit.Actor, r *store.Region, in UpgradeInput) (*store.Job, error) {
	if in.TimeoutSeconds < 0 || in.TimeoutSeconds > 24*3600 {
		return nil, &problem.Invalid{Fields: map[string]string{"timeout_seconds": "Use 1 to 86400 seconds per node, or leave it out."}}
	}
	cctx, cancel := context.WithTimeout(ctx, ClusterReadTimeout)
	defer cancel()
	nodes, err := s.clusterNodes(cctx, r)
	if err != nil {
		return nil, &problem.Unreachable{Region: r.Name, Err: err}
	}
	u := clusterUpgrades(nodes)
	in.Version = strings.TrimSpace(in.Version)
	if why := CheckUpgradeTarget(u, in.Version); why != "" {
		return nil, &problem.Invalid{Fields: map[string]string{"version": why}}
	}
	if err := s.notUpgrading(ctx, r); err != nil {
		return nil, err
	}
	if busy, err := s.Busy(ctx, r.ID, KindNodeDrain, KindNodeDelete); err != nil || busy {
		if err != nil {
			return nil, err
		}
		return nil, &problem.Conflict{Reason: "A node of this cluster is being drained or deleted: upgrade once that job ends."}
	}
	j, err := s.Enqueue(ctx, engine.Request{Kind: KindKubernetesUpgrade, Title: "Upgrade the cluster of " + r.Name + " to " + in.Version + ", node by node",
		Subject: r.ID, Params: upgradeParams{Version: in.Version, Distribution: u.Distribution, TimeoutSeconds: in.TimeoutSeconds}, CreatedBy: actor.Email})
	if err != nil {
		return nil, err
	}
	s.Log.Info("kubernetes upgrade", "region", r.Name, "version", in.Version, "user", actor.Email)
	return j, nil
}

// notUpgrading refuses a node action while an upgrade of the cluster runs: the upgrade
// cordons, drains and uncordons the nodes itself.
func (s *Service) notUpgrading(ctx context.Context, r *store.Region) error {
	busy, err := s.Busy(ctx, r.ID, KindKubernetesUpgrade)
	if err != nil {
		return err
	}
	if busy {
		return &problem.Conflict{Reason: "An upgrade of this cluster is under way: it cordons, drains and uncordons each node in turn. Follow it on the Workers tab, and act on the nodes once it ends."}
	}
	return nil
}

// upgradePlan is one Plan of an upgrade: its name, what it upgrades, and its nodes.
type upgradePlan struct {
	name, what string
	selector   metav1.LabelSelectorRequirement
}

var (
	controlPlanePlan = upgradePlan{name: PlanControlPlane, what: "control-plane nodes",
		selector: metav1.LabelSelectorRequirement{Key: "node-role.kubernetes.io/control-plane", Operator: metav1.LabelSelectorOpExists}}
	workersPlan = upgradePlan{name: PlanWorkers, what: "other nodes",
		selector: metav1.LabelSelectorRequirement{Key: "node-role.kubernetes.io/control-plane", Operator: metav1.LabelSelectorOpDoesNotExist}}
)

func (s *Service) registerUpgradeKind() {
	s.Engine.Register(&engine.Kind{Name: KindKubernetesUpgrade, Plan: func(jc *engine.JobContext) ([]engine.Step, error) {
		var p upgradeParams
		if err := jc.Params(&p); err != nil {
			return nil, err
		}
		if p.Version == "" || upgradeImages[p.Distribution] == "" {
			return nil, errors.New("the job names no k3s or rke2 release")
		}
		return []engine.Step{
			s.RegionStep("controller", "Install Rancher's system-upgrade-controller", s.installSUC),
			s.RegionStep("control-plane", "Upgrade the control-plane nodes one at a time (cordon, drain, upgrade, uncordon)", func(ctx context.Context, jc *engine.JobContext, _ *store.Region, c *kube.Cluster) error {
				return runPlan(ctx, jc, c, p, controlPlanePlan)
			}),
			s.RegionStep("workers", "Upgrade the other nodes one at a time (cordon, drain, upgrade, uncordon)", func(ctx context.Context, jc *engine.JobContext, _ *store.Region, c *kube.Cluster) error {
				return runPlan(ctx, jc, c, p, workersPlan)
			}),
			s.RegionStep("verify", "Check every node's kubelet version", func(ctx context.Context, jc *engine.JobContext, _ *store.Region, c *kube.Cluster) error {
				return verifyUpgrade(ctx, jc, c, p.Version)
			}),
		}, nil
	}})
}

// installSUC installs the system-upgrade-controller and waits for the Plan CRD it
// registers when it starts.
func (s *Service) installSUC(ctx context.Context, jc *engine.JobContext, _ *store.Region, c *kube.Cluster) error {
	rel, err := s.HelmApply(ctx, jc, c, kit.Release{Namespace: SUCNamespace, Name: SUCRelease, Chart: ChartSystemUpgradeController, Values: SUCValues()})
	if err != nil {
		return err
	}
	if err := kit.WaitRelease(ctx, jc, c, rel, engine.WaitOpts{}); err != nil {
		return err
	}
	crd := schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
	return jc.Wait(ctx, "CRD plans.upgrade.cattle.io, which the controller registers when it starts", engine.WaitOpts{Hint: "read the controller's logs in " + SUCNamespace},
		func(ctx context.Context) (bool, string, error) {
			_, found, err := c.Get(ctx, crd, "", "plans.upgrade.cattle.io")
			return found, "", err
		})
}

// planObject is an upgrade's Plan: concurrency 1, the drain of kubectl with --force (as
// upstream's examples), every taint tolerated (dedicated workers and control planes too).
func planObject(p upgradeParams, pl upgradePlan) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "upgrade.cattle.io/v1", "kind": "Plan",
		"metadata": map[string]any{"name": pl.name, "namespace": SUCNamespace, "labels": map[string]any{"app.kubernetes.io/managed-by": "runr"}},
		"spec": map[string]any{
			"concurrency":        int64(1),
			"serviceAccountName": SUCServiceAccount,
			"version":            p.Version,
			"nodeSelector":       map[string]any{"matchExpressions": []any{map[string]any{"key": pl.selector.Key, "operator": string(pl.selector.Operator)}}},
			"tolerations":        []any{map[string]any{"operator": "Exists"}},
			"cordon":             true,
			"drain":              map[string]any{"force": true, "ignoreDaemonSets": true, "deleteEmptydirData": true, "skipWaitForDeleteTimeout": int64(60)},
			"upgrade":            map[string]any{"image": upgradeImages[p.Distribution]},
		},
	}}
}

// runPlan applies one Plan and follows it until each of its nodes runs the release and is
// schedulable again, logging each node's stages and the API's answers meanwhile.
func runPlan(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, p upgradeParams, pl upgradePlan) error {
	sel, _ := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{pl.selector}})
	nodes, err := c.Clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return fmt.Errorf("list the %s: %w", pl.what, err)
	}
	if len(nodes.Items) == 0 {
		jc.Note("The cluster has no %s", pl.what)
		return engine.ErrSkip
	}
	u := planObject(p, pl)
	if _, err := c.Dynamic.Resource(gvrPlan).Namespace(SUCNamespace).Apply(ctx, pl.name, u, metav1.ApplyOptions{FieldManager: "runr", Force: true}); err != nil {
		return fmt.Errorf("apply Plan %s: %w", pl.name, err)
	}
	api := watchAPI(ctx, c)
	defer func() {
		if answered, asked, gap := api(); answered < asked {
			jc.Warnf("The Kubernetes API did not answer %d of %d probes while the %s were upgraded (longest gap %s)", asked-answered, asked, pl.what, gap)
		} else {
			jc.Logf("The Kubernetes API answered all %d probes (one a second) while the %s were upgraded", asked, pl.what)
		}
	}()
	timeout := 15 * time.Minute
	if p.TimeoutSeconds > 0 {
		timeout = time.Duration(p.TimeoutSeconds) * time.Second
	}
	seen := map[string]string{}
	var failed error
	err = jc.Wait(ctx, fmt.Sprintf("the %s to be upgraded to %s one at a time", pl.what, p.Version),
		engine.WaitOpts{Timeout: timeout * time.Duration(len(nodes.Items)), Interval: time.Second, Hint: "read the upgrade Jobs in " + SUCNamespace},
		func(ctx context.Context) (bool, string, error) {
			prog, err := PlanProgress(ctx, c, pl.name)
			if err != nil {
				return false, "", err
			}
			done := prog.Hash != ""
			var parts []string
			for _, n := range prog.Nodes {
				line := n.Stage + n.Detail
				if seen[n.Node] != line {
					seen[n.Node] = line
					jc.Logf("%s: %s%s", n.Node, n.Stage, n.Detail)
				}
				if n.Stage == StageFailed {
					failed = fmt.Errorf("the upgrade of %s failed%s; it stays cordoned: read its Job's logs in %s, then run the upgrade again or uncordon it", n.Node, n.Detail, SUCNamespace)
				}
				done = done && n.Stage == StageUncordoned
				parts = append(parts, n.Node+" "+n.Stage+n.Detail)
			}
			if failed != nil {
				return true, "", nil
			}
			return done, strings.Join(parts, "; "), nil
		})
	if err == nil {
		err = failed
	}
	if err != nil {
		return err
	}
	jc.Note("The %s run %s", pl.what, p.Version)
	return nil
}

// The stages of a node in an upgrade, as the cluster shows them.
const (
	StageWaiting    = "waiting"
	StageStarting   = "starting"
	StageCordoned   = "cordoned"
	StageDraining   = "draining"
	StageDrained    = "drained"
	StageUpgraded   = "upgraded"
	StageUncordoned = "uncordoned"
	StageFailed     = "failed"
)

// Progress is a Plan's nodes and how far each got.
type Progress struct {
	Plan    string `json:"plan"`
	Version string `json:"version"`
	// Hash is the Plan's resolved hash ("" until the controller resolved it).
	Hash  string         `json:"-"`
	Nodes []NodeProgress `json:"nodes"`
}

// NodeProgress is a node's stage in an upgrade, with what it shows (", 2 pods left").
type NodeProgress struct {
	Node    string `json:"node"`
	Stage   string `json:"stage"`
	Detail  string `json:"detail,omitempty"`
	Kubelet string `json:"kubelet_version"`
}

// PlanProgress reads how far a Plan's nodes are: the node's label and kubelet version,
// its upgrade Job, and the pods its drain still has to move (naming a refusing
// PodDisruptionBudget).
func PlanProgress(ctx context.Context, c *kube.Cluster, plan string) (*Progress, error) {
	u, err := c.Dynamic.Resource(gvrPlan).Namespace(SUCNamespace).Get(ctx, plan, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read Plan %s: %w", plan, err)
	}
	target, _, _ := unstructured.NestedString(u.Object, "spec", "version")
	prog := &Progress{Plan: plan, Version: target}
	prog.Hash, _, _ = unstructured.NestedString(u.Object, "status", "latestHash")
	sel, err := selectorOf(u)
	if err != nil {
		return nil, err
	}
	nodes, err := c.Clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list the nodes of Plan %s: %w", plan, err)
	}
	jobs, err := c.Clientset.BatchV1().Jobs(SUCNamespace).List(ctx, metav1.ListOptions{LabelSelector: "upgrade.cattle.io/plan=" + plan})
	if err != nil {
		return nil, fmt.Errorf("list the upgrade Jobs of Plan %s: %w", plan, err)
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		np := NodeProgress{Node: n.Name, Kubelet: n.Status.NodeInfo.KubeletVersion}
		job := nodeJob(jobs.Items, n.Name)
		upgraded := np.Kubelet == target
		switch {
		case upgraded && prog.Hash != "" && n.Labels["plan.upgrade.cattle.io/"+plan] == prog.Hash:
			np.Stage = StageUncordoned
			if n.Spec.Unschedulable {
				np.Stage = StageUpgraded
			}
		case job == nil:
			np.Stage = StageWaiting
		case jobFailed(job) != "":
			np.Stage, np.Detail = StageFailed, ": "+jobFailed(job)
		case upgraded:
			np.Stage = StageUpgraded
		case !n.Spec.Unschedulable:
			np.Stage = StageStarting
		default:
			np.Stage, np.Detail, err = drainState(ctx, c, n.Name)
			if err != nil {
				return nil, err
			}
		}
		if np.Stage == StageUpgraded || np.Stage == StageUncordoned {
			np.Detail = " (kubelet " + np.Kubelet + ")"
		}
		prog.Nodes = append(prog.Nodes, np)
	}
	return prog, nil
}

func selectorOf(u *unstructured.Unstructured) (string, error) {
	raw, _, _ := unstructured.NestedMap(u.Object, "spec", "nodeSelector")
	var ls metav1.LabelSelector
	if exprs, ok := raw["matchExpressions"].([]any); ok {
		for _, e := range exprs {
			m, _ := e.(map[string]any)
			req := metav1.LabelSelectorRequirement{Key: fmt.Sprint(m["key"]), Operator: metav1.LabelSelectorOperator(fmt.Sprint(m["operator"]))}
			if vs, ok := m["values"].([]any); ok {
				for _, v := range vs {
					req.Values = append(req.Values, fmt.Sprint(v))
				}
			}
			ls.MatchExpressions = append(ls.MatchExpressions, req)
		}
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		return "", fmt.Errorf("Plan %s nodeSelector: %w", u.GetName(), err)
	}
	return sel.String(), nil
}

// nodeJob is the newest upgrade Job of a node.
func nodeJob(jobs []batchv1.Job, node string) *batchv1.Job {
	var newest *batchv1.Job
	for i := range jobs {
		j := &jobs[i]
		if j.Labels["upgrade.cattle.io/node"] == node && (newest == nil || j.CreationTimestamp.After(newest.CreationTimestamp.Time)) {
			newest = j
		}
	}
	return newest
}

// jobFailed is the message of a failed Job ("" while it has not failed).
func jobFailed(j *batchv1.Job) string {
	for _, cd := range j.Status.Conditions {
		if cd.Type == batchv1.JobFailed && cd.Status == corev1.ConditionTrue {
			return kit.OrDefault(cd.Message, cd.Reason)
		}
	}
	return ""
}

// drainState is a cordoned node's drain: the pods still to move (DaemonSet and mirror pods
// stay, as kubectl drain leaves them) and a PodDisruptionBudget that holds one.
func drainState(ctx context.Context, c *kube.Cluster, node string) (string, string, error) {
	pods, err := c.Clientset.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node, LabelSelector: "!upgrade.cattle.io/controller"})
	if err != nil {
		return "", "", fmt.Errorf("list the pods of %s: %w", node, err)
	}
	var left []*corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		if drainSkip(p) != "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		left = append(left, p)
	}
	if len(left) == 0 {
		return StageDrained, "", nil
	}
	detail := fmt.Sprintf(", %d pod(s) left", len(left))
	if held := heldByBudgets(ctx, c, left); len(held) > 0 {
		detail += ": blocked by PodDisruptionBudget " + strings.Join(held, ", ")
	}
	return StageDraining, detail, nil
}

// heldByBudgets names the PodDisruptionBudgets that allow no disruption now and select one
// of the pods, with their state.
func heldByBudgets(ctx context.Context, c *kube.Cluster, pods []*corev1.Pod) []string {
	var out []string
	byNS := map[string][]*corev1.Pod{}
	for _, p := range pods {
		byNS[p.Namespace] = append(byNS[p.Namespace], p)
	}
	for ns, ps := range byNS {
		pdbs, err := c.Clientset.PolicyV1().PodDisruptionBudgets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for _, pdb := range pdbs.Items {
			sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
			if err != nil || sel.Empty() || pdb.Status.DisruptionsAllowed > 0 {
				continue
			}
			if slices.ContainsFunc(ps, func(p *corev1.Pod) bool { return sel.Matches(labels.Set(p.Labels)) }) {
				out = append(out, fmt.Sprintf("%s/%s (it allows 0 disruptions, with %d healthy pod(s) of %d needed)", ns, pdb.Name, pdb.Status.CurrentHealthy, pdb.Status.DesiredHealthy))
			}
		}
	}
	slices.Sort(out)
	return out
}

// watchAPI asks the API server's /readyz once a second until ctx ends or the returned
// function is called, which stops it and says how many answered, of how many, and the
// longest time without an answer.
func watchAPI(ctx context.Context, c *kube.Cluster) func() (answered, asked int, gap time.Duration) {
	ctx, cancel := context.WithCancel(ctx)
	var (
		mu      sync.Mutex
		ok, n   int
		lastOK  = time.Now()
		longest time.Duration
		wg      sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
			err := c.Clientset.Discovery().RESTClient().Get().AbsPath("/readyz").Do(rctx).Error()
			rcancel()
			if ctx.Err() != nil {
				return
			}
			mu.Lock()
			n++
			if err == nil {
				ok++
				lastOK = time.Now()
			} else if d := time.Since(lastOK); d > longest {
				longest = d
			}
			mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() (int, int, time.Duration) {
		cancel()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return ok, n, longest.Round(time.Second)
	}
}

// verifyUpgrade checks that every node runs the release, then deletes the Plans so that a
// node added later is not upgraded behind the console's back.
func verifyUpgrade(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, target string) error {
	nodes, err := c.Clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	var behind []string
	for _, n := range nodes.Items {
		if v := n.Status.NodeInfo.KubeletVersion; v != target {
			behind = append(behind, n.Name+" ("+v+")")
		}
	}
	if len(behind) > 0 {
		return fmt.Errorf("these nodes do not run %s: %s (a node added during the upgrade is not in its Plans: run the upgrade again)", target, strings.Join(behind, ", "))
	}
	for _, name := range []string{PlanControlPlane, PlanWorkers} {
		if err := c.Dynamic.Resource(gvrPlan).Namespace(SUCNamespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete Plan %s: %w", name, err)
		}
	}
	jc.Note("Every node (%d) runs %s; the Plans are deleted, the controller stays for the next upgrade", len(nodes.Items), target)
	return nil
}
