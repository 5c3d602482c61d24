package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/problem"
	"runr.dev/console/store"
)

// Namespace is where the internal registry runs.
const Namespace = "runr-registry"

// Registry names on the cluster.
const (
	ZotRelease       = "runr-zot"
	MirrorDaemonSet  = "runr-registry-mirror"
	PrepullDaemonSet = "runr-registry-prepull"
	StorageTestPVC   = "storage-test"
	RegistryTestJob  = "registry-test"
)

// Params are the registry fields of a setup (no secrets).
type Params struct {
	Mode             store.RegistryMode `json:"registry_mode"`
	StorageType      string             `json:"storage_type"` // pvc | s3
	StorageClass     string             `json:"storage_class,omitempty"`
	Size             string             `json:"size,omitempty"`
	S3Endpoint       string             `json:"s3_endpoint,omitempty"`
	S3Bucket         string             `json:"s3_bucket,omitempty"`
	S3Region         string             `json:"s3_region,omitempty"`
	S3AccessKey      string             `json:"s3_access_key,omitempty"`
	ExternalAddress  string             `json:"external_address,omitempty"`
	ExternalUsername string             `json:"external_username,omitempty"`
}

// Secrets are the registry's secret fields.
type Secrets struct {
	S3SecretKey      string `json:"s3_secret_key,omitempty"`
	ExternalPassword string `json:"external_password,omitempty"`
}

// Address is where the region's nodes and builds reach the registry.
// InternalAddress is the internal registry (Zot) as the cluster's pods and its node
// mirror reach it, over plain HTTP.
const InternalAddress = ZotRelease + "." + Namespace + ".svc.cluster.local:5000"

func (p Params) Address() string {
	switch p.Mode {
	case store.RegistryInternal:
		return InternalAddress
	case store.RegistryExternal:
		return p.ExternalAddress
	}
	return ""
}

// Config is the stored, non-secret form.
func (p Params) Config() store.RegistryConfig {
	return store.RegistryConfig{StorageType: p.StorageType, StorageClass: p.StorageClass, Size: p.Size,
		S3Endpoint: p.S3Endpoint, S3Bucket: p.S3Bucket, S3Region: p.S3Region, S3AccessKey: p.S3AccessKey,
		ExternalAddress: p.ExternalAddress, ExternalUsername: p.ExternalUsername}
}

// SecretValue is the stored secret of the registry (S3 secret key or external password).
func (p Params) SecretValue(s Secrets) string {
	if p.Mode == store.RegistryExternal {
		return s.ExternalPassword
	}
	return s.S3SecretKey
}

// StorageTest creates a test volume of the chosen class and waits for it to bind.
func (s *Service) StorageTest(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, p Params, sec Secrets) error {
	switch {
	case p.Mode == store.RegistryExternal:
		return s.externalRegistryTest(ctx, jc, c, p, sec)
	case p.Mode != store.RegistryInternal:
		jc.Note("No registry chosen: nothing to test")
		return engine.ErrSkip
	case p.StorageType == "s3":
		return s.s3Test(ctx, jc, c, p, sec)
	}
	if _, err := kit.EnsureNamespace(ctx, jc, c, Namespace, nil); err != nil {
		return err
	}
	pvcs := c.Clientset.CoreV1().PersistentVolumeClaims(Namespace)
	// A test volume left by an interrupted run is replaced.
	_ = pvcs.Delete(ctx, StorageTestPVC, metav1.DeleteOptions{})
	if err := jc.Wait(ctx, "the previous test volume to be deleted", engine.WaitOpts{}, func(ctx context.Context) (bool, string, error) {
		_, err := pvcs.Get(ctx, StorageTestPVC, metav1.GetOptions{})
		return apierrors.IsNotFound(err), "", nil
	}); err != nil {
		return err
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: StorageTestPVC, Labels: kit.ManagedLabels(nil)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}},
		},
	}
	class := p.StorageClass
	if class != "" {
		pvc.Spec.StorageClassName = &class
	} else {
		class = "the default class"
	}
	if _, err := pvcs.Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create the test volume %s/%s: %w", Namespace, StorageTestPVC, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10e9)
		defer cancel()
		_ = pvcs.Delete(dctx, StorageTestPVC, metav1.DeleteOptions{})
	}()
	err := jc.Wait(ctx, fmt.Sprintf("PVC %s/%s to bind", Namespace, StorageTestPVC), engine.WaitOpts{
		Timeout: s.Cfg.StorageTestTimeout,
		Hint:    fmt.Sprintf("StorageClass %s does not provision volumes: choose another StorageClass (or fix its provisioner), then Retry", class),
	}, c.PVCBound(Namespace, StorageTestPVC))
	if err != nil {
		return err
	}
	jc.Note("A test volume of %s bound", class)
	return nil
}

