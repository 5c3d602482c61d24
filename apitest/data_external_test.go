package apitest

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/ops/data"
	"runr.dev/console/store"
	"runr.dev/console/testcluster"
)

// s3As is an S3 client of the endpoint with a key.
func s3As(url, id, secret string) *s3.Client {
	return s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(url), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(id, secret, "")})
}

func s3Put(c *s3.Client, bucket string) error {
	_, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("hello.txt"), Body: strings.NewReader("hi")})
	return err
}

func s3Buckets(t *testing.T, c *s3.Client) string {
	t.Helper()
	out, err := c.ListBuckets(context.Background(), &s3.ListBucketsInput{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range out.Buckets {
		names = append(names, aws.ToString(b.Name))
	}
	return strings.Join(names, ",")
}

// The object store on an external S3 endpoint (a real SeaweedFS server with its IAM API):
// bad settings are refused with nothing changed, a wrong key fails the install and a
// retry completes it, each binding gets its own bucket and IAM user whose key reaches
// that bucket alone, no key leaks, and unbinding and removal delete what RunR created.
func TestExternalObjectStore(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	weed, err := testcluster.StartSeaweedFS(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(weed.Stop)
	e, tok, r, _ := dataRegion(t, c, "ext")
	ctx := context.Background()
	admin := s3As(weed.URL, weed.AccessKey, weed.SecretKey)

	var refused struct {
		Error  string
		Fields map[string]string
	}
	bad := map[string]any{"mode": "external", "endpoint": "ftp://store", "iam_endpoint": "https://iam/x?y", "s3_region": "EU WEST", "bucket_prefix": "Runr_"}
	if st := e.JSON("POST", "/api/knative-regions/"+r.ID+"/data-services/object", tok, bad, &refused); st != 422 {
		t.Fatalf("bad external settings: %d %+v", st, refused)
	}
	for _, f := range []string{"endpoint", "iam_endpoint", "s3_region", "access_key_id", "secret_access_key", "bucket_prefix"} {
		if refused.Fields[f] == "" {
			t.Fatalf("no error on %s: %+v", f, refused.Fields)
		}
	}
	if st := e.JSON("POST", "/api/knative-regions/"+r.ID+"/data-services/object", tok, map[string]any{"mode": "elsewhere"}, &refused); st != 422 || refused.Fields["mode"] == "" {
		t.Fatalf("an unknown mode: %d %+v", st, refused)
	}
	if got, _ := e.Store.RegionByID(ctx, r.ID); got.DataServices.V.Object.State() != store.ComponentNotInstalled || got.ObjectSecretKey != "" {
		t.Fatalf("refused settings changed the region: %+v", got.DataServices.V.Object)
	}

	// A wrong key fails the install, saying why; the same request with the right key completes it.
	body := map[string]any{"mode": "external", "endpoint": weed.URL, "access_key_id": weed.AccessKey, "secret_access_key": "not-the-key"}
	if j := action(t, e, tok, r.ID, "data-services/object", body); j.Status != store.JobFailed || !strings.Contains(j.Error, "administrator's key") {
		t.Fatalf("a wrong key: %s %s", j.Status, j.Error)
	}
	if svcs, _ := dataServices(t, e, tok, r.ID); svcs["object"].Status != store.ComponentError {
		t.Fatalf("after a failed install: %+v", svcs["object"])
	}
	body["secret_access_key"] = weed.SecretKey
	installData(t, e, tok, r.ID, "object", body)
	svcs, raw := dataServices(t, e, tok, r.ID)
	if o := svcs["object"]; o.Status != store.ComponentReady || o.Mode != store.ObjectExternal || o.Endpoint != weed.URL || o.AccessKeyID != weed.AccessKey || o.BucketPrefix != "runr-" || o.S3Region != "us-east-1" {
		t.Fatalf("the external object store: %+v", o)
	}
	if strings.Contains(raw, weed.SecretKey) {
		t.Fatal("the answer carries the administrator's secret key")
	}
	var sealed string
	if err := e.Store.DB.Get(&sealed, `SELECT object_secret_key FROM regions WHERE id = $1`, r.ID); err != nil || sealed == "" || strings.Contains(sealed, weed.SecretKey) {
		t.Fatalf("the key at rest must be encrypted: %q %v", sealed, err)
	}
	if _, err := c.Client.AppsV1().Deployments(data.DataNamespace).Get(ctx, "seaweedfs-all-in-one", metav1.GetOptions{}); err == nil {
		t.Fatal("an external object store installs nothing in the cluster")
	}

	// Two projects bind it: a bucket and a key each, and a key reaches its own bucket alone.
	p1 := createProject(t, e, tok, r.ID, "shop", true)
	p2 := createProject(t, e, tok, r.ID, "blog", true)
	jobs := []string{bind(t, e, tok, p1, "object"), bind(t, e, tok, p2, "object")}
	b1, _ := e.Store.ProjectBinding(ctx, p1, "object")
	b2, _ := e.Store.ProjectBinding(ctx, p2, "object")
	if b1.Status != store.ComponentReady || b1.Resource != "runr-shop" || b2.Resource != "runr-blog" || b1.Credentials["S3_ENDPOINT"] != weed.URL {
		t.Fatalf("the bindings: %+v %+v", b1, b2)
	}
	k1, s1 := b1.Credentials["AWS_ACCESS_KEY_ID"], b1.Credentials["AWS_SECRET_ACCESS_KEY"]
	k2, s2 := b2.Credentials["AWS_ACCESS_KEY_ID"], b2.Credentials["AWS_SECRET_ACCESS_KEY"]
	if k1 == "" || s1 == "" || k1 == k2 || s1 == s2 {
		t.Fatalf("each binding gets its own key: %q %q", k1, k2)
	}
	if err := s3Put(s3As(weed.URL, k1, s1), "runr-shop"); err != nil {
		t.Fatalf("shop writes its bucket: %v", err)
	}
	if err := s3Put(s3As(weed.URL, k2, s2), "runr-blog"); err != nil {
		t.Fatalf("blog writes its bucket: %v", err)
	}
	if err := s3Put(s3As(weed.URL, k1, s1), "runr-blog"); err == nil {
		t.Fatal("shop's key wrote into blog's bucket")
	}
	if got := s3Buckets(t, admin); got != "runr-blog,runr-shop" {
		t.Fatalf("buckets: %s", got)
	}

	// No answer, job log or console log line carries a key.
	texts := []string{e.Log.String()}
	for _, id := range jobs {
		texts = append(texts, jobText(t, e, tok, id))
	}
	for _, p := range []string{p1, p2} {
		_, a := e.Raw("GET", "/api/projects/"+p, tok, "")
		_, b := e.Raw("GET", "/api/projects/"+p+"/bindings", tok, "")
		texts = append(texts, a, b)
	}
	texts = append(texts, raw)
	for _, s := range []string{s1, s2, weed.SecretKey} {
		for _, txt := range texts {
			if strings.Contains(txt, s) {
				t.Fatalf("a secret key leaks: %.300s", txt)
			}
		}
	}

	// Removal is refused while bound; unbinding deletes the user (its key stops working)
	// and the bucket with its objects; removal then forgets the key.
	if st := e.JSON("DELETE", "/api/knative-regions/"+r.ID+"/data-services/object", tok, nil, &refused); st != 422 || !strings.Contains(refused.Error, "shop") {
		t.Fatalf("removal while bound: %d %q", st, refused.Error)
	}
	unbind(t, e, tok, p1, "object")
	if got := s3Buckets(t, admin); got != "runr-blog" {
		t.Fatalf("buckets after unbinding shop: %s", got)
	}
	if err := s3Put(s3As(weed.URL, k1, s1), "runr-blog"); err == nil {
		t.Fatal("an unbound key still writes")
	}
	unbind(t, e, tok, p2, "object")
	removeData(t, e, tok, r.ID, "object")
	got, _ := e.Store.RegionByID(ctx, r.ID)
	if got.DataServices.V.Object.State() != store.ComponentNotInstalled || got.ObjectSecretKey != "" {
		t.Fatalf("after removal: %+v, key kept: %v", got.DataServices.V.Object, got.ObjectSecretKey != "")
	}
	if b := s3Buckets(t, admin); b != "" {
		t.Fatalf("buckets left: %s", b)
	}
}
