package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
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

// Names of the registry's S3 credentials and its checks.
const (
	// ZotS3Secret holds the S3 access key and secret key Zot reads from its environment.
	ZotS3Secret = "runr-zot-s3"
	// registryTestSecret holds an external registry's password for its check.
	registryTestSecret = "registry-test-credentials"
	// checkImage runs the checks from a pod (curl with AWS SigV4 signing, and a shell).
	checkImage = "curlimages/curl:8.11.1"
)

// Upstream registries Zot caches on demand: the nodes' pulls of these hosts go through
// the region's Zot (node mirror), stored under a path named after the host.
var pullThrough = []struct{ Host, URL string }{
	{"ghcr.io", "https://ghcr.io"},
	{"docker.io", "https://registry-1.docker.io"},
}

// ZotValues are the internal registry's Helm values (chart zot/zot). The chart has no
// storage values of its own: storage, S3 included, is Zot's config file, which the chart
// mounts at /etc/zot with mountConfig and configFiles. On a PVC, persistence makes the
// chart's StatefulSet with a volume claim template; on S3, Zot reads the credentials from
// its environment.
func ZotValues(p Params) map[string]any {
	vals := map[string]any{
		"service":     map[string]any{"type": "ClusterIP", "port": 5000},
		"mountConfig": true,
		"configFiles": map[string]any{"config.json": ZotConfig(p)},
	}
	if p.StorageType == "s3" {
		secretEnv := func(name, key string) map[string]any {
			return map[string]any{"name": name, "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": ZotS3Secret, "key": key}}}
		}
		vals["persistence"] = false
		vals["env"] = []any{secretEnv("AWS_ACCESS_KEY_ID", "accessKey"), secretEnv("AWS_SECRET_ACCESS_KEY", "secretKey")}
		return vals
	}
	size := p.Size
	if size == "" {
		size = "10Gi"
	}
	pvc := map[string]any{"create": true, "storage": size}
	if p.StorageClass != "" {
		pvc["storageClassName"] = p.StorageClass
	}
	vals["persistence"] = true
	vals["pvc"] = pvc
	return vals
}

// ZotConfig is Zot's config.json: storage on the volume or in the S3 bucket, and an
// on-demand pull-through cache of ghcr.io and Docker Hub (the sync extension) under
// /ghcr.io/... and /docker.io/....
func ZotConfig(p Params) string {
	storage := map[string]any{"rootDirectory": "/var/lib/registry", "dedupe": true, "gc": true}
	if p.StorageType == "s3" {
		drv := map[string]any{"name": "s3", "rootdirectory": "/zot", "region": p.S3Region, "bucket": p.S3Bucket,
			"secure": true, "skipverify": false, "forcepathstyle": true}
		if p.S3Endpoint != "" {
			u, err := url.Parse(p.S3Endpoint)
			if err == nil && u.Host != "" {
				drv["regionendpoint"] = p.S3Endpoint
				drv["secure"] = u.Scheme != "http"
			}
		}
		storage["storageDriver"] = drv
		// Deduplication on S3 needs a shared cache database; without one, Zot would keep it
		// on the pod's ephemeral disk.
		storage["dedupe"] = false
	}
	var registries []any
	for _, up := range pullThrough {
		registries = append(registries, map[string]any{
			"urls": []any{up.URL}, "onDemand": true, "tlsVerify": true, "preserveDigest": true,
			"content": []any{map[string]any{"prefix": "**", "destination": "/" + up.Host}},
		})
	}
	cfg := map[string]any{
		"distSpecVersion": "1.1.1",
		"storage":         storage,
		// docker2s2 lets Zot keep Docker Hub's manifests as they are (their digests too).
		"http":       map[string]any{"address": "0.0.0.0", "port": "5000", "compat": []any{"docker2s2"}},
		"log":        map[string]any{"level": "info"},
		"extensions": map[string]any{"sync": map[string]any{"enable": true, "registries": registries}},
	}
	raw, _ := json.MarshalIndent(cfg, "", "  ")
	return string(raw)
}

