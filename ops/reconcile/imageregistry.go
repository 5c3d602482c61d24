package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"runr.dev/console/config"
	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops/isolation"
	"runr.dev/console/ops/redis"
)

// StepImageRegistry is the reconcile step that moves what still references an earlier
// namespace of the console's own images (RUNR_IMAGE_MOVES) to the current one: the
// projects' stored images and the workloads the console created on the cluster. Helm
// releases are their own steps' (traefik-image, tracing, image-mirror).
const StepImageRegistry = "image-registry"

// movingAnnotation marks a Deployment this step paused itself to move it without replacing
// its pods, so that a run after an interrupted one goes on with it.
const movingAnnotation = "runr.dev/moving-images"

// workloadKinds are the kinds of the console's workloads, each with where it keeps its pod
// spec.
var workloadKinds = []struct {
	gvk  schema.GroupVersionKind
	spec []string
}{
	{kube.GVKDeployment, []string{"spec", "template", "spec"}},
	{kube.GVKStatefulSet, []string{"spec", "template", "spec"}},
	{kube.GVKDaemonSet, []string{"spec", "template", "spec"}},
	{kube.GVKCronJob, []string{"spec", "jobTemplate", "spec", "template", "spec"}},
	{kube.GVKKService, []string{"spec", "template", "spec"}},
}

// imageChange is one container of a workload whose image moves.
type imageChange struct {
	path             string // the JSON pointer of the image
	field, container string // containers or initContainers, and the container's name
	from, to         string
}

// movingWorkload is a workload of the console's that runs images of an earlier namespace.
type movingWorkload struct {
	gvk             schema.GroupVersionKind
	namespace, name string
	changes         []imageChange
	// keepPods: its running pods keep running (a sandbox node installer, whose new pod
	// would run the install again, or the queue Redis, whose streams live in memory).
	keepPods bool
	// kept says why it does not move on this run ("": it moves).
	kept string
}

func (w movingWorkload) String() string { return w.gvk.Kind + " " + w.namespace + "/" + w.name }

// finding says what moves, or why the workload is kept.
func (w movingWorkload) finding() finding {
	if w.kept != "" {
		return finding{What: "kept: " + w.String() + " is " + w.kept}
	}
	moves := make([]string, len(w.changes))
	for i, ch := range w.changes {
		moves[i] = ch.from + " → " + ch.to
	}
	what := w.String() + " " + strings.Join(moves, ", ")
	if w.keepPods {
		what += " (its running pods keep running until they are replaced)"
	}
	return finding{Change: true, What: what}
}

// patchOps are the JSON patch operations that move the images, each tested first: a
// workload changed since it was read is not overwritten.
func (w movingWorkload) patchOps() []map[string]any {
	var ops []map[string]any
	for _, ch := range w.changes {
		ops = append(ops, map[string]any{"op": "test", "path": ch.path, "value": ch.from},
			map[string]any{"op": "replace", "path": ch.path, "value": ch.to})
	}
	return ops
}

// moved is a pod template with the workload's images moved.
func (w movingWorkload) moved(t corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	t = *t.DeepCopy()
	for _, ch := range w.changes {
		cts := t.Spec.Containers
		if ch.field == "initContainers" {
			cts = t.Spec.InitContainers
		}
		for i := range cts {
			if cts[i].Name == ch.container {
				cts[i].Image = ch.to
			}
		}
	}
	return t
}

// templatePatch is the strategic merge patch of a pod template that moves the images.
func (w movingWorkload) templatePatch() map[string]any {
	spec := map[string]any{}
	for _, ch := range w.changes {
		list, _ := spec[ch.field].([]any)
		spec[ch.field] = append(list, map[string]any{"name": ch.container, "image": ch.to})
	}
	return map[string]any{"spec": spec}
}

// imageNamespaceDrift is what of a target's cluster still references an earlier image
// namespace: per move the projects whose stored images use it, and the workloads.
type imageNamespaceDrift struct {
	projects  [][]string
	workloads []movingWorkload
}

func (d *imageNamespaceDrift) findings(moves []config.ImageMove) finding {
	var fs []finding
	listed := map[string]bool{}
	for i, names := range d.projects {
		// A dry run lists a project under the first move that matches it, as the move does.
		names = slices.DeleteFunc(slices.Clone(names), func(n string) bool { return listed[n] })
		for _, n := range names {
			listed[n] = true
		}
		if len(names) > 0 {
			fs = append(fs, finding{Change: true, What: fmt.Sprintf("projects %s: stored images %s → %s", strings.Join(names, ", "), moves[i].From, moves[i].To)})
		}
	}
	for _, w := range d.workloads {
		fs = append(fs, w.finding())
	}
	return joinFindings(fs...)
}

