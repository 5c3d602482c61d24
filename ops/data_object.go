package ops

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/engine"
	"runr.dev/console/kube"
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

func (s *Service) objectInstallSteps(p DataParams) []engine.Step {
	return []engine.Step{
		s.regionStep("chart", "Install seaweedfs "+ChartSeaweedFS.Version, func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
			if _, err := ensureNamespace(ctx, jc, c, DataNamespace, nil); err != nil {
				return err
			}
			rel := Release{Namespace: DataNamespace, Name: SeaweedFSRelease, Chart: ChartSeaweedFS, Values: SeaweedFSValues(p.StorageClass, p.SizeGi)}
			out, err := s.HelmApply(ctx, jc, c, rel)
			if err != nil {
				return err
			}
			if err := waitRelease(ctx, jc, c, out, engine.WaitOpts{}); err != nil {
				return err
			}
			claim := seaweedAllInOne + "-data"
			if err := jc.Wait(ctx, "volume "+DataNamespace+"/"+claim+" to bind", engine.WaitOpts{Hint: "kubectl describe pvc -n " + DataNamespace + " " + claim},
				c.PVCBound(DataNamespace, claim)); err != nil {
				return err
			}
			jc.Note("The object store answers S3 at %s (%d GiB on %s)", ObjectEndpoint(), p.SizeGi, DataNamespace+"/"+claim)
			return nil
		}),
	}
}

func (s *Service) objectRemoveSteps() []engine.Step {
	return []engine.Step{
		s.regionStep("remove", "Remove seaweedfs and its volume", func(ctx context.Context, jc *engine.JobContext, r *store.Region, c *kube.Cluster) error {
			if err := s.HelmUninstall(ctx, jc, c, DataNamespace, SeaweedFSRelease); err != nil {
				return err
			}
			claim := seaweedAllInOne + "-data"
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
			// The chart keeps its S3 credentials Secret (a pre-install hook with the keep policy).
			if err := deleteSecret(ctx, c, DataNamespace, SeaweedFSRelease+"-s3-secret"); err != nil {
				return err
			}
			jc.Note("The object store and its volume %s/%s are deleted", DataNamespace, claim)
			return nil
		}),
	}
}

// objectCredentials are an object binding's connection settings: its own bucket and an
// access key whose identity may use that bucket only.
func objectCredentials(p *store.Project) (resource string, creds map[string]string) {
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
	return deleteSecret(ctx, c, DataNamespace, bindingSecretName(b))
}
