package testcluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// The simulated system-upgrade-controller (rancher/system-upgrade-controller v0.14.2, the
// appVersion of the pinned chart 105.0.0: pkg/upgrade/controller.go, handle_upgrade.go,
// handle_batch.go, plan/plan.go, job/job.go; wrangler v3.0.0 pkg/name). While its
// Deployment (label upgrade.cattle.io/controller=system-upgrade-controller) is available,
// it:
//
//   - creates CRD plans.upgrade.cattle.io (namespaced, with a status subresource), as the
//     controller registers it at startup (the chart ships none);
//   - for each Plan in the controller's namespace, resolves status.latestVersion
//     (spec.version with + as -) and status.latestHash (hex SHA-224 of latestVersion and
//     spec.serviceAccountName), selects the nodes matching spec.nodeSelector that have
//     kubernetes.io/hostname and whose label plan.upgrade.cattle.io/<plan> is neither
//     disabled nor the hash (those in status.applying first, then by SHA-256 of node UID,
//     plan UID and hash, up to spec.concurrency), writes them to status.applying, and
//     sets condition Complete when none is left;
//   - creates a Job per applying node: name SafeConcatName("apply", plan, "on", short
//     node name, "with", hash), labels upgrade.cattle.io/{controller,exclusive,node,plan,
//     version} and plan.upgrade.cattle.io/<plan>=<hash>, parallelism 1, node affinity on
//     the hostname, the unschedulable toleration and the plan's, init container drain
//     (kubectl drain with the plan's flags) or cordon, container upgrade (the version as
//     the image's tag when it has none);
//   - on a completed Job, labels its node plan.upgrade.cattle.io/<plan>=<hash> and
//     uncordons it when the plan cordons or drains (a failed Job leaves it cordoned).
//
// What the Job's pod does on its node is played here too (kwok's pod-complete stage leaves
// these pods alone), one container a round: cordon; drain (kubectl drain: evict the pods of
// the node that are not the controller's, not DaemonSet pods and not mirror pods, asking
// again while a PodDisruptionBudget refuses; a pod no controller owns fails the drain
// without --force); the upgrade (the node's kubelet then reports spec.version); and the
// pod succeeds. Not simulated: channels, the digest annotation, secrets, windows,
// prepare containers, exclusive plans, postCompleteDelay and postCompleteLabels.

var gvrPlan = schema.GroupVersionResource{Group: "upgrade.cattle.io", Version: "v1", Resource: "plans"}

// Names the system-upgrade-controller uses.
const (
	sucName          = "system-upgrade-controller"
	sucLabelCtl      = "upgrade.cattle.io/controller"
	sucLabelNode     = "upgrade.cattle.io/node"
	sucLabelPlan     = "upgrade.cattle.io/plan"
	sucLabelVersion  = "upgrade.cattle.io/version"
	sucLabelExcl     = "upgrade.cattle.io/exclusive"
	sucPlanLabel     = "plan.upgrade.cattle.io/"
	sucKubectlImage  = "SYSTEM_UPGRADE_JOB_KUBECTL_IMAGE"
	sucLabelHostname = "kubernetes.io/hostname"
)

// sucOperator remembers how far each upgrade pod got on its node.
type sucOperator struct {
	mu    sync.Mutex
	stage map[types.UID]int
}

func newSUCOperator() *sucOperator { return &sucOperator{stage: map[types.UID]int{}} }

func (c *Cluster) reconcileSUC(op *sucOperator) func(ctx context.Context, dyn dynamic.Interface) error {
	return func(ctx context.Context, dyn dynamic.Interface) error {
		d, err := c.availableDeployment(ctx, "", sucName) // the chart labels its pods only
		if err != nil || d == nil {
			return err
		}
		if err := c.ensurePlanCRD(ctx); err != nil {
			return err
		}
		plans, err := dyn.Resource(gvrPlan).Namespace(d.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list Plans: %w", err)
		}
		kubectl := ""
		cm, err := c.Client.CoreV1().ConfigMaps(d.Namespace).Get(ctx, sucName+"-config", metav1.GetOptions{})
		if err == nil {
			kubectl = cm.Data[sucKubectlImage]
		}
		var errs []error
		for i := range plans.Items {
			errs = append(errs, c.reconcilePlan(ctx, dyn, &plans.Items[i], kubectl))
		}
		errs = append(errs, c.playUpgradePods(ctx, dyn, op, d.Namespace), c.finishUpgradeJobs(ctx, dyn, d.Namespace))
		return errors.Join(errs...)
	}
}

