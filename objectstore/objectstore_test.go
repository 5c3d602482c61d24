package objectstore_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"runr.dev/console/objectstore"
	"runr.dev/console/testcluster"
)

// startWeed runs a real SeaweedFS server (S3 with its embedded IAM API) on loopback.
func startWeed(t *testing.T) *testcluster.SeaweedFS {
	t.Helper()
	w, err := testcluster.StartSeaweedFS(t.TempDir(), os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w
}

// as is an S3 client with a binding's key.
func as(url string, k objectstore.Key) *s3.Client {
	return s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(url), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(k.ID, k.Secret, "")})
}

func put(ctx context.Context, c *s3.Client, bucket, key string) error {
	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader("hello")})
	return err
}

func TestGrantLimitsEachKeyToItsBucketAndRevokeDeletesBoth(t *testing.T) {
	w := startWeed(t)
	ctx := context.Background()
	admin := objectstore.New(objectstore.Endpoint{URL: w.URL, Region: "us-east-1", AccessKeyID: w.AccessKey, SecretAccessKey: w.SecretKey})
	if err := admin.Check(ctx); err != nil {
		t.Fatalf("check with the administrator's key: %v", err)
	}
	wrong := objectstore.New(objectstore.Endpoint{URL: w.URL, Region: "us-east-1", AccessKeyID: w.AccessKey, SecretAccessKey: "wrong"})
	if err := wrong.Check(ctx); err == nil {
		t.Fatal("a wrong secret key passed the check")
	}

	shop, kept, err := admin.Grant(ctx, "runr-shop", "runr-shop", "")
	if err != nil || kept || shop.ID == "" || shop.Secret == "" {
		t.Fatalf("grant shop: %+v kept=%v %v", shop, kept, err)
	}
	blog, _, err := admin.Grant(ctx, "runr-blog", "runr-blog", "")
	if err != nil {
		t.Fatalf("grant blog: %v", err)
	}
	if shop.ID == blog.ID || shop.Secret == blog.Secret {
		t.Fatal("two bindings got the same key")
	}
	// A retry keeps the key the binding has.
	again, kept, err := admin.Grant(ctx, "runr-shop", "runr-shop", shop.ID)
	if err != nil || !kept || again.ID != shop.ID {
		t.Fatalf("grant shop again: %+v kept=%v %v", again, kept, err)
	}

	if err := put(ctx, as(w.URL, shop), "runr-shop", "a.txt"); err != nil {
		t.Fatalf("shop writes its own bucket: %v", err)
	}
	if err := put(ctx, as(w.URL, blog), "runr-blog", "b.txt"); err != nil {
		t.Fatalf("blog writes its own bucket: %v", err)
	}
	if err := put(ctx, as(w.URL, shop), "runr-blog", "x.txt"); err == nil {
		t.Fatal("shop's key wrote into blog's bucket")
	}
	if _, err := as(w.URL, shop).GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("runr-blog"), Key: aws.String("b.txt")}); err == nil {
		t.Fatal("shop's key read blog's object")
	}

	if err := admin.Revoke(ctx, "runr-shop", "runr-shop"); err != nil {
		t.Fatalf("revoke shop: %v", err)
	}
	if err := admin.Revoke(ctx, "runr-shop", "runr-shop"); err != nil {
		t.Fatalf("revoke shop a second time (a retry): %v", err)
	}
	if err := put(ctx, as(w.URL, shop), "runr-shop", "c.txt"); err == nil {
		t.Fatal("a revoked key still writes")
	}
	root := as(w.URL, objectstore.Key{ID: w.AccessKey, Secret: w.SecretKey})
	out, err := root.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range out.Buckets {
		names = append(names, aws.ToString(b.Name))
	}
	if strings.Join(names, ",") != "runr-blog" {
		t.Fatalf("buckets after revoking shop: %v, want runr-blog alone", names)
	}
}