// readImageNamespaceDrift reads what of a target still references an earlier namespace.
func (s *Service) readImageNamespaceDrift(ctx context.Context, c *kube.Cluster, t *reconcileTarget) (*imageNamespaceDrift, error) {
	d := &imageNamespaceDrift{}
	if err := s.moveProjectImages(ctx, t, true, func(i int, names []string) { d.projects = append(d.projects, names) }); err != nil {
		return nil, err
	}
	for _, k := range workloadKinds {
		objs, err := c.List(ctx, k.gvk, "", "app.kubernetes.io/managed-by=runr")
		if err != nil {
			return nil, err
		}
		for i := range objs {
			if w, ok := s.movingWorkloadOf(k.gvk, k.spec, &objs[i]); ok {
				d.workloads = append(d.workloads, w)
			}
		}
	}
	return d, nil
}

// moveProjectImages moves (or, in a dry run, lists) the stored images of the target's
// projects (with the first target, of the projects without a region too), move by move,
// and hands each move's projects to found.
func (s *Service) moveProjectImages(ctx context.Context, t *reconcileTarget, dryRun bool, found func(int, []string)) error {
	ids := make([]string, len(t.Regions))
	for i, r := range t.Regions {
		ids[i] = r.ID
	}
	for i, m := range s.Cfg.ImageMoves {
		names, err := s.Store.MoveProjectImages(ctx, ids, t.First, m.From, m.To, dryRun)
		if err != nil {
			return err
		}
		found(i, names)
	}
	return nil
}

// movingWorkloadOf is the workload's images that move, if any.
func (s *Service) movingWorkloadOf(gvk schema.GroupVersionKind, spec []string, o *unstructured.Unstructured) (movingWorkload, bool) {
	w := movingWorkload{gvk: gvk, namespace: o.GetNamespace(), name: o.GetName()}
	for _, field := range []string{"initContainers", "containers"} {
		cts, _, _ := unstructured.NestedSlice(o.Object, append(slices.Clone(spec), field)...)
		for i, ct := range cts {
			m, _ := ct.(map[string]any)
			from, _ := m["image"].(string)
			if to, ok := config.MoveImage(s.Cfg.ImageMoves, from); ok {
				name, _ := m["name"].(string)
				path := "/" + strings.Join(spec, "/") + "/" + field + "/" + strconv.Itoa(i) + "/image"
				w.changes = append(w.changes, imageChange{path: path, field: field, container: name, from: from, to: to})
			}
		}
	}
	switch {
	case gvk == kube.GVKDaemonSet && w.namespace == isolation.SandboxNamespace && w.name != isolation.KVMProbe:
		w.keepPods = true
	case gvk == kube.GVKDeployment && w.name == redis.RedisName:
		w.keepPods, w.kept = true, rolloutBlocker(o)
	}
	return w, len(w.changes) > 0
}

// rolloutBlocker says why a Deployment cannot move without replacing its pods now ("":
// it can): paused by someone else, or in the middle of a rollout.
func rolloutBlocker(o *unstructured.Unstructured) string {
	var d appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
		return "unreadable (" + err.Error() + ")"
	}
	if d.Spec.Paused {
		if d.Annotations[movingAnnotation] != "" {
			return "" // paused by an interrupted run of this step: it goes on
		}
		return "paused by someone else: it moves at the first run after it is resumed"
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	if st := d.Status; st.ObservedGeneration < d.Generation || st.UpdatedReplicas < want || st.Replicas > st.UpdatedReplicas {
		return "in the middle of a rollout: it moves at the first run after the rollout is over"
	}
	return ""
}

// checkImageRegistry: nothing of the target's cluster or its projects references an
// earlier namespace of the console's images.
func (s *Service) checkImageRegistry(ctx context.Context, c *kube.Cluster, t *reconcileTarget) (finding, error) {
	d, err := s.readImageNamespaceDrift(ctx, c, t)
	if err != nil {
		return finding{}, err
	}
	return d.findings(s.Cfg.ImageMoves), nil
}