// ensurePlanCRD registers the Plan CRD, as the controller does at startup.
func (c *Cluster) ensurePlanCRD(ctx context.Context) error {
	ext, err := apiextclient.NewForConfig(c.REST)
	if err != nil {
		return err
	}
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "plans.upgrade.cattle.io", metav1.GetOptions{}); err == nil {
		return nil
	}
	open := true
	obj := apiextv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &open}
	crd := &apiextv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "plans.upgrade.cattle.io"},
		Spec: apiextv1.CustomResourceDefinitionSpec{
			Group: "upgrade.cattle.io", Scope: apiextv1.NamespaceScoped,
			Names: apiextv1.CustomResourceDefinitionNames{Plural: "plans", Singular: "plan", Kind: "Plan", ListKind: "PlanList", Categories: []string{"upgrade"}},
			Versions: []apiextv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Subresources: &apiextv1.CustomResourceSubresources{Status: &apiextv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{Type: "object",
					Properties: map[string]apiextv1.JSONSchemaProps{"spec": obj, "status": obj}}}}},
		},
	}
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the Plan CRD: %w", err)
	}
	return c.waitCRD(ctx, "plans.upgrade.cattle.io")
}

// sucPlan is what the simulation reads of a Plan.
type sucPlan struct {
	Metadata metav1.ObjectMeta `json:"metadata"`
	Spec     struct {
		Concurrency        int64                 `json:"concurrency"`
		NodeSelector       *metav1.LabelSelector `json:"nodeSelector"`
		ServiceAccountName string                `json:"serviceAccountName"`
		Version            string                `json:"version"`
		Tolerations        []corev1.Toleration   `json:"tolerations"`
		Cordon             bool                  `json:"cordon"`
		Drain              *struct {
			Force              bool  `json:"force"`
			IgnoreDaemonSets   *bool `json:"ignoreDaemonSets"`
			DeleteEmptydirData *bool `json:"deleteEmptydirData"`
		} `json:"drain"`
		Upgrade struct {
			Image   string   `json:"image"`
			Command []string `json:"command"`
			Args    []string `json:"args"`
		} `json:"upgrade"`
	} `json:"spec"`
	Status struct {
		LatestVersion string   `json:"latestVersion"`
		LatestHash    string   `json:"latestHash"`
		Applying      []string `json:"applying"`
	} `json:"status"`
}

func readPlan(u *unstructured.Unstructured) (*sucPlan, error) {
	var p sucPlan
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p); err != nil {
		return nil, fmt.Errorf("read Plan %s: %w", u.GetName(), err)
	}
	return &p, nil
}

// reconcilePlan resolves a Plan, selects its nodes and creates their Jobs.
func (c *Cluster) reconcilePlan(ctx context.Context, dyn dynamic.Interface, u *unstructured.Unstructured, kubectl string) error {
	p, err := readPlan(u)
	if err != nil {
		return err
	}
	version := strings.ReplaceAll(p.Spec.Version, "+", "-")
	h := sha256.New224()
	h.Write([]byte(version))
	h.Write([]byte(p.Spec.ServiceAccountName))
	hash := hex.EncodeToString(h.Sum(nil))
	if version == "" {
		hash = ""
	}
	selected, err := c.selectPlanNodes(ctx, p, hash)
	if err != nil {
		return err
	}
	applying := make([]string, 0, len(selected))
	for _, n := range selected {
		applying = append(applying, n.Labels[sucLabelHostname])
	}
	complete := metav1.ConditionFalse
	reason := "SyncJob"
	switch {
	case version == "":
		reason = "Error"
	case len(selected) == 0:
		complete, reason = metav1.ConditionTrue, "Complete"
	}
	status := map[string]any{"latestVersion": version, "latestHash": hash, "applying": toAny(applying),
		"conditions": []any{
			map[string]any{"type": "LatestResolved", "status": string(boolCondition(version != "")), "reason": "Version"},
			map[string]any{"type": "Complete", "status": string(complete), "reason": reason},
		}}
	if !equalStatus(u.Object["status"], status) {
		u.Object["status"] = status
		if _, err := dyn.Resource(gvrPlan).Namespace(u.GetNamespace()).UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("Plan %s status: %w", u.GetName(), err)
		}
	}
	for _, n := range selected {
		job := sucJob(p, n, version, hash, kubectl)
		if _, err := c.Client.BatchV1().Jobs(u.GetNamespace()).Create(ctx, job, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create Job %s: %w", job.Name, err)
		}
	}
	return nil
}

