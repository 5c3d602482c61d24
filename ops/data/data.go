package data

import (
	"context"
	"fmt"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/engine"
	"runr.dev/console/helm"
	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/store"
)

// Job kinds of the data services and their bindings.
const (
	KindDataInstall = "data-install"
	KindDataRemove  = "data-remove"
	KindBind        = "data-bind"
	KindUnbind      = "data-unbind"
)

// DataKinds are the job kinds of the Data services tab.
var DataKinds = []string{KindDataInstall, KindDataRemove, KindBind, KindUnbind, KindSkupperSite}

// The upstream charts of the data services: CloudNativePG's operator, and SeaweedFS as
// the managed S3-compatible object store (README: why SeaweedFS).
var (
	ChartCloudNativePG = helm.ChartRef{Repo: "https://cloudnative-pg.github.io/charts", Name: "cloudnative-pg", Version: "0.29.0"}
	ChartSeaweedFS     = helm.ChartRef{Repo: "https://seaweedfs.github.io/seaweedfs/helm", Name: "seaweedfs", Version: "4.44.0"}
)

// Names of the data services on the cluster.
const (
	// DataNamespace holds every data service and the Jobs that manage them.
	DataNamespace = "runr-data"
	// CNPGNamespace and CNPGRelease are CloudNativePG's operator, as its docs install it.
	CNPGNamespace = "cnpg-system"
	CNPGRelease   = "cnpg"
	// PostgresCluster is the CloudNativePG Cluster of the region's databases; its
	// read-write Service is <cluster>-rw.
	PostgresCluster = "runr-postgres"
	// SeaweedFSRelease is the object store's release; the chart's all-in-one mode makes
	// the Deployment, Service and volume claim <release>-all-in-one(-data).
	SeaweedFSRelease = "seaweedfs"
	// SeaweedFSImage is the chart's own image at its appVersion (global.seaweedfs.image.name),
	// which the bucket Jobs run weed shell from.
	SeaweedFSImage = "chrislusf/seaweedfs:4.44"
	// KVAdminSecret holds the region Redis's address and password for the ACL Jobs.
	KVAdminSecret = "runr-kv-admin"
)

// Ports of the data services.
const (
	seaweedMasterPort = 9333
	seaweedFilerPort  = 8888
	seaweedS3Port     = 8333
	postgresPort      = 5432
)

// Default volume sizes of the managed object store and PostgreSQL (GiB; chosen: the
// SeaweedFS chart's own 10Gi default for both).
const DefaultSizeGi = 10

// SeaweedAllInOne is the object store's Deployment, Service and volume claim prefix.
const SeaweedAllInOne = SeaweedFSRelease + "-all-in-one"

// seaweedHost is the object store's Service in the cluster.
func seaweedHost() string { return SeaweedAllInOne + "." + DataNamespace + ".svc.cluster.local" }

// ObjectEndpoint is the managed object store's S3 endpoint inside the cluster.
func ObjectEndpoint() string { return fmt.Sprintf("http://%s:%d", seaweedHost(), seaweedS3Port) }

// PostgresHost is the read-write Service of the region's PostgreSQL cluster.
func PostgresHost() string {
	return PostgresCluster + "-rw." + DataNamespace + ".svc.cluster.local"
}

// CNPGValues are CloudNativePG's chart values: its CRDs from the chart and a
// cluster-wide operator (the defaults, said out loud).
func CNPGValues() map[string]any {
	return map[string]any{"crds": map[string]any{"create": true}, "config": map[string]any{"clusterWide": true}}
}

// SeaweedFSValues are the object store's chart values: one all-in-one Deployment (master,
// volume, filer and the S3 gateway with authentication) on a volume claim, and no SFTP
// server (nothing of RunR uses it). The chart renders its SFTP passwords Secret for an
// all-in-one release whatever the switch says: the removal deletes it (objectRemoveSteps).
func SeaweedFSValues(storageClass string, sizeGi int) map[string]any {
	data := map[string]any{"type": "persistentVolumeClaim", "size": fmt.Sprintf("%dGi", sizeGi)}
	if storageClass != "" {
		data["storageClass"] = storageClass
	}
	return map[string]any{
		"master": map[string]any{"enabled": false},
		"volume": map[string]any{"enabled": false},
		"filer":  map[string]any{"enabled": false},
		"sftp":   map[string]any{"enabled": false},
		"allInOne": map[string]any{
			"enabled": true,
			"s3":      map[string]any{"enabled": true, "enableAuth": true},
			"sftp":    map[string]any{"enabled": false},
			"data":    data,
		},
	}
}