// InstallMirror runs the node mirror DaemonSet that points containerd at the registry.
func (s *Service) InstallMirror(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, p Params) error {
	if p.Mode != store.RegistryInternal {
		jc.Note("No internal registry: no node mirror")
		return engine.ErrSkip
	}
	image, err := s.JobImage(ctx, jc, s.Cfg.AgentImage)
	if err != nil {
		return err
	}
	ds := mirrorDaemonSet(p.Address(), image)
	if _, err := c.ApplyObject(ctx, ds); err != nil {
		return err
	}
	if err := jc.Wait(ctx, "DaemonSet "+Namespace+"/"+MirrorDaemonSet+" to be ready on its nodes", engine.WaitOpts{}, c.DaemonSetReady(Namespace, MirrorDaemonSet)); err != nil {
		return err
	}
	jc.Note("The node mirror writes containerd's hosts.toml for %s, ghcr.io and Docker Hub on every node. "+
		"On plain containerd it also sets config_path, which containerd reads after one restart: its log says so, and `runr registry rolling-restart REGION` "+
		"(or the Registry tab) restarts containerd node by node; k3s and rke2 read it as it is", p.Address())
	return nil
}

func mirrorDaemonSet(registry, image string) map[string]any {
	labels := map[string]any{"app.kubernetes.io/name": MirrorDaemonSet, "app.kubernetes.io/managed-by": "runr"}
	return map[string]any{
		"apiVersion": "apps/v1", "kind": "DaemonSet",
		"metadata": map[string]any{"name": MirrorDaemonSet, "namespace": Namespace, "labels": labels},
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": MirrorDaemonSet}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{
					"tolerations": []any{map[string]any{"operator": "Exists"}},
					"containers": []any{map[string]any{
						"name": "mirror", "image": image, "args": []any{"registry", "mirror", "--root", "/host"},
						"env":             []any{map[string]any{"name": "RUNR_REGISTRY", "value": registry}},
						"securityContext": map[string]any{"privileged": true},
						"resources":       map[string]any{"requests": map[string]any{"cpu": "5m", "memory": "16Mi"}},
						"volumeMounts": []any{
							map[string]any{"name": "containerd", "mountPath": "/host/etc/containerd"},
							map[string]any{"name": "rancher", "mountPath": "/host/var/lib/rancher"},
						},
					}},
					"volumes": []any{
						map[string]any{"name": "containerd", "hostPath": map[string]any{"path": "/etc/containerd", "type": "DirectoryOrCreate"}},
						map[string]any{"name": "rancher", "hostPath": map[string]any{"path": "/var/lib/rancher", "type": "DirectoryOrCreate"}},
					},
				},
			},
		},
	}
}

// prepullDaemonSet pulls the images (RUNR_PREPULL_IMAGES) on every node with init containers. Images need
// not have a shell: the first init container (the agent image, a static binary) copies
// runr into a shared volume, and each image's container runs `runr prepull done` from it.
func prepullDaemonSet(labels map[string]string, agentImage string, images []string) *appsv1.DaemonSet {
	shared := corev1.VolumeMount{Name: "runr", MountPath: "/runr"}
	inits := []corev1.Container{{Name: "runr", Image: agentImage, Args: []string{"prepull", "copy", "/runr/runr"}, VolumeMounts: []corev1.VolumeMount{shared}}}
	for i, img := range images {
		inits = append(inits, corev1.Container{Name: fmt.Sprintf("pull-%d", i), Image: img,
			Command: []string{"/runr/runr"}, Args: []string{"prepull", "done", img}, VolumeMounts: []corev1.VolumeMount{shared}})
	}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: PrepullDaemonSet, Namespace: Namespace, Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Tolerations:    []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					InitContainers: inits,
					Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m"), corev1.ResourceMemory: resource.MustParse("8Mi")}}}},
					Volumes: []corev1.Volume{{Name: "runr", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				},
			},
		},
	}
}