func boolCondition(b bool) metav1.ConditionStatus {
	if b {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// equalStatus compares a status as read (JSON types) with one built here.
func equalStatus(had any, want map[string]any) bool {
	return fmt.Sprint(had) == fmt.Sprint(want)
}

// selectPlanNodes is SelectConcurrentNodes of plan/plan.go.
func (c *Cluster) selectPlanNodes(ctx context.Context, p *sucPlan, hash string) ([]corev1.Node, error) {
	if hash == "" || p.Spec.NodeSelector == nil {
		return nil, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(p.Spec.NodeSelector)
	if err != nil {
		return nil, fmt.Errorf("Plan %s nodeSelector: %w", p.Metadata.Name, err)
	}
	hostname, _ := labels.NewRequirement(sucLabelHostname, selection.Exists, nil)
	notLatest, _ := labels.NewRequirement(sucPlanLabel+p.Metadata.Name, selection.NotIn, []string{"disabled", hash})
	sel = sel.Add(*hostname, *notLatest)
	nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, fmt.Errorf("list the nodes of Plan %s: %w", p.Metadata.Name, err)
	}
	var selected, candidates []corev1.Node
	for _, n := range nodes.Items {
		if slices.Contains(p.Status.Applying, n.Labels[sucLabelHostname]) {
			selected = append(selected, n)
		} else {
			candidates = append(candidates, n)
		}
	}
	sum := func(n corev1.Node) string {
		s := sha256.Sum256([]byte(string(n.UID) + string(p.Metadata.UID) + hash))
		return hex.EncodeToString(s[:])
	}
	sort.Slice(candidates, func(i, j int) bool { return sum(candidates[i]) < sum(candidates[j]) })
	for i := 0; i < len(candidates) && int64(len(selected)) < p.Spec.Concurrency; i++ {
		selected = append(selected, candidates[i])
	}
	sort.Slice(selected, func(i, j int) bool { return selected[i].Name < selected[j].Name })
	return selected, nil
}

// safeConcatName is wrangler's name.SafeConcatName: joined with -, and past 63 characters
// cut to 57 (56 when the 57th is not alphanumeric) plus - and the start of its SHA-256.
func safeConcatName(parts ...string) string {
	full := strings.Join(parts, "-")
	if len(full) < 64 {
		return full
	}
	d := sha256.Sum256([]byte(full))
	sum := hex.EncodeToString(d[:])
	if ch := full[56]; 'a' <= ch && ch <= 'z' || '0' <= ch && ch <= '9' {
		return full[:57] + "-" + sum[:5]
	}
	return full[:56] + "-" + sum[:6]
}

// sucJob is job.New of job/job.go for a node.
func sucJob(p *sucPlan, n corev1.Node, version, hash, kubectl string) *batchv1.Job {
	short := strings.SplitN(n.Name, ".", 2)[0]
	lbl := map[string]string{sucLabelCtl: sucName, sucLabelExcl: "false", sucLabelNode: n.Name, sucLabelPlan: p.Metadata.Name,
		sucLabelVersion: version, sucPlanLabel + p.Metadata.Name: hash}
	env := []corev1.EnvVar{{Name: "SYSTEM_UPGRADE_NODE_NAME", Value: n.Name}, {Name: "SYSTEM_UPGRADE_PLAN_NAME", Value: p.Metadata.Name},
		{Name: "SYSTEM_UPGRADE_PLAN_LATEST_HASH", Value: hash}, {Name: "SYSTEM_UPGRADE_PLAN_LATEST_VERSION", Value: version}}
	var init []corev1.Container
	switch {
	case p.Spec.Drain != nil:
		args := []string{"drain", n.Name, "--pod-selector", "!" + sucLabelCtl}
		if dr := p.Spec.Drain; dr.IgnoreDaemonSets == nil || *dr.IgnoreDaemonSets {
			args = append(args, "--ignore-daemonsets")
		}
		if dr := p.Spec.Drain; dr.DeleteEmptydirData == nil || *dr.DeleteEmptydirData {
			args = append(args, "--delete-emptydir-data")
		}
		if p.Spec.Drain.Force {
			args = append(args, "--force")
		}
		init = append(init, corev1.Container{Name: "drain", Image: kubectl, Args: args, Env: env})
	case p.Spec.Cordon:
		init = append(init, corev1.Container{Name: "cordon", Image: kubectl, Args: []string{"cordon", n.Name}, Env: env})
	}
	image := p.Spec.Upgrade.Image
	if last := image[strings.LastIndex(image, "/")+1:]; !strings.Contains(last, ":") {
		image += ":" + version
	}
	one, privileged := int32(1), true
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: safeConcatName("apply", p.Metadata.Name, "on", short, "with", hash), Namespace: p.Metadata.Namespace, Labels: lbl},
		Spec: batchv1.JobSpec{Completions: &one, Parallelism: &one, BackoffLimit: ptrInt32(99),
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl}, Spec: corev1.PodSpec{
				HostIPC: true, HostPID: true, HostNetwork: true, DNSPolicy: corev1.DNSClusterFirstWithHostNet, RestartPolicy: corev1.RestartPolicyNever,
				ServiceAccountName: p.Spec.ServiceAccountName,
				Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: sucLabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{n.Labels[sucLabelHostname]}}}}}}}},
				Tolerations:    append([]corev1.Toleration{{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}, p.Spec.Tolerations...),
				InitContainers: init,
				Containers: []corev1.Container{{Name: "upgrade", Image: image, Command: p.Spec.Upgrade.Command, Args: p.Spec.Upgrade.Args, Env: env,
					SecurityContext: &corev1.SecurityContext{Privileged: &privileged}}},
			}},
		},
	}
}