// applyImageRegistry moves the projects' stored images, then each workload: most roll to
// the moved images; the sandbox node installers and the queue Redis keep their pods.
func (s *Service) applyImageRegistry(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, t *reconcileTarget) error {
	d, err := s.readImageNamespaceDrift(ctx, c, t)
	if err != nil {
		return err
	}
	err = s.moveProjectImages(ctx, t, false, func(i int, names []string) {
		if len(names) > 0 {
			jc.Note("The stored images of %s moved from %s to %s", strings.Join(names, ", "), s.Cfg.ImageMoves[i].From, s.Cfg.ImageMoves[i].To)
		}
	})
	if err != nil {
		return err
	}
	for _, w := range d.workloads {
		if err := moveWorkload(ctx, jc, c, w); err != nil {
			return fmt.Errorf("move the images of %s: %w", w, err)
		}
	}
	return nil
}

// moveWorkload moves one workload's images.
func moveWorkload(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, w movingWorkload) error {
	switch {
	case w.kept != "":
		jc.Logf("%s", w.finding().What)
		return nil
	case w.keepPods && w.gvk == kube.GVKDeployment:
		return moveDeploymentKeepingPods(ctx, jc, c, w)
	case w.keepPods:
		// OnDelete: the DaemonSet's new template is for the pods it creates from now on.
		ops := append(w.patchOps(), map[string]any{"op": "add", "path": "/spec/updateStrategy", "value": map[string]any{"type": "OnDelete"}})
		if err := c.JSONPatch(ctx, w.gvk, w.namespace, w.name, ops); err != nil {
			return err
		}
		jc.Note("%s moved; its running pods keep running until they are replaced", w)
		return nil
	}
	if err := c.JSONPatch(ctx, w.gvk, w.namespace, w.name, w.patchOps()); err != nil {
		return err
	}
	if w.gvk == kube.GVKDeployment || w.gvk == kube.GVKStatefulSet || w.gvk == kube.GVKDaemonSet {
		wl := kube.Workload{Kind: w.gvk.Kind, Namespace: w.namespace, Name: w.name}
		if err := jc.Wait(ctx, wl.String()+" to roll out its moved images", engine.WaitOpts{}, c.WorkloadReady(wl)); err != nil {
			return err
		}
	}
	jc.Note("%s moved", w)
	return nil
}