// Params name a data service job's service and its volume.
type Params struct {
	Service string `json:"service"`
	// Mode is the object store's (managed or external); External its endpoint.
	Mode         string            `json:"mode,omitempty"`
	External     *ExternalEndpoint `json:"external,omitempty"`
	StorageClass string            `json:"storage_class,omitempty"`
	SizeGi       int               `json:"size_gi,omitempty"`
}

func (s *Service) registerKinds() {
	failed := func(ctx context.Context, jc *engine.JobContext, err error) {
		var p Params
		if err == nil || jc.Params(&p) != nil {
			return
		}
		if r, rerr := s.JobRegion(ctx, jc); rerr == nil {
			d := r.DataServices.V.Service(p.Service)
			d.Status, d.Message = store.ComponentError, err.Error()
			s.Record(s.Store.SetRegionDataService(ctx, r.ID, p.Service, d))
		}
	}
	s.Engine.Register(&engine.Kind{Name: KindDataInstall, Finished: failed, Plan: engine.PlanWith(s.InstallSteps)})
	s.Engine.Register(&engine.Kind{Name: KindDataRemove, Finished: failed, Plan: engine.PlanWith(s.dataRemoveSteps)})
	s.registerBindingKinds()
	s.registerSkupperKinds()
}

// dataStart is the first step of a data service job: it records the service's state.
func (s *Service) dataStart(p Params, status store.ComponentStatus) engine.Step {
	return s.RegionStep("start", "Record the "+string(status)+" state", func(ctx context.Context, jc *engine.JobContext, r *store.Region, _ *kube.Cluster) error {
		d := r.DataServices.V.Service(p.Service)
		d.Status, d.Message = status, ""
		if status == store.ComponentInstalling {
			d.StorageClass, d.SizeGi = p.StorageClass, p.SizeGi
			if p.Service == store.DataObject {
				p.External.record(&d)
			}
		}
		return s.Store.SetRegionDataService(ctx, r.ID, p.Service, d)
	})
}

// dataDone is the last step of an install: the service is ready.
func (s *Service) dataDone(p Params) engine.Step {
	return s.RegionStep("ready", "Record the service ready", func(ctx context.Context, jc *engine.JobContext, r *store.Region, _ *kube.Cluster) error {
		d := r.DataServices.V.Service(p.Service)
		d.Status, d.Message = store.ComponentReady, ""
		return s.Store.SetRegionDataService(ctx, r.ID, p.Service, d)
	})
}

func (s *Service) InstallSteps(p Params) []engine.Step {
	var mid []engine.Step
	switch p.Service {
	case store.DataKV:
		mid = s.kvInstallSteps()
	case store.DataObject:
		mid = s.objectInstallSteps(p)
	case store.DataPostgres:
		mid = s.postgresInstallSteps(p)
	}
	return append(append([]engine.Step{s.dataStart(p, store.ComponentInstalling)}, mid...), s.dataDone(p))
}

func (s *Service) dataRemoveSteps(p Params) []engine.Step {
	unused := s.RegionStep("unused", "Check that no binding uses the service", func(ctx context.Context, jc *engine.JobContext, r *store.Region, _ *kube.Cluster) error {
		bs, err := s.Store.RegionBindings(ctx, r.ID, p.Service)
		if err != nil {
			return err
		}
		if len(bs) > 0 {
			return fmt.Errorf("%s is still bound by %s: unbind them first", p.Service, bindingProjects(bs))
		}
		d := r.DataServices.V.Service(p.Service)
		d.Status, d.Message = store.ComponentRemoving, ""
		return s.Store.SetRegionDataService(ctx, r.ID, p.Service, d)
	})
	var mid []engine.Step
	switch p.Service {
	case store.DataKV:
		mid = s.kvRemoveSteps()
	case store.DataObject:
		mid = s.objectRemoveSteps(p)
	case store.DataPostgres:
		mid = s.postgresRemoveSteps()
	}
	done := s.RegionStep("record", "Record the removal", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
		if err := s.Store.SetRegionDataService(ctx, r.ID, p.Service, store.DataService{Status: store.ComponentNotInstalled}); err != nil {
			return err
		}
		return s.dropDataNamespace(ctx, jc, c, r, p.Service)
	})
	return append(append([]engine.Step{unused}, mid...), done)
}