func ptrInt32(v int32) *int32 { return &v }

// playUpgradePods does, one container a round, what a running upgrade pod does on its node.
func (c *Cluster) playUpgradePods(ctx context.Context, dyn dynamic.Interface, op *sucOperator, ns string) error {
	pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sucLabelCtl + "," + sucLabelPlan})
	if err != nil {
		return fmt.Errorf("list upgrade pods: %w", err)
	}
	var errs []error
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil || pod.Spec.NodeName == "" {
			continue
		}
		op.mu.Lock()
		stage := op.stage[pod.UID]
		op.mu.Unlock()
		next, err := c.playUpgradeStage(ctx, dyn, pod, stage)
		if err != nil {
			errs = append(errs, err)
		}
		op.mu.Lock()
		op.stage[pod.UID] = next
		op.mu.Unlock()
	}
	return errors.Join(errs...)
}

// Stages of an upgrade pod: cordon, drain, upgrade, done.
const (
	sucCordon = iota
	sucDrain
	sucUpgrade
	sucDone
)

func (c *Cluster) playUpgradeStage(ctx context.Context, dyn dynamic.Interface, pod *corev1.Pod, stage int) (int, error) {
	node := pod.Spec.NodeName
	var drainArgs []string
	hasInit := len(pod.Spec.InitContainers) > 0
	if hasInit && pod.Spec.InitContainers[0].Name == "drain" {
		drainArgs = pod.Spec.InitContainers[0].Args
	}
	switch stage {
	case sucCordon:
		if !hasInit {
			return sucUpgrade, nil
		}
		patch := []byte(`{"spec":{"unschedulable":true}}`)
		if _, err := c.Client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return stage, fmt.Errorf("cordon %s: %w", node, err)
		}
		if drainArgs == nil {
			return sucUpgrade, nil
		}
		return sucDrain, nil
	case sucDrain:
		left, err := c.drainRound(ctx, node, slices.Contains(drainArgs, "--force"), slices.Contains(drainArgs, "--ignore-daemonsets"))
		if err != nil {
			return stage, c.failPod(ctx, pod, "drain", err.Error())
		}
		if left > 0 {
			return stage, nil
		}
		return sucUpgrade, nil
	case sucUpgrade:
		plan, err := dyn.Resource(gvrPlan).Namespace(pod.Namespace).Get(ctx, pod.Labels[sucLabelPlan], metav1.GetOptions{})
		if err != nil {
			return stage, fmt.Errorf("the Plan of %s: %w", pod.Name, err)
		}
		version, _, _ := unstructured.NestedString(plan.Object, "spec", "version")
		n, err := c.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return stage, err
		}
		n.Status.NodeInfo.KubeletVersion = version
		if _, err := c.Client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			return stage, fmt.Errorf("node %s: kubelet version: %w", node, err)
		}
		return sucDone, nil
	case sucDone:
		return stage, c.endPod(ctx, pod, corev1.PodSucceeded, 0, "Completed", "")
	}
	return stage, nil
}

