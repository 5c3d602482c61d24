package testcluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// The simulated Prometheus operator (prometheus-operator/prometheus-operator v0.86.2, the
// operator of kube-prometheus-stack 79.5.0: pkg/prometheus/server/statefulset.go and
// operator.go, pkg/alertmanager/statefulset.go and operator.go,
// pkg/operator/statefulset_reporter.go). While a Deployment labelled
// app.kubernetes.io/component=prometheus-operator is available it makes, for each
// Prometheus, StatefulSet prometheus-<name> (prometheus-<name>-shard-<n> for more shards)
// and for each Alertmanager alertmanager-<name>, owned by the resource (so deleting it
// deletes them), with the pod labels the real operator sets, the governing Services
// prometheus-operated and alertmanager-operated, and the resources' status (replica
// counts, conditions Available and Reconciled, selector, shards).

var (
	gvrPrometheus   = schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "prometheuses"}
	gvrAlertmanager = schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "alertmanagers"}
)

// inputHashAnnotation holds the hash of what the operator generated last, as upstream's.
const inputHashAnnotation = "prometheus-operator-input-hash"

// promKind is what differs between the two kinds the operator turns into StatefulSets.
type promKind struct {
	gvr       schema.GroupVersionResource
	kind      string
	app       string // app.kubernetes.io/name of the pods and prefix of the StatefulSet
	governing string // the governing Service
	port      int32
	image     string // default image without its tag
	sharded   bool
}

var promKinds = []promKind{
	{gvr: gvrPrometheus, kind: "Prometheus", app: "prometheus", governing: "prometheus-operated", port: 9090, image: "quay.io/prometheus/prometheus", sharded: true},
	{gvr: gvrAlertmanager, kind: "Alertmanager", app: "alertmanager", governing: "alertmanager-operated", port: 9093, image: "quay.io/prometheus/alertmanager"},
}

func (c *Cluster) reconcilePrometheus(ctx context.Context, dyn dynamic.Interface) error {
	d, err := c.availableDeployment(ctx, "app.kubernetes.io/component=prometheus-operator", "")
	if err != nil || d == nil {
		return err
	}
	for _, k := range promKinds {
		list, err := dyn.Resource(k.gvr).List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("list %s: %w", k.gvr.Resource, err)
		}
		for i := range list.Items {
			o := &list.Items[i]
			if o.GetDeletionTimestamp() != nil {
				continue
			}
			if err := c.reconcilePromObject(ctx, dyn, k, o); err != nil {
				return err
			}
		}
	}
	return nil
}

// promSelector are the selector labels of a Prometheus's or an Alertmanager's pods.
func promSelector(k promKind, name string, shard int) map[string]string {
	m := map[string]string{
		"app.kubernetes.io/managed-by": "prometheus-operator",
		"app.kubernetes.io/name":       k.app,
		"app.kubernetes.io/instance":   name,
		k.app:                          name,
	}
	if k.sharded {
		m["operator.prometheus.io/name"] = name
		m["operator.prometheus.io/shard"] = fmt.Sprint(shard)
	}
	return m
}