// s3Endpoint is the address of the registry's bucket, path-style.
func s3BucketURL(p Params) string {
	base := strings.TrimRight(p.S3Endpoint, "/")
	if base == "" {
		base = "https://s3." + p.S3Region + ".amazonaws.com"
	}
	return base + "/" + url.PathEscape(p.S3Bucket)
}

// s3Test checks the registry's bucket from a pod in the cluster, as Zot will use it:
// list it, write a small object and delete it (signed with AWS SigV4).
func (s *Service) s3Test(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, p Params, sec Secrets) error {
	if _, err := kit.EnsureNamespace(ctx, jc, c, Namespace, nil); err != nil {
		return err
	}
	if err := applyS3Secret(ctx, c, p, sec); err != nil {
		return err
	}
	region := p.S3Region
	if region == "" {
		region = "us-east-1"
	}
	bucket := s3BucketURL(p)
	script := strings.Join([]string{
		`set -e`,
		`sign="aws:amz:$S3_REGION:s3"`,
		`curl -sSf --max-time 20 --aws-sigv4 "$sign" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" -o /dev/null "$BUCKET?list-type=2&max-keys=1"`,
		`echo runr | curl -sSf --max-time 20 --aws-sigv4 "$sign" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" -o /dev/null -T - "$BUCKET/zot/.runr-write-test"`,
		`curl -sSf --max-time 20 --aws-sigv4 "$sign" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" -o /dev/null -X DELETE "$BUCKET/zot/.runr-write-test"`,
		`echo "bucket $BUCKET: list, write and delete work"`,
	}, "\n")
	container := corev1.Container{Name: "test", Image: checkImage, Command: []string{"sh", "-c", script}, Env: []corev1.EnvVar{
		{Name: "BUCKET", Value: bucket}, {Name: "S3_REGION", Value: region},
		secretEnvVar("AWS_ACCESS_KEY_ID", ZotS3Secret, "accessKey"), secretEnvVar("AWS_SECRET_ACCESS_KEY", ZotS3Secret, "secretKey"),
	}}
	if err := s.runCheckJob(ctx, jc, c, container, "the bucket "+bucket,
		"check the S3 endpoint, bucket, region and keys (the key needs to list, write and delete in the bucket), and that the cluster can reach the endpoint, then Retry"); err != nil {
		return err
	}
	jc.Note("A pod listed, wrote and deleted in the bucket %s: Zot can store images there", bucket)
	return nil
}

// externalRegistryTest checks an external registry from a pod in the cluster.
func (s *Service) externalRegistryTest(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, p Params, sec Secrets) error {
	if _, err := kit.EnsureNamespace(ctx, jc, c, Namespace, nil); err != nil {
		return err
	}
	addr := p.ExternalAddress
	if !strings.HasPrefix(addr, "http://") && !strings.HasPrefix(addr, "https://") {
		addr = "https://" + addr
	}
	args := []string{"-sSf", "-o", "/dev/null", "--max-time", "20", strings.TrimRight(addr, "/") + "/v2/"}
	var env []corev1.EnvVar
	secrets := c.Clientset.CoreV1().Secrets(Namespace)
	if p.ExternalUsername != "" {
		if _, err := c.ApplyObject(ctx, map[string]any{"apiVersion": "v1", "kind": "Secret",
			"metadata":   map[string]any{"name": registryTestSecret, "namespace": Namespace, "labels": kit.ToAnyMap(kit.ManagedLabels(nil))},
			"stringData": map[string]any{"password": sec.ExternalPassword}}); err != nil {
			return err
		}
		defer func() {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10e9)
			defer cancel()
			_ = secrets.Delete(dctx, registryTestSecret, metav1.DeleteOptions{})
		}()
		args = append([]string{"-u", "$(REGISTRY_USER):$(REGISTRY_PASSWORD)"}, args...)
		env = append(env, corev1.EnvVar{Name: "REGISTRY_USER", Value: p.ExternalUsername}, secretEnvVar("REGISTRY_PASSWORD", registryTestSecret, "password"))
	}
	container := corev1.Container{Name: "test", Image: checkImage, Args: args, Env: env}
	if err := s.runCheckJob(ctx, jc, c, container, p.ExternalAddress,
		"check the registry address and credentials, and that the cluster can reach it, then Retry"); err != nil {
		return err
	}
	jc.Note("The cluster reached %s from a pod (Job %s/%s)", p.ExternalAddress, Namespace, RegistryTestJob)
	return nil
}

