package testcluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
)

// The simulated CloudNativePG operator (cloudnative-pg/cloudnative-pg v1.30.0, the
// operator of chart cloudnative-pg 0.29.0: pkg/specs/pods.go, services.go, pvcs,
// internal/controller/cluster_create.go, pkg/utils/labels_annotations.go,
// api/v1/cluster_types.go). While a Deployment labelled app.kubernetes.io/name=cloudnative-pg
// is available, for each Cluster it makes, owned by the Cluster (so that deleting the
// Cluster deletes them, its volumes included):
//
//   - per instance n (1..spec.instances) the claim <cluster>-<n> (spec.storage size and
//     class; labels cnpg.io/cluster, cnpg.io/instanceName, cnpg.io/pvcRole=PG_DATA) and the
//     pod <cluster>-<n> on it (labels cnpg.io/cluster, cnpg.io/instanceName,
//     cnpg.io/podRole=instance, cnpg.io/instanceRole and role primary for the first,
//     replica for the others; image ghcr.io/cloudnative-pg/postgresql:18.4-system-trixie);
//   - the Services <cluster>-rw (the primary), <cluster>-ro (replicas) and <cluster>-r (any
//     instance) on port 5432, and the Secret <cluster>-app of the application user;
//   - its status: instances, readyInstances (running pods on bound claims), phase
//     "Cluster in healthy state" once every instance is ready, the Ready condition,
//     currentPrimary, writeService and readService.
//
// For a Database or a DatabaseRole whose Cluster is ready it writes status.applied and
// status.observedGeneration (upstream's instance manager applies them on the primary); a
// Database whose owner is neither a role the Cluster declares (a DatabaseRole of it, or
// app) is refused with a message, as PostgreSQL refuses CREATE DATABASE … OWNER of a
// missing role. Their deletion drops them at once (upstream's finalizers are not played).

var (
	gvrCNPGCluster  = schema.GroupVersionResource{Group: "postgresql.cnpg.io", Version: "v1", Resource: "clusters"}
	gvrCNPGDatabase = schema.GroupVersionResource{Group: "postgresql.cnpg.io", Version: "v1", Resource: "databases"}
	gvrCNPGRole     = schema.GroupVersionResource{Group: "postgresql.cnpg.io", Version: "v1", Resource: "databaseroles"}
)

// CloudNativePG's names.
const (
	cnpgOperatorSel   = "app.kubernetes.io/name=cloudnative-pg"
	CNPGClusterLabel  = "cnpg.io/cluster"
	cnpgInstanceLabel = "cnpg.io/instanceName"
	cnpgRoleLabel     = "cnpg.io/instanceRole"
	cnpgPostgresImage = "ghcr.io/cloudnative-pg/postgresql:18.4-system-trixie"
	cnpgHealthy       = "Cluster in healthy state"
)

func (c *Cluster) reconcileCNPG(ctx context.Context, dyn dynamic.Interface) error {
	d, err := c.availableDeployment(ctx, cnpgOperatorSel, "")
	if err != nil || d == nil {
		return err
	}
	clusters, err := dyn.Resource(gvrCNPGCluster).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list CloudNativePG Clusters: %w", err)
	}
	ready := map[string]bool{}
	var errs []error
	for i := range clusters.Items {
		o := &clusters.Items[i]
		if o.GetDeletionTimestamp() != nil {
			continue
		}
		ok, err := c.reconcileCNPGCluster(ctx, dyn, o)
		errs = append(errs, err)
		ready[o.GetNamespace()+"/"+o.GetName()] = ok
	}
	errs = append(errs, c.applyCNPGObjects(ctx, dyn, ready))
	return errors.Join(errs...)
}