func (c *Cluster) reconcilePromObject(ctx context.Context, dyn dynamic.Interface, k promKind, o *unstructured.Unstructured) error {
	ns, name := o.GetNamespace(), o.GetName()
	owner := metav1.OwnerReference{APIVersion: k.gvr.GroupVersion().String(), Kind: k.kind, Name: name, UID: o.GetUID(),
		Controller: ptrTo(true), BlockOwnerDeletion: ptrTo(true)}
	if err := c.ensureGoverningService(ctx, k, ns, owner); err != nil {
		return err
	}
	replicas := int64(1)
	if r, found, _ := unstructured.NestedInt64(o.Object, "spec", "replicas"); found {
		replicas = r
	}
	shards := int64(1)
	if k.sharded {
		if s, found, _ := unstructured.NestedInt64(o.Object, "spec", "shards"); found && s > 0 {
			shards = s
		}
	}
	var total, ready, updated int
	var shardStatuses []any
	available := condition{Type: "Available", Status: "True", ObservedGeneration: o.GetGeneration()}
	var messages []string
	for shard := 0; shard < int(shards); shard++ {
		sts := promStatefulSet(k, o, shard, int32(replicas), owner)
		got, err := c.applyStatefulSet(ctx, sts)
		if err != nil {
			return err
		}
		pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(sts.Spec.Selector.MatchLabels).String()})
		if err != nil {
			return fmt.Errorf("list pods of StatefulSet %s/%s: %w", ns, sts.Name, err)
		}
		var n, r, u int
		for _, p := range pods.Items {
			if !ownedBy(p.OwnerReferences, "StatefulSet", sts.Name) {
				continue
			}
			n++
			if podReady(&p) {
				r++
			} else if m := podMessage(&p); m != "" {
				messages = append(messages, fmt.Sprintf("pod %s: %s", p.Name, m))
			}
			if got != nil && p.Labels["controller-revision-hash"] == got.Status.UpdateRevision {
				u++
			}
		}
		total, ready, updated = total+n, ready+r, updated+u
		shardStatuses = append(shardStatuses, map[string]any{"shardID": fmt.Sprint(shard), "replicas": int64(n),
			"updatedReplicas": int64(u), "availableReplicas": int64(r), "unavailableReplicas": int64(n - r)})
	}
	switch expected := int(replicas * shards); {
	case ready < expected && ready == 0:
		available.Status, available.Reason = "False", "NoPodReady"
	case ready < expected:
		available.Status, available.Reason = "Degraded", "SomePodsNotReady"
	}
	available.Message = strings.Join(messages, "\n")
	status := map[string]any{
		"replicas": int64(total), "updatedReplicas": int64(updated), "availableReplicas": int64(ready),
		"unavailableReplicas": int64(total - ready), "paused": false,
		"selector": labels.SelectorFromSet(promSelectorAll(k, name)).String(),
	}
	if k.sharded {
		status["shards"] = shards
		status["shardStatuses"] = shardStatuses
	}
	old, _, _ := unstructured.NestedMap(o.Object, "status")
	if old != nil {
		status["conditions"] = old["conditions"]
	}
	setConditions(status, []condition{available, {Type: "Reconciled", Status: "True", ObservedGeneration: o.GetGeneration()}})
	return updateStatus(ctx, dyn.Resource(k.gvr).Namespace(ns), o, status)
}

// OperatorPodLabels returns the labels the Prometheus operator puts on the pods it makes
// for a Prometheus or an Alertmanager (kind) named name (shard 0), version aside.
func OperatorPodLabels(kind, name string) map[string]string {
	for _, k := range promKinds {
		if k.kind == kind {
			return promSelector(k, name, 0)
		}
	}
	return nil
}

// promSelectorAll selects the pods of every shard (status.selector).
func promSelectorAll(k promKind, name string) map[string]string {
	m := promSelector(k, name, 0)
	delete(m, "operator.prometheus.io/shard")
	return m
}

// promStatefulSet builds the StatefulSet the operator generates for one shard.
func promStatefulSet(k promKind, o *unstructured.Unstructured, shard int, replicas int32, owner metav1.OwnerReference) *appsv1.StatefulSet {
	name := o.GetName()
	stsName := k.app + "-" + name
	if shard > 0 {
		stsName = fmt.Sprintf("%s-shard-%d", stsName, shard)
	}
	version := strings.TrimPrefix(fmt.Sprint(promSpecField(o, "version")), "v")
	selector := promSelector(k, name, shard)
	stsLabels := promStatefulSetLabels(k, o, selector)
	volume, claims, volumes := promStorage(k, o)
	pod := promPodSpec(o, promContainer(k, o, version, volume))
	pod.Volumes = volumes
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: stsName, Namespace: o.GetNamespace(), Labels: stsLabels, OwnerReferences: []metav1.OwnerReference{owner}},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            &replicas,
			ServiceName:         k.governing,
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: promPodLabels(o, selector, version), Annotations: map[string]string{"kubectl.kubernetes.io/default-container": k.app}},
				Spec:       pod,
			},
			VolumeClaimTemplates: claims,
		},
	}
	sts.Annotations = map[string]string{inputHashAnnotation: promInputHash(sts.Spec, stsLabels)}
	return sts
}

// promSpecField is the value at a path under a Prometheus's or an Alertmanager's spec
// (nil when absent).
func promSpecField(o *unstructured.Unstructured, path ...string) any {
	v, _, _ := unstructured.NestedFieldNoCopy(o.Object, append([]string{"spec"}, path...)...)
	return v
}