// Prepull runs a short-lived DaemonSet whose init containers pull the common images.
func (s *Service) Prepull(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, p Params) error {
	if p.Mode == store.RegistryNone || p.Mode == "" {
		jc.Note("No registry: nothing to pre-pull")
		return engine.ErrSkip
	}
	if _, err := kit.EnsureNamespace(ctx, jc, c, Namespace, nil); err != nil {
		return err
	}
	labels := map[string]string{"app.kubernetes.io/name": PrepullDaemonSet, "app.kubernetes.io/managed-by": "runr"}
	ds := prepullDaemonSet(labels, s.Cfg.AgentImage, s.Cfg.PrepullImages)
	if err := s.MirrorPodSpec(ctx, jc, &ds.Spec.Template.Spec); err != nil {
		return err
	}
	dss := c.Clientset.AppsV1().DaemonSets(Namespace)
	if _, err := dss.Get(ctx, PrepullDaemonSet, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		if _, err := dss.Create(ctx, ds, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create DaemonSet %s/%s: %w", Namespace, PrepullDaemonSet, err)
		}
	}
	if err := jc.Wait(ctx, "DaemonSet "+Namespace+"/"+PrepullDaemonSet+" to pull the images on every node", engine.WaitOpts{}, c.DaemonSetReady(Namespace, PrepullDaemonSet)); err != nil {
		return err
	}
	if err := dss.Delete(ctx, PrepullDaemonSet, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete DaemonSet %s/%s: %w", Namespace, PrepullDaemonSet, err)
	}
	jc.Note("Pre-pulled %d images on every node: %s", len(s.Cfg.PrepullImages), strings.Join(s.Cfg.PrepullImages, ", "))
	return nil
}

// remove removes the internal registry: node mirror, Helm release, and the
// namespace (with its volume) when the console created it.
func (s *Service) remove(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, r *store.Region) error {
	if r.RegistryMode != store.RegistryInternal {
		jc.Note("External registry: the console forgets it; nothing runs on the cluster")
		return nil
	}
	if err := c.Clientset.AppsV1().DaemonSets(Namespace).Delete(ctx, MirrorDaemonSet, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete DaemonSet %s/%s: %w", Namespace, MirrorDaemonSet, err)
	}
	jc.Logf("Deleted the node mirror %s/%s", Namespace, MirrorDaemonSet)
	if err := s.HelmUninstall(ctx, jc, c, Namespace, ZotRelease); err != nil {
		return err
	}
	ns, err := c.Clientset.CoreV1().Namespaces().Get(ctx, Namespace, metav1.GetOptions{})
	if err == nil && ns.Labels["app.kubernetes.io/managed-by"] == "runr" {
		if err := kit.DeleteNamespace(ctx, jc, c, Namespace); err != nil {
			return err
		}
		jc.Logf("Deleted namespace %s with the registry's volume", Namespace)
	}
	jc.Note("Removed the internal registry")
	return nil
}

// Input is the registry of a region: the body of POST
// /api/knative-regions/{id}/registry (and of its test), and the registry part of a setup.
type Input struct {
	RegistryMode     store.RegistryMode `json:"registry_mode"`
	StorageType      string             `json:"storage_type"`
	PVCConfig        PVCConfig          `json:"pvc_config"`
	S3Config         S3Config           `json:"s3_config"`
	ExternalAddress  string             `json:"external_address"`
	ExternalUsername string             `json:"external_username"`
	ExternalPassword string             `json:"external_password"`
}

// PVCConfig is the volume of an internal registry stored on a PVC.
type PVCConfig struct {
	StorageClass string `json:"storageClass"`
	Size         string `json:"size"`
}

// S3Config is the bucket of an internal registry stored in S3.
type S3Config struct {
	Endpoint  string `json:"endpoint"`
	Bucket    string `json:"bucket"`
	Region    string `json:"region"`
	AccessKey string `json:"access_key"`
	SecretKey string `json:"secret_key"`
}

// Params splits the input into the job's parameters and its secrets (an internal
// registry without a storage type is on a PVC).
func (in Input) Params() (Params, Secrets) {
	p := Params{Mode: in.RegistryMode, StorageType: in.StorageType,
		StorageClass: strings.TrimSpace(in.PVCConfig.StorageClass), Size: strings.TrimSpace(in.PVCConfig.Size),
		S3Endpoint: in.S3Config.Endpoint, S3Bucket: in.S3Config.Bucket, S3Region: in.S3Config.Region, S3AccessKey: in.S3Config.AccessKey,
		ExternalAddress: strings.TrimSpace(in.ExternalAddress), ExternalUsername: in.ExternalUsername}
	if p.Mode == store.RegistryInternal && p.StorageType == "" {
		p.StorageType = "pvc"
	}
	return p, Secrets{S3SecretKey: in.S3Config.SecretKey, ExternalPassword: in.ExternalPassword}
}