// reconcileCNPGCluster makes one Cluster's volumes, pods, Services and Secret, writes its
// status and reports whether it is ready.
func (c *Cluster) reconcileCNPGCluster(ctx context.Context, dyn dynamic.Interface, o *unstructured.Unstructured) (bool, error) {
	ns, name := o.GetNamespace(), o.GetName()
	n, found, _ := unstructured.NestedInt64(o.Object, "spec", "instances")
	if !found || n < 1 {
		n = 1
	}
	yes := true
	owner := metav1.OwnerReference{APIVersion: "postgresql.cnpg.io/v1", Kind: "Cluster", Name: name, UID: o.GetUID(),
		Controller: &yes, BlockOwnerDeletion: &yes}
	readyCount := int64(0)
	var errs []error
	for i := int64(1); i <= n; i++ {
		ok, err := c.cnpgInstance(ctx, o, owner, i)
		errs = append(errs, err)
		if ok {
			readyCount++
		}
	}
	errs = append(errs, c.cnpgServices(ctx, ns, name, owner))
	status, _, _ := unstructured.NestedMap(o.Object, "status")
	if status == nil {
		status = map[string]any{}
	}
	healthy := readyCount == n
	status["instances"], status["readyInstances"] = n, readyCount
	status["currentPrimary"], status["writeService"], status["readService"] = name+"-1", name+"-rw", name+"-r"
	status["phase"] = "Setting up primary"
	cond := condition{Type: "Ready", Status: "False", Reason: "ClusterIsNotReady", Message: "Cluster Is Not Ready"}
	if healthy {
		status["phase"] = cnpgHealthy
		cond = condition{Type: "Ready", Status: "True", Reason: "ClusterIsReady", Message: "Cluster is Ready"}
	}
	setConditions(status, []condition{cond})
	errs = append(errs, updateStatus(ctx, dyn.Resource(gvrCNPGCluster).Namespace(ns), o, status))
	return healthy, errors.Join(errs...)
}

// cnpgInstance makes instance i's claim and pod and reports whether it runs on a bound
// claim.
func (c *Cluster) cnpgInstance(ctx context.Context, o *unstructured.Unstructured, owner metav1.OwnerReference, i int64) (bool, error) {
	ns, cluster := o.GetNamespace(), o.GetName()
	inst := cluster + "-" + strconv.FormatInt(i, 10)
	labels := map[string]string{CNPGClusterLabel: cluster, cnpgInstanceLabel: inst}
	pvcs := c.Client.CoreV1().PersistentVolumeClaims(ns)
	pvc, err := pvcs.Get(ctx, inst, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		size, _, _ := unstructured.NestedString(o.Object, "spec", "storage", "size")
		want := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: inst, Labels: merged(labels, map[string]string{"cnpg.io/pvcRole": "PG_DATA"}),
			OwnerReferences: []metav1.OwnerReference{owner}},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(orDefault(size, "1Gi"))}}}}
		if sc, _, _ := unstructured.NestedString(o.Object, "spec", "storage", "storageClass"); sc != "" {
			want.Spec.StorageClassName = &sc
		}
		pvc, err = pvcs.Create(ctx, want, metav1.CreateOptions{FieldManager: "runr-testcluster"})
	}
	if err != nil {
		return false, fmt.Errorf("claim %s/%s: %w", ns, inst, err)
	}
	role := "replica"
	if i == 1 {
		role = "primary"
	}
	pods := c.Client.CoreV1().Pods(ns)
	pod, err := pods.Get(ctx, inst, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		pod, err = pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: inst,
			Labels:          merged(labels, map[string]string{"cnpg.io/podRole": "instance", cnpgRoleLabel: role, "role": role}),
			OwnerReferences: []metav1.OwnerReference{owner}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "postgres", Image: cnpgPostgresImage,
				Ports: []corev1.ContainerPort{{Name: "postgresql", ContainerPort: 5432}}}},
				Volumes: []corev1.Volume{{Name: "pgdata", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: inst}}}}}},
			metav1.CreateOptions{FieldManager: "runr-testcluster"})
	}
	if err != nil {
		return false, fmt.Errorf("pod %s/%s: %w", ns, inst, err)
	}
	return pvc.Status.Phase == corev1.ClaimBound && pod.Status.Phase == corev1.PodRunning, nil
}