// dropDataNamespace deletes runr-data once no data service of the region is left in it.
func (s *Service) dropDataNamespace(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, r *store.Region, removed string) error {
	for _, name := range store.DataServiceNames {
		if name != removed && r.DataServices.V.Service(name).State() != store.ComponentNotInstalled {
			jc.Note("%s removed; %s stays for the other data services", removed, DataNamespace)
			return nil
		}
	}
	if err := kit.DeleteNamespace(ctx, jc, c, DataNamespace); err != nil {
		return err
	}
	jc.Note("%s removed with its data; no data service is left, so namespace %s is gone too", removed, DataNamespace)
	return nil
}

// bindingProjects names the projects of bindings: "shop (kv), blog (kv)".
func bindingProjects(bs []store.Binding) string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = b.ProjectSlug + " (" + b.Service + ")"
	}
	return strings.Join(out, ", ")
}

// DataJob is a short-lived Job in runr-data that manages a data service from inside the
// cluster (the console never connects to the cluster's network): a shell script run
// with plain env and env from the keys of Secrets (secret name → env name → key).
type DataJob struct {
	Name    string
	Image   string
	Script  string
	Env     map[string]string
	Secrets map[string]map[string]string
	// What the wait says the Job does.
	What string
	Hint string
}

// runDataJob replaces a Job of the same name with this one and waits for it to complete.
func (s *Service) runDataJob(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, dj DataJob) error {
	jobs := c.Clientset.BatchV1().Jobs(DataNamespace)
	bg := metav1.DeletePropagationBackground
	if err := jobs.Delete(ctx, dj.Name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Job %s/%s: %w", DataNamespace, dj.Name, err)
	}
	if err := jc.Wait(ctx, "the previous Job "+DataNamespace+"/"+dj.Name+" to be deleted", engine.WaitOpts{}, func(ctx context.Context) (bool, string, error) {
		_, err := jobs.Get(ctx, dj.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), "", nil
	}); err != nil {
		return err
	}
	spec := dataJobSpec(dj)
	if err := s.MirrorPodSpec(ctx, jc, &spec.Spec.Template.Spec); err != nil {
		return err
	}
	if _, err := jobs.Create(ctx, spec, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create Job %s/%s: %w", DataNamespace, dj.Name, err)
	}
	return jc.Wait(ctx, fmt.Sprintf("Job %s/%s to %s", DataNamespace, dj.Name, dj.What), engine.WaitOpts{Timeout: s.Cfg.StorageTestTimeout * 3,
		Hint: kit.OrV(dj.Hint, "kubectl logs -n "+DataNamespace+" job/"+dj.Name)}, c.JobComplete(DataNamespace, dj.Name))
}

// dataJobSpec is the Job of a DataJob: no retries, gone ten minutes after it finished.
func dataJobSpec(dj DataJob) *batchv1.Job {
	var env []corev1.EnvVar
	for _, k := range kit.SortedKeys(dj.Env) {
		env = append(env, corev1.EnvVar{Name: k, Value: dj.Env[k]})
	}
	for _, secret := range kit.SortedKeys(dj.Secrets) {
		for _, name := range kit.SortedKeys(dj.Secrets[secret]) {
			env = append(env, corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: dj.Secrets[secret][name]}}})
		}
	}
	backoff, ttl := int32(0), int32(600)
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: dj.Name, Labels: kit.ManagedLabels(map[string]string{"app.kubernetes.io/component": "data-services"})},
		Spec: batchv1.JobSpec{BackoffLimit: &backoff, TTLSecondsAfterFinished: &ttl, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: kit.ManagedLabels(nil)},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "run", Image: dj.Image, Command: []string{"sh", "-ec", dj.Script}, Env: env}}}}}}
}

// applySecret writes a Secret the console owns.
func applySecret(ctx context.Context, c *kube.Cluster, ns, name string, labels map[string]string, data map[string]string) error {
	sd := map[string]any{}
	for k, v := range data {
		sd[k] = v
	}
	_, err := c.ApplyObject(ctx, map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": kit.ToAnyMap(kit.ManagedLabels(labels))}, "stringData": sd})
	return err
}