// drainRound is a round of kubectl drain on a node: it evicts the pods it may and says how
// many are left.
func (c *Cluster) drainRound(ctx context.Context, node string, force, ignoreDaemonSets bool) (int, error) {
	pods, err := c.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node, LabelSelector: "!" + sucLabelCtl})
	if err != nil {
		return 0, fmt.Errorf("list the pods of %s: %w", node, err)
	}
	left := 0
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Annotations[corev1.MirrorPodAnnotationKey] != "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		owner := metav1.GetControllerOf(p)
		if owner != nil && owner.Kind == "DaemonSet" {
			if ignoreDaemonSets {
				continue
			}
			return 0, fmt.Errorf("cannot delete DaemonSet-managed Pods: %s/%s", p.Namespace, p.Name)
		}
		if owner == nil && !force {
			return 0, fmt.Errorf("cannot delete Pods that declare no controller (use --force to override): %s/%s", p.Namespace, p.Name)
		}
		left++
		if p.DeletionTimestamp != nil {
			continue
		}
		// kubectl drain asks again every 5 s; the client's own retries of a 429 would hold
		// the round.
		ev := &policyv1.Eviction{TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "Eviction"}, ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}
		err := c.Client.CoreV1().RESTClient().Post().MaxRetries(0).Namespace(p.Namespace).Resource("pods").Name(p.Name).SubResource("eviction").Body(ev).Do(ctx).Error()
		if err != nil && !apierrors.IsTooManyRequests(err) && !apierrors.IsNotFound(err) {
			return 0, fmt.Errorf("evict %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	return left, nil
}

// failPod ends an upgrade pod as failed by one of its containers.
func (c *Cluster) failPod(ctx context.Context, pod *corev1.Pod, container, msg string) error {
	return c.endPod(ctx, pod, corev1.PodFailed, 1, "Error", container+": "+msg)
}

// endPod writes a pod's end, as its kubelet would: every container terminated.
func (c *Cluster) endPod(ctx context.Context, pod *corev1.Pod, phase corev1.PodPhase, code int32, reason, msg string) error {
	now := metav1.Now()
	p := pod.DeepCopy()
	p.Status.Phase, p.Status.Message = phase, msg
	term := func(name, image string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, Image: image, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: code, Reason: reason, Message: msg, StartedAt: now, FinishedAt: now}}}
	}
	p.Status.ContainerStatuses = nil
	for _, ct := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, term(ct.Name, ct.Image))
	}
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady || p.Status.Conditions[i].Type == corev1.ContainersReady {
			p.Status.Conditions[i].Status = corev1.ConditionFalse
		}
	}
	if _, err := c.Client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("end pod %s: %w", p.Name, err)
	}
	return nil
}

// finishUpgradeJobs labels the node of each completed upgrade Job with its plan's hash and
// uncordons it when its plan cordons or drains (handle_batch.go).
func (c *Cluster) finishUpgradeJobs(ctx context.Context, dyn dynamic.Interface, ns string) error {
	jobs, err := c.Client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{LabelSelector: sucLabelCtl + "," + sucLabelPlan + "," + sucLabelNode})
	if err != nil {
		return fmt.Errorf("list upgrade Jobs: %w", err)
	}
	var errs []error
	for i := range jobs.Items {
		j := &jobs.Items[i]
		if !jobComplete(j) {
			continue
		}
		planName, nodeName := j.Labels[sucLabelPlan], j.Labels[sucLabelNode]
		hash := j.Labels[sucPlanLabel+planName]
		n, err := c.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil || n.Labels[sucPlanLabel+planName] == hash {
			continue
		}
		plan, err := dyn.Resource(gvrPlan).Namespace(ns).Get(ctx, planName, metav1.GetOptions{})
		if err != nil {
			continue // the plan is gone: upstream deletes the Job
		}
		cordon, _, _ := unstructured.NestedBool(plan.Object, "spec", "cordon")
		_, drains, _ := unstructured.NestedMap(plan.Object, "spec", "drain")
		n.Labels[sucPlanLabel+planName] = hash
		if n.Spec.Unschedulable && (cordon || drains) {
			n.Spec.Unschedulable = false
		}
		if _, err := c.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("node %s after its upgrade: %w", nodeName, err))
		}
	}
	return errors.Join(errs...)
}

func jobComplete(j *batchv1.Job) bool {
	for _, cd := range j.Status.Conditions {
		if cd.Type == batchv1.JobComplete && cd.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