// promStatefulSetLabels are the StatefulSet's labels: the resource's own, the mode of a
// Prometheus, and the pods' selector over them.
func promStatefulSetLabels(k promKind, o *unstructured.Unstructured, selector map[string]string) map[string]string {
	stsLabels := map[string]string{}
	maps.Copy(stsLabels, o.GetLabels())
	if k.sharded {
		stsLabels["operator.prometheus.io/mode"] = "server"
	}
	maps.Copy(stsLabels, selector)
	return stsLabels
}

// promPodLabels are the pods' labels: spec.podMetadata.labels, the version, and the
// selector over them.
func promPodLabels(o *unstructured.Unstructured, selector map[string]string, version string) map[string]string {
	podLabels := map[string]string{"app.kubernetes.io/version": version}
	if pl, ok := promSpecField(o, "podMetadata", "labels").(map[string]any); ok {
		for key, v := range pl {
			podLabels[key] = fmt.Sprint(v)
		}
	}
	maps.Copy(podLabels, selector)
	return podLabels
}

// promStorage is where the database lives: the claim of spec.storage.volumeClaimTemplate
// when there is one, an emptyDir volume otherwise; volume is the name the container mounts.
func promStorage(k promKind, o *unstructured.Unstructured) (volume string, claims []corev1.PersistentVolumeClaim, volumes []corev1.Volume) {
	dbName := k.app + "-" + o.GetName() + "-db"
	vct, ok := promSpecField(o, "storage", "volumeClaimTemplate").(map[string]any)
	if !ok {
		return dbName, nil, []corev1.Volume{{Name: dbName, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	}
	var claim corev1.PersistentVolumeClaim
	if fromMap(vct, &claim) != nil {
		return dbName, nil, nil
	}
	if claim.Name == "" {
		claim.Name = dbName
	}
	return claim.Name, []corev1.PersistentVolumeClaim{claim}, nil
}

// promContainer is the Prometheus or Alertmanager container: its image (spec.image, or the
// default one of the version), port, database mount, retention and resources.
func promContainer(k promKind, o *unstructured.Unstructured, version, volume string) corev1.Container {
	image, _ := promSpecField(o, "image").(string)
	if image == "" {
		image = k.image + ":v" + version
	}
	container := corev1.Container{Name: k.app, Image: image,
		Ports:        []corev1.ContainerPort{{Name: "http-web", ContainerPort: k.port}},
		VolumeMounts: []corev1.VolumeMount{{Name: volume, MountPath: "/" + k.app}}}
	if rt, ok := promSpecField(o, "retention").(string); ok && rt != "" {
		flag := "--storage.tsdb.retention.time="
		if !k.sharded {
			flag = "--data.retention="
		}
		container.Args = append(container.Args, flag+rt)
	}
	var res corev1.ResourceRequirements
	if fromMap(promSpecField(o, "resources"), &res) == nil {
		container.Resources = res
	}
	return container
}

// promPodSpec is the pods' spec around the container, with the scheduling fields the
// resource's spec sets (service account, priority class, node selector, tolerations).
func promPodSpec(o *unstructured.Unstructured, container corev1.Container) corev1.PodSpec {
	pod := corev1.PodSpec{
		Containers:                    []corev1.Container{container},
		ServiceAccountName:            fmt.Sprint(orEmpty(promSpecField(o, "serviceAccountName"))),
		TerminationGracePeriodSeconds: ptrTo(int64(600)),
	}
	if pc, ok := promSpecField(o, "priorityClassName").(string); ok {
		pod.PriorityClassName = pc
	}
	var nodeSelector map[string]string
	if fromMap(promSpecField(o, "nodeSelector"), &nodeSelector) == nil {
		pod.NodeSelector = nodeSelector
	}
	var tolerations []corev1.Toleration
	if fromMap(promSpecField(o, "tolerations"), &tolerations) == nil {
		pod.Tolerations = tolerations
	}
	return pod
}

// promInputHash is the input-hash annotation: a hash of the generated spec and labels, so
// that the StatefulSet is replaced only when they change.
func promInputHash(spec appsv1.StatefulSetSpec, stsLabels map[string]string) string {
	raw, _ := json.Marshal(spec)
	sum := sha256.Sum256(append(raw, []byte(fmt.Sprint(stsLabels))...))
	return hex.EncodeToString(sum[:8])
}

// applyStatefulSet creates the StatefulSet, or replaces its spec when what the operator
// generates changed; it returns the stored object.
func (c *Cluster) applyStatefulSet(ctx context.Context, want *appsv1.StatefulSet) (*appsv1.StatefulSet, error) {
	api := c.Client.AppsV1().StatefulSets(want.Namespace)
	got, err := api.Get(ctx, want.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		created, err := api.Create(ctx, want, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("create StatefulSet %s/%s: %w", want.Namespace, want.Name, err)
		}
		return created, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get StatefulSet %s/%s: %w", want.Namespace, want.Name, err)
	}
	if got.DeletionTimestamp != nil {
		return nil, fmt.Errorf("StatefulSet %s/%s is being deleted: created again once it is gone", want.Namespace, want.Name)
	}
	if got.Annotations[inputHashAnnotation] == want.Annotations[inputHashAnnotation] {
		return got, nil
	}
	got.Labels, got.Annotations, got.OwnerReferences = want.Labels, want.Annotations, want.OwnerReferences
	got.Spec.Replicas, got.Spec.Template, got.Spec.VolumeClaimTemplates = want.Spec.Replicas, want.Spec.Template, want.Spec.VolumeClaimTemplates
	updated, err := api.Update(ctx, got, metav1.UpdateOptions{})
	if apierrors.IsInvalid(err) {
		// As upstream's operator ("recreating StatefulSet because the update operation
		// wasn't possible"): a change Kubernetes refuses in place, such as the volume
		// claims, deletes the StatefulSet in the foreground and a later round creates it.
		fg := metav1.DeletePropagationForeground
		if derr := api.Delete(ctx, want.Name, metav1.DeleteOptions{PropagationPolicy: &fg}); derr != nil && !apierrors.IsNotFound(derr) {
			return nil, fmt.Errorf("delete StatefulSet %s/%s to recreate it: %w", want.Namespace, want.Name, derr)
		}
		return nil, fmt.Errorf("StatefulSet %s/%s deleted to be recreated: %w", want.Namespace, want.Name, err)
	}
	if err != nil {
		return nil, fmt.Errorf("update StatefulSet %s/%s: %w", want.Namespace, want.Name, err)
	}
	return updated, nil
}

// ensureGoverningService creates the headless Service prometheus-operated or
// alertmanager-operated of a namespace.
func (c *Cluster) ensureGoverningService(ctx context.Context, k promKind, ns string, owner metav1.OwnerReference) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: k.governing, Namespace: ns, Labels: map[string]string{"operated-" + k.app: "true",
			"app.kubernetes.io/managed-by": "prometheus-operator"}, OwnerReferences: []metav1.OwnerReference{owner}},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app.kubernetes.io/name": k.app},
			Ports: []corev1.ServicePort{{Name: "http-web", Port: k.port}}},
	}
	if _, err := c.Client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Service %s/%s: %w", ns, k.governing, err)
	}
	return nil
}

func ownedBy(refs []metav1.OwnerReference, kind, name string) bool {
	for _, r := range refs {
		if r.Kind == kind && r.Name == name {
			return true
		}
	}
	return false
}

// podReady is the operator's Pod.Ready: Running with condition Ready True.
func podReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, cd := range p.Status.Conditions {
		if cd.Type == corev1.PodReady {
			return cd.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podMessage is the message of the first False condition of a pod, in the operator's order.
func podMessage(p *corev1.Pod) string {
	for _, t := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		for _, cd := range p.Status.Conditions {
			if cd.Type == t && cd.Status == corev1.ConditionFalse {
				return cd.Message
			}
		}
	}
	return ""
}

// fromMap converts an unstructured value into a typed one (an error for nil).
func fromMap(v any, into any) error {
	if v == nil {
		return fmt.Errorf("absent")
	}
	if m, ok := v.(map[string]any); ok {
		return runtime.DefaultUnstructuredConverter.FromUnstructured(m, into)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, into)
}

func orEmpty(v any) any {
	if v == nil {
		return ""
	}
	return v
}

func ptrTo[T any](v T) *T { return &v }