// Set checks a registry and queues its setup on a region. An external registry
// may be replaced; an internal one holds the region's images and is removed first.
func (s *Service) Set(ctx context.Context, actor kit.Actor, r *store.Region, in Input) (*store.Job, error) {
	p, sec := in.Params()
	errs := map[string]string{}
	Validate(p, sec, errs)
	if p.Mode == store.RegistryNone || p.Mode == "" {
		errs["registry_mode"] = "Choose internal or external; DELETE removes the registry."
	}
	if p.Mode == store.RegistryInternal {
		owner, err := s.InternalOwner(ctx, r.ClusterKey, r.ID)
		if err != nil {
			return nil, err
		}
		if owner != "" {
			errs["registry_mode"] = SharedRefusal(owner)
		}
	}
	if err := problem.FromFields(errs); err != nil {
		return nil, err
	}
	if r.RegistryMode == store.RegistryInternal && r.RegistryStatus != store.ComponentNotInstalled {
		return nil, &problem.Refused{Reason: "The region has an internal registry: its volume holds the region's images. Remove it first (DELETE /api/knative-regions/" + r.ID + "/registry)."}
	}
	if b, err := s.Busy(ctx, r.ID, KindInstall); err != nil {
		return nil, err
	} else if b {
		return nil, &problem.Refused{Reason: "A registry setup of this region is running already."}
	}
	return s.Install(ctx, actor, r, p, sec)
}

// Install marks the region's registry installing and queues its setup.
func (s *Service) Install(ctx context.Context, actor kit.Actor, r *store.Region, p Params, sec Secrets) (*store.Job, error) {
	raw, err := json.Marshal(sec)
	if err != nil {
		return nil, fmt.Errorf("registry of %s: %w", r.Name, err)
	}
	if err := s.Store.UpdateRegistry(ctx, r.ID, store.RegistryUpdate{Status: store.Ptr(store.ComponentInstalling), Message: store.Ptr("")}); err != nil {
		return nil, fmt.Errorf("registry of %s: %w", r.Name, err)
	}
	return s.Enqueue(ctx, engine.Request{Kind: KindInstall, Title: "Set up the registry of " + r.Name,
		Subject: r.ID, Params: p, Secret: string(raw), CreatedBy: actor.Email})
}

func removeRequest(r *store.Region) engine.Request {
	return engine.Request{Kind: KindRemove, Title: "Remove the registry of " + r.Name, Subject: r.ID}
}

// TeardownParts is the removal of the region's registry (with the node mirror of an
// external one), for the removal of a region with what the console installed.
func (s *Service) TeardownParts(r *store.Region) ([]engine.Part, error) {
	if r.RegistryMode == store.RegistryNone {
		return nil, nil
	}
	p, err := engine.PartOf("Registry", removeRequest(r))
	return []engine.Part{p}, err
}

// Remove queues the removal of a region's registry.
func (s *Service) Remove(ctx context.Context, actor kit.Actor, r *store.Region) (*store.Job, error) {
	if r.RegistryMode == store.RegistryNone {
		return nil, &problem.Refused{Reason: "The region has no registry."}
	}
	req := removeRequest(r)
	req.CreatedBy = actor.Email
	j, err := s.Enqueue(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := s.Store.UpdateRegistry(ctx, r.ID, store.RegistryUpdate{Status: store.Ptr(store.ComponentRemoving)}); err != nil {
		return nil, fmt.Errorf("remove the registry of %s: %w", r.Name, err)
	}
	return j, nil
}

// Test queues the test of a registry's storage, or of an external registry,
// from the region's cluster, installing nothing.
func (s *Service) Test(ctx context.Context, actor kit.Actor, r *store.Region, in Input) (*store.Job, error) {
	p, sec := in.Params()
	errs := map[string]string{}
	Validate(p, sec, errs)
	if err := problem.FromFields(errs); err != nil {
		return nil, err
	}
	raw, err := json.Marshal(sec)
	if err != nil {
		return nil, fmt.Errorf("test the registry of %s: %w", r.Name, err)
	}
	return s.Enqueue(ctx, engine.Request{Kind: KindTest, Title: "Test the registry storage of " + r.Name,
		Subject: r.ID, Params: p, Secret: string(raw), CreatedBy: actor.Email})
}

// Service is the registry of a region: its setup, replacement, test and removal, and the
// rolling restart of containerd that applies a node mirror.
type Service struct{ *kit.Kit }

// New builds the registry feature and registers its kinds of job.
func New(k *kit.Kit) *Service {
	s := &Service{Kit: k}
	s.registerKinds()
	s.registerContainerdKind()
	return s
}