// applyS3Secret writes the S3 keys Zot and its check read.
func applyS3Secret(ctx context.Context, c *kube.Cluster, p Params, sec Secrets) error {
	_, err := c.ApplyObject(ctx, map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": ZotS3Secret, "namespace": Namespace, "labels": kit.ToAnyMap(kit.ManagedLabels(nil))},
		"stringData": map[string]any{"accessKey": p.S3AccessKey, "secretKey": sec.S3SecretKey}})
	return err
}

func secretEnvVar(name, secret, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}}}
}

// runCheckJob runs a check from a pod (Job registry-test in the registry namespace) and
// waits for it to succeed; a failed check is an error with the hint.
func (s *Service) runCheckJob(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, container corev1.Container, target, hint string) error {
	jobs := c.Clientset.BatchV1().Jobs(Namespace)
	bg := metav1.DeletePropagationBackground
	_ = jobs.Delete(ctx, RegistryTestJob, metav1.DeleteOptions{PropagationPolicy: &bg})
	if err := jc.Wait(ctx, "the previous registry test to be deleted", engine.WaitOpts{}, func(ctx context.Context) (bool, string, error) {
		_, err := jobs.Get(ctx, RegistryTestJob, metav1.GetOptions{})
		return apierrors.IsNotFound(err), "", nil
	}); err != nil {
		return err
	}
	backoff := int32(0)
	ttl := int32(600)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: RegistryTestJob, Labels: kit.ManagedLabels(nil)},
		Spec: batchv1.JobSpec{BackoffLimit: &backoff, TTLSecondsAfterFinished: &ttl, Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{container}},
		}},
	}
	if err := s.MirrorPodSpec(ctx, jc, &job.Spec.Template.Spec); err != nil {
		return err
	}
	if _, err := jobs.Create(ctx, job, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create the registry test Job %s/%s: %w", Namespace, RegistryTestJob, err)
	}
	return jc.Wait(ctx, fmt.Sprintf("Job %s/%s to reach %s", Namespace, RegistryTestJob, target), engine.WaitOpts{Timeout: 2 * s.Cfg.StorageTestTimeout, Hint: hint}, c.JobComplete(Namespace, RegistryTestJob))
}

// InstallZot installs the internal registry (chart zot/zot, release runr-zot).
func (s *Service) InstallZot(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, p Params, sec Secrets) error {
	if p.Mode != store.RegistryInternal {
		jc.Note("No internal registry: Zot is not installed")
		return engine.ErrSkip
	}
	if _, err := kit.EnsureNamespace(ctx, jc, c, Namespace, nil); err != nil {
		return err
	}
	where := "on its volume (StatefulSet " + ZotRelease + ")"
	if p.StorageType == "s3" {
		if err := applyS3Secret(ctx, c, p, sec); err != nil {
			return err
		}
		where = "in the bucket " + p.S3Bucket
	}
	rel, err := s.HelmApply(ctx, jc, c, kit.Release{Namespace: Namespace, Name: ZotRelease, Chart: ChartZot, Values: ZotValues(p)})
	if err != nil {
		return err
	}
	if err := kit.WaitRelease(ctx, jc, c, rel, engine.WaitOpts{}); err != nil {
		return err
	}
	jc.Note("Zot %s serves at %s, stores images %s, and caches ghcr.io and Docker Hub on demand", ChartZot.Version, p.Address(), where)
	return nil
}

// ChartZot is the upstream Zot chart (design.md, "Which upstream charts").
var ChartZot = helm.ChartRef{Repo: "https://zotregistry.dev/helm-charts", Name: "zot", Version: "0.1.125"}
