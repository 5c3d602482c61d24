package data

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/objectstore"
	"runr.dev/console/ops/kit"
	"runr.dev/console/problem"
	"runr.dev/console/store"
)

// The managed object store is SeaweedFS (chart seaweedfs 4.44.0, all-in-one) with its S3
// gateway's authentication on. Each binding gets a bucket and an S3 identity whose
// actions are limited to it (weed shell's s3.bucket.create and s3.configure, run by a Job
// in runr-data against the master and the filer).

// objectRegion is the region name the S3 clients are given (SeaweedFS does not check it;
// the AWS SDKs need one).
const objectRegion = "us-east-1"

// seaweedShell pipes commands into weed shell against the all-in-one master and filer.
func seaweedShell(commands string) string {
	return fmt.Sprintf(`printf '%%s\n' %s | weed shell -master=%s:%d -filer=%s:%d`, commands, seaweedHost(), seaweedMasterPort, seaweedHost(), seaweedFilerPort)
}

func (s *Service) objectInstallSteps(p Params) []engine.Step {
	if p.External != nil {
		return s.externalObjectSteps()
	}
	return []engine.Step{
		s.RegionStep("chart", "Install seaweedfs "+ChartSeaweedFS.Version, func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
			if _, err := kit.EnsureNamespace(ctx, jc, c, DataNamespace, nil); err != nil {
				return err
			}
			rel := kit.Release{Namespace: DataNamespace, Name: SeaweedFSRelease, Chart: ChartSeaweedFS, Values: SeaweedFSValues(p.StorageClass, p.SizeGi)}
			out, err := s.HelmApply(ctx, jc, c, rel)
			if err != nil {
				return err
			}
			if err := kit.WaitRelease(ctx, jc, c, out, engine.WaitOpts{}); err != nil {
				return err
			}
			claim := SeaweedAllInOne + "-data"
			if err := jc.Wait(ctx, "volume "+DataNamespace+"/"+claim+" to bind", engine.WaitOpts{Hint: "kubectl describe pvc -n " + DataNamespace + " " + claim},
				c.PVCBound(DataNamespace, claim)); err != nil {
				return err
			}
			jc.Note("The object store answers S3 at %s (%d GiB on %s)", ObjectEndpoint(), p.SizeGi, DataNamespace+"/"+claim)
			return nil
		}),
	}
}

func (s *Service) objectRemoveSteps(p Params) []engine.Step {
	if p.Mode == store.ObjectExternal {
		return s.externalObjectRemoveSteps()
	}
	return []engine.Step{
		s.RegionStep("remove", "Remove seaweedfs and its volume", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
			if err := s.HelmUninstall(ctx, jc, c, DataNamespace, SeaweedFSRelease); err != nil {
				return err
			}
			claim := SeaweedAllInOne + "-data"
			pvcs := c.Clientset.CoreV1().PersistentVolumeClaims(DataNamespace)
			if err := pvcs.Delete(ctx, claim, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete volume %s/%s: %w", DataNamespace, claim, err)
			}
			if err := jc.Wait(ctx, "volume "+DataNamespace+"/"+claim+" to be deleted", engine.WaitOpts{}, func(ctx context.Context) (bool, string, error) {
				_, err := pvcs.Get(ctx, claim, metav1.GetOptions{})
				return apierrors.IsNotFound(err), "still there", nil
			}); err != nil {
				return err
			}
			// helm uninstall leaves the chart's kept hook Secrets (S3 credentials, SFTP
			// passwords, ...), and runr-data may stay for the other data services.
			left, err := deleteSeaweedFSSecrets(ctx, c)
			if err != nil {
				return err
			}
			if len(left) > 0 {
				jc.Logf("Deleted the Secrets the chart keeps after helm uninstall: %s", strings.Join(left, ", "))
			}
			jc.Note("The object store and its volume %s/%s are deleted", DataNamespace, claim)
			return nil
		}),
	}
}

// SeaweedFSReleaseSelector selects what the seaweedfs chart labels as the release's own:
// after helm uninstall, its kept hook Secrets (seaweedfs-s3-secret, seaweedfs-sftp-secret,
// seaweedfs-sftp-ssh-secret) are the Secrets it still selects.
const SeaweedFSReleaseSelector = "app.kubernetes.io/name=seaweedfs,app.kubernetes.io/instance=" + SeaweedFSRelease