// moveDeploymentKeepingPods moves a Deployment's images without replacing its pods. The
// Deployment is paused (and the controller has seen it, so it creates no ReplicaSet
// meanwhile); its current ReplicaSet takes the moved images (a ReplicaSet does not
// replace its pods for a new template); then the Deployment's template takes the same
// images as it is resumed, and the controller adopts that ReplicaSet as the one of its
// template: nothing rolls, and a pod created later starts from the moved image.
func moveDeploymentKeepingPods(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, w movingWorkload) error {
	deps := c.Clientset.AppsV1().Deployments(w.namespace)
	pause := map[string]any{"metadata": map[string]any{"annotations": map[string]any{movingAnnotation: "paused"}}, "spec": map[string]any{"paused": true}}
	if err := strategicPatch(ctx, deps.Patch, w.name, pause); err != nil {
		return err
	}
	rs, err := readyToMove(ctx, jc, c, w)
	if err != nil {
		// Nothing moved yet: the Deployment goes on as it was.
		unpause := map[string]any{"metadata": map[string]any{"annotations": map[string]any{movingAnnotation: nil}}, "spec": map[string]any{"paused": false}}
		if uerr := strategicPatch(context.WithoutCancel(ctx), deps.Patch, w.name, unpause); uerr != nil {
			jc.Warnf("%s stays paused: %v", w, uerr)
		}
		return err
	}
	// From here on a failure leaves it paused, marked as this step's: the next run goes on.
	if err := strategicPatch(ctx, c.Clientset.AppsV1().ReplicaSets(w.namespace).Patch, rs.Name, map[string]any{"spec": map[string]any{"template": w.templatePatch()}}); err != nil {
		return err
	}
	resume := map[string]any{"metadata": map[string]any{"annotations": map[string]any{movingAnnotation: nil}},
		"spec": map[string]any{"paused": false, "template": w.templatePatch()}}
	if err := strategicPatch(ctx, deps.Patch, w.name, resume); err != nil {
		return err
	}
	if err := jc.Wait(ctx, w.String()+" to adopt its moved ReplicaSet", engine.WaitOpts{}, deploymentObserved(c, w.namespace, w.name)); err != nil {
		return err
	}
	d, err := deps.Get(ctx, w.name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	now, err := currentReplicaSet(ctx, c, d)
	if err != nil {
		return err
	}
	if now.Name != rs.Name {
		jc.Warnf("%s started a rollout (ReplicaSet %s instead of %s): its pods are replaced", w, now.Name, rs.Name)
		return nil
	}
	jc.Note("%s moved without a rollout; its %d running pod(s) keep running until they are replaced", w, rs.Status.Replicas)
	return nil
}

// readyToMove waits until the controller has seen the Deployment paused, and returns its
// current ReplicaSet once no older one of the moved template is left (dropTwins).
func readyToMove(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, w movingWorkload) (*appsv1.ReplicaSet, error) {
	if err := jc.Wait(ctx, w.String()+" to be seen paused", engine.WaitOpts{}, deploymentObserved(c, w.namespace, w.name)); err != nil {
		return nil, err
	}
	d, err := c.Clientset.AppsV1().Deployments(w.namespace).Get(ctx, w.name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	rs, err := currentReplicaSet(ctx, c, d)
	if err != nil {
		return nil, err
	}
	return rs, dropTwins(ctx, jc, c, d, rs.Name, w.moved(rs.Spec.Template))
}

// strategicPatch applies a strategic merge patch through a typed client's Patch.
func strategicPatch[T any](ctx context.Context, patch func(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (T, error), name string, p map[string]any) error {
	raw, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if _, err := patch(ctx, name, types.StrategicMergePatchType, raw, metav1.PatchOptions{FieldManager: kube.FieldManager}); err != nil {
		return fmt.Errorf("patch %s: %w", name, err)
	}
	return nil
}

// deploymentObserved holds once the Deployment controller has seen the Deployment's spec.
func deploymentObserved(c *kube.Cluster, ns, name string) kube.Cond {
	return kube.Judging(c.Clientset.AppsV1().Deployments(ns).Get, name, func(d *appsv1.Deployment) (bool, string, error) {
		return d.Status.ObservedGeneration >= d.Generation, fmt.Sprintf("generation %d, observed %d", d.Generation, d.Status.ObservedGeneration), nil
	})
}

// replicaSetsOf are the ReplicaSets the Deployment controls.
func replicaSetsOf(ctx context.Context, c *kube.Cluster, d *appsv1.Deployment) ([]appsv1.ReplicaSet, error) {
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, err
	}
	rss, err := c.Clientset.AppsV1().ReplicaSets(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, fmt.Errorf("list the ReplicaSets of %s/%s: %w", d.Namespace, d.Name, err)
	}
	var out []appsv1.ReplicaSet
	for _, rs := range rss.Items {
		if metav1.IsControlledBy(&rs, d) {
			out = append(out, rs)
		}
	}
	return out, nil
}

// currentReplicaSet is the Deployment's ReplicaSet of its current revision.
func currentReplicaSet(ctx context.Context, c *kube.Cluster, d *appsv1.Deployment) (*appsv1.ReplicaSet, error) {
	rss, err := replicaSetsOf(ctx, c, d)
	if err != nil {
		return nil, err
	}
	const revision = "deployment.kubernetes.io/revision"
	for i := range rss {
		if rss[i].Annotations[revision] == d.Annotations[revision] {
			return &rss[i], nil
		}
	}
	return nil, fmt.Errorf("Deployment %s/%s has no ReplicaSet of its revision %s", d.Namespace, d.Name, d.Annotations[revision])
}

// dropTwins deletes the Deployment's old ReplicaSets, scaled to none, whose template is
// the moved one (an earlier revision that ran the moved image): the controller takes the
// oldest ReplicaSet of its template as its new one, and would roll back to it.
func dropTwins(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, d *appsv1.Deployment, current string, moved corev1.PodTemplateSpec) error {
	rss, err := replicaSetsOf(ctx, c, d)
	if err != nil {
		return err
	}
	for _, rs := range rss {
		if rs.Name == current || !sameTemplate(rs.Spec.Template, moved) {
			continue
		}
		if (rs.Spec.Replicas != nil && *rs.Spec.Replicas > 0) || rs.Status.Replicas > 0 {
			return fmt.Errorf("ReplicaSet %s/%s of an earlier revision runs the moved template: finish that rollout first", rs.Namespace, rs.Name)
		}
		if err := c.Clientset.AppsV1().ReplicaSets(rs.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete ReplicaSet %s/%s: %w", rs.Namespace, rs.Name, err)
		}
		jc.Logf("ReplicaSet %s/%s, an earlier revision of the moved template, is deleted so that the Deployment keeps its pods", rs.Namespace, rs.Name)
	}
	return nil
}

// sameTemplate reports two pod templates that differ at most by their pod-template-hash
// label, as the Deployment controller compares them.
func sameTemplate(a, b corev1.PodTemplateSpec) bool {
	a, b = *a.DeepCopy(), *b.DeepCopy()
	delete(a.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	delete(b.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	return apiequality.Semantic.DeepEqual(a, b)
}