// cnpgServices makes the Cluster's Services and its application user's Secret.
func (c *Cluster) cnpgServices(ctx context.Context, ns, cluster string, owner metav1.OwnerReference) error {
	svcs := map[string]map[string]string{
		cluster + "-rw": {CNPGClusterLabel: cluster, cnpgRoleLabel: "primary"},
		cluster + "-ro": {CNPGClusterLabel: cluster, cnpgRoleLabel: "replica"},
		cluster + "-r":  {CNPGClusterLabel: cluster, "cnpg.io/podRole": "instance"},
	}
	var errs []error
	for name, sel := range svcs {
		_, err := c.Client.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{CNPGClusterLabel: cluster}, OwnerReferences: []metav1.OwnerReference{owner}},
			Spec: corev1.ServiceSpec{Selector: sel, Ports: []corev1.ServicePort{{Name: "postgres", Port: 5432, TargetPort: intstr.FromInt32(5432)}}}},
			metav1.CreateOptions{FieldManager: "runr-testcluster"})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			errs = append(errs, fmt.Errorf("Service %s/%s: %w", ns, name, err))
		}
	}
	_, err := c.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: cluster + "-app",
		Labels: map[string]string{CNPGClusterLabel: cluster, "cnpg.io/userType": "app"}, OwnerReferences: []metav1.OwnerReference{owner}},
		Type: corev1.SecretTypeBasicAuth, StringData: map[string]string{"username": "app", "password": "simulated", "dbname": "app"}},
		metav1.CreateOptions{FieldManager: "runr-testcluster"})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		errs = append(errs, fmt.Errorf("Secret %s/%s-app: %w", ns, cluster, err))
	}
	return errors.Join(errs...)
}

// applyCNPGObjects reports the Databases and DatabaseRoles of ready Clusters applied.
func (c *Cluster) applyCNPGObjects(ctx context.Context, dyn dynamic.Interface, ready map[string]bool) error {
	roles, err := dyn.Resource(gvrCNPGRole).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list DatabaseRoles: %w", err)
	}
	declared := map[string]bool{}
	var errs []error
	for i := range roles.Items {
		o := &roles.Items[i]
		cl, _, _ := unstructured.NestedString(o.Object, "spec", "cluster", "name")
		name, _, _ := unstructured.NestedString(o.Object, "spec", "name")
		if !ready[o.GetNamespace()+"/"+cl] || o.GetDeletionTimestamp() != nil {
			continue
		}
		declared[o.GetNamespace()+"/"+cl+"/"+name] = true
		errs = append(errs, cnpgApplied(ctx, dyn.Resource(gvrCNPGRole).Namespace(o.GetNamespace()), o, ""))
	}
	dbs, err := dyn.Resource(gvrCNPGDatabase).List(ctx, metav1.ListOptions{})
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("list Databases: %w", err))...)
	}
	for i := range dbs.Items {
		o := &dbs.Items[i]
		cl, _, _ := unstructured.NestedString(o.Object, "spec", "cluster", "name")
		owner, _, _ := unstructured.NestedString(o.Object, "spec", "owner")
		if !ready[o.GetNamespace()+"/"+cl] || o.GetDeletionTimestamp() != nil {
			continue
		}
		refusal := ""
		if owner != "app" && !declared[o.GetNamespace()+"/"+cl+"/"+owner] {
			refusal = fmt.Sprintf("while creating database: role %q does not exist", owner)
		}
		errs = append(errs, cnpgApplied(ctx, dyn.Resource(gvrCNPGDatabase).Namespace(o.GetNamespace()), o, refusal))
	}
	return errors.Join(errs...)
}

// cnpgApplied writes a Database's or DatabaseRole's status: applied, or refused with a
// message.
func cnpgApplied(ctx context.Context, ri dynamic.ResourceInterface, o *unstructured.Unstructured, refusal string) error {
	status := map[string]any{"applied": refusal == "", "observedGeneration": o.GetGeneration()}
	if refusal != "" {
		status["message"] = refusal
	}
	return updateStatus(ctx, ri, o, status)
}

func merged(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