// deleteSeaweedFSSecrets deletes the Secrets of the seaweedfs release left in runr-data
// and names them.
func deleteSeaweedFSSecrets(ctx context.Context, c *kube.Cluster) ([]string, error) {
	secrets := c.Clientset.CoreV1().Secrets(DataNamespace)
	list, err := secrets.List(ctx, metav1.ListOptions{LabelSelector: SeaweedFSReleaseSelector})
	if err != nil {
		return nil, fmt.Errorf("list the Secrets of release %s/%s: %w", DataNamespace, SeaweedFSRelease, err)
	}
	var names []string
	for _, sec := range list.Items {
		if err := kit.DeleteSecret(ctx, c, DataNamespace, sec.Name); err != nil {
			return names, err
		}
		names = append(names, DataNamespace+"/"+sec.Name)
	}
	return names, nil
}

// objectCredentials are an object binding's connection settings: its own bucket and an
// access key whose identity may use that bucket only.
func objectCredentials(r *store.Region, p *store.Project) (resource string, creds map[string]string) {
	if d := r.DataServices.V.Object; d.External() {
		// The key is the IAM user's, created by the bind job.
		bucket := externalObjectUser(d.BucketPrefix, p)
		return bucket, map[string]string{"S3_ENDPOINT": d.Endpoint, "S3_BUCKET": bucket, "S3_REGION": d.S3Region, "AWS_REGION": d.S3Region,
			"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""}
	}
	bucket := "runr-" + p.Slug
	return bucket, map[string]string{
		"S3_ENDPOINT": ObjectEndpoint(), "S3_BUCKET": bucket, "S3_REGION": objectRegion, "AWS_REGION": objectRegion,
		"AWS_ACCESS_KEY_ID": "RUNR" + randomSecret()[:16], "AWS_SECRET_ACCESS_KEY": randomSecret(),
	}
}

// objectUserEnv is the env of a binding's bucket Job, from its Secret in runr-data.
func objectUserEnv(b *store.Binding) map[string]map[string]string {
	return map[string]map[string]string{bindingSecretName(b): {"BUCKET": "S3_BUCKET", "ACCESS_KEY": "AWS_ACCESS_KEY_ID", "SECRET_KEY": "AWS_SECRET_ACCESS_KEY"}}
}

// objectBind creates the binding's bucket (when missing) and its identity, allowed Read,
// Write, List and Tagging on that bucket alone, then checks that the identity is known.
func (s *Service) objectBind(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, r *store.Region, b *store.Binding) error {
	if r.DataServices.V.Object.External() {
		return s.externalObjectBind(ctx, jc, r, b)
	}
	if err := s.bindingSecret(ctx, c, b); err != nil {
		return err
	}
	script := seaweedShell(`"s3.bucket.list"`) + ` | grep -qw "$BUCKET" || ` + seaweedShell(`"s3.bucket.create -name $BUCKET"`) + `
` + seaweedShell(`"s3.configure -user $BUCKET -access_key $ACCESS_KEY -secret_key $SECRET_KEY -buckets $BUCKET -actions Read,Write,List,Tagging -apply"`) + ` >/dev/null
` + seaweedShell(`"s3.bucket.list"`) + ` | grep -qw "$BUCKET"
` + seaweedShell(`"s3.configure"`) + ` | grep -q "$ACCESS_KEY"`
	if err := s.runDataJob(ctx, jc, c, DataJob{Name: bindingJobName(b, "set"), Image: SeaweedFSImage, Script: script, Secrets: objectUserEnv(b),
		What: "create bucket " + b.Resource + " and its access key"}); err != nil {
		return err
	}
	jc.Note("Bucket %s with an access key limited to it (Read, Write, List, Tagging)", b.Resource)
	return nil
}

// objectUnbind deletes the binding's identity, then its bucket with every object in it.
func (s *Service) objectUnbind(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, r *store.Region, b *store.Binding) error {
	if r.DataServices.V.Object.External() {
		return s.externalObjectUnbind(ctx, jc, r, b)
	}
	if err := s.bindingSecret(ctx, c, b); err != nil {
		return err
	}
	script := seaweedShell(`"s3.configure -user $BUCKET -delete -apply"`) + ` >/dev/null
` + seaweedShell(`"s3.bucket.delete -name $BUCKET"`) + ` >/dev/null
! ` + seaweedShell(`"s3.bucket.list"`) + ` | grep -qw "$BUCKET"`
	if err := s.runDataJob(ctx, jc, c, DataJob{Name: bindingJobName(b, "drop"), Image: SeaweedFSImage, Script: script, Secrets: objectUserEnv(b),
		What: "delete bucket " + b.Resource + " with its objects and its access key"}); err != nil {
		return err
	}
	jc.Note("Deleted bucket %s with its objects, and its access key", b.Resource)
	return kit.DeleteSecret(ctx, c, DataNamespace, bindingSecretName(b))
}

// ExternalEndpoint is an external object store without its secret key: the S3 endpoint,
// where its IAM API answers ("" the S3 endpoint, as SeaweedFS serves both; AWS's is
// https://iam.amazonaws.com), the region, the administrator's access key id and the
// prefix of each binding's bucket and IAM user (runr- unless given).
type ExternalEndpoint struct {
	Endpoint     string `json:"endpoint"`
	IAMEndpoint  string `json:"iam_endpoint,omitempty"`
	S3Region     string `json:"s3_region,omitempty"`
	AccessKeyID  string `json:"access_key_id"`
	BucketPrefix string `json:"bucket_prefix,omitempty"`
}

// Record writes the object store's mode and endpoint into d: managed (its endpoint
// fields cleared) when e is nil.
func (e *ExternalEndpoint) record(d *store.DataService) {
	if e == nil {
		e = &ExternalEndpoint{}
		d.Mode = store.ObjectManaged
	} else {
		d.Mode = store.ObjectExternal
	}
	d.Endpoint, d.IAMEndpoint, d.S3Region, d.AccessKeyID, d.BucketPrefix = e.Endpoint, e.IAMEndpoint, e.S3Region, e.AccessKeyID, e.BucketPrefix
}

// defaultBucketPrefix starts the buckets and IAM users of an external store's bindings.
const defaultBucketPrefix = "runr-"

var (
	s3RegionRe     = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)
	bucketPrefixRe = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,29}$`)
)

// validate checks an external object store's fields and returns its settings, trimmed
// and with their defaults (region us-east-1, prefix runr-).
func (e ExternalObjectStore) validate() (ExternalEndpoint, error) {
	o := ExternalEndpoint{Endpoint: strings.TrimRight(strings.TrimSpace(e.Endpoint), "/"), IAMEndpoint: strings.TrimRight(strings.TrimSpace(e.IAMEndpoint), "/"),
		S3Region: kit.OrV(strings.TrimSpace(e.S3Region), objectRegion), AccessKeyID: strings.TrimSpace(e.AccessKeyID),
		BucketPrefix: kit.OrV(strings.TrimSpace(e.BucketPrefix), defaultBucketPrefix)}
	fields := map[string]string{}
	if !endpointURL(o.Endpoint) {
		fields["endpoint"] = "Give the S3 endpoint as an http(s) URL without a path, e.g. https://s3.eu-central-1.amazonaws.com."
	}
	if o.IAMEndpoint != "" && !endpointURL(o.IAMEndpoint) {
		fields["iam_endpoint"] = "Give the IAM endpoint as an http(s) URL without a path, e.g. https://iam.amazonaws.com, or leave it empty when the S3 endpoint serves IAM."
	}
	if !s3RegionRe.MatchString(o.S3Region) {
		fields["s3_region"] = "Use a region name such as us-east-1."
	}
	if o.AccessKeyID == "" || len(o.AccessKeyID) > 128 || strings.ContainsAny(o.AccessKeyID, " \t\r\n") {
		fields["access_key_id"] = "Give the administrator's access key id."
	}
	if e.SecretAccessKey == "" || len(e.SecretAccessKey) > 256 {
		fields["secret_access_key"] = "Give the administrator's secret access key."
	}
	if !bucketPrefixRe.MatchString(o.BucketPrefix) {
		fields["bucket_prefix"] = "Use up to 30 lowercase letters, digits and hyphens, starting with a letter or digit (runr- when empty)."
	}
	return o, problem.FromFields(fields)
}

// endpointURL reports an http(s) URL with a host and no user, path, query or fragment.
func endpointURL(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && u.User == nil &&
		(u.Path == "" || u.Path == "/") && u.RawQuery == "" && u.Fragment == ""
}

// objectAdmin is the administrator of the region's external object store, connecting
// through the console's address policy.
func (s *Service) objectAdmin(r *store.Region) (*objectstore.Admin, error) {
	d := r.DataServices.V.Object
	if r.SecretError != "" {
		return nil, fmt.Errorf("the object store's key of region %s: %s", r.Name, r.SecretError)
	}
	if r.ObjectSecretKey == "" {
		return nil, fmt.Errorf("region %s has no key of its external object store: install the object store again with its key", r.Name)
	}
	return objectstore.New(objectstore.Endpoint{URL: d.Endpoint, IAMURL: d.IAMEndpoint, Region: d.S3Region,
		AccessKeyID: d.AccessKeyID, SecretAccessKey: r.ObjectSecretKey, Dial: kube.PolicyDialer(s.Cfg.AllowLoopbackClusters)}), nil
}

// externalObjectSteps installs an external object store: nothing goes into the cluster;
// the step proves that the key lists the store's buckets and IAM users.
func (s *Service) externalObjectSteps() []engine.Step {
	return []engine.Step{
		s.RegionStep("check", "Check the external S3 endpoint and its IAM API", func(ctx context.Context, jc *engine.JobContext, r *store.Region, _ *kube.Cluster) error {
			a, err := s.objectAdmin(r)
			if err != nil {
				return err
			}
			d := r.DataServices.V.Object
			if err := a.Check(ctx); err != nil {
				return fmt.Errorf("%s: %w", d.Endpoint, err)
			}
			jc.Note("The object store is %s (IAM at %s, region %s); nothing is installed in the cluster, and each binding gets a bucket %s<project> and an IAM user limited to it",
				d.Endpoint, kit.OrV(d.IAMEndpoint, d.Endpoint), d.S3Region, d.BucketPrefix)
			return nil
		}),
	}
}

// externalObjectRemoveSteps forget an external object store: its key is deleted; the
// store itself and anything not RunR's on it stay.
func (s *Service) externalObjectRemoveSteps() []engine.Step {
	return []engine.Step{
		s.RegionStep("forget", "Forget the external object store's key", func(ctx context.Context, jc *engine.JobContext, r *store.Region, _ *kube.Cluster) error {
			if err := s.Store.SetObjectSecretKey(ctx, r.ID, ""); err != nil {
				return err
			}
			jc.Note("The key of %s is deleted from the console; the buckets and IAM users of the bindings were deleted when they were unbound", r.DataServices.V.Object.Endpoint)
			return nil
		}),
	}
}

// externalObjectUser is a binding's bucket and IAM user name on an external store.
func externalObjectUser(prefix string, p *store.Project) string { return prefix + p.Slug }

// externalObjectBind creates the binding's bucket and IAM user with its key (kept on a
// retry while the user still has it) and records the key in the binding.
func (s *Service) externalObjectBind(ctx context.Context, jc *engine.JobContext, r *store.Region, b *store.Binding) error {
	a, err := s.objectAdmin(r)
	if err != nil {
		return err
	}
	key, kept, err := a.Grant(ctx, b.Resource, b.Resource, b.Credentials["AWS_ACCESS_KEY_ID"])
	if err != nil {
		return err
	}
	if !kept {
		b.Credentials["AWS_ACCESS_KEY_ID"], b.Credentials["AWS_SECRET_ACCESS_KEY"] = key.ID, key.Secret
		if err := s.Store.SetBindingCredentials(ctx, b.ID, b.Credentials); err != nil {
			return err
		}
	}
	jc.Note("Bucket %s on %s with IAM user %s, whose policy allows that bucket alone", b.Resource, r.DataServices.V.Object.Endpoint, b.Resource)
	return nil
}

// externalObjectUnbind deletes the binding's IAM user with its keys, then its bucket
// with every object in it.
func (s *Service) externalObjectUnbind(ctx context.Context, jc *engine.JobContext, r *store.Region, b *store.Binding) error {
	a, err := s.objectAdmin(r)
	if err != nil {
		return err
	}
	if err := a.Revoke(ctx, b.Resource, b.Resource); err != nil {
		return err
	}
	jc.Note("Deleted IAM user %s with its keys, and bucket %s with its objects, on %s", b.Resource, b.Resource, r.DataServices.V.Object.Endpoint)
	return nil
}
