// Package objectstore manages an external S3-compatible object store with an
// administrator's key: a bucket per binding and an IAM user whose inline policy allows
// that bucket alone, through the S3 and IAM APIs (AWS, SeaweedFS's embedded IAM, Ceph
// RGW with accounts and others that speak both).
package objectstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// Endpoint is an external object store and the administrator's key for it.
type Endpoint struct {
	// URL is the S3 endpoint; IAMURL the IAM endpoint ("" the same as URL, as SeaweedFS
	// serves both on one port; https://iam.amazonaws.com on AWS).
	URL, IAMURL string
	// Region signs the requests and is where buckets are created.
	Region                       string
	AccessKeyID, SecretAccessKey string
	// Dial opens every connection (the console's address policy); nil dials directly.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Key is an access key of an IAM user.
type Key struct {
	ID, Secret string
}

// Admin manages buckets and IAM users of one endpoint.
type Admin struct {
	s3  *s3.Client
	iam *iam.Client
}

// policyName is the inline policy of a binding's user.
const policyName = "runr-bucket"

// New returns an Admin of the endpoint.
func New(e Endpoint) *Admin {
	hc := awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		if e.Dial != nil {
			t.DialContext = e.Dial
		}
	})
	creds := credentials.NewStaticCredentialsProvider(e.AccessKeyID, e.SecretAccessKey, "")
	cfg := aws.Config{Region: e.Region, Credentials: creds, HTTPClient: hc, RetryMaxAttempts: 2}
	iamURL := e.IAMURL
	if iamURL == "" {
		iamURL = e.URL
	}
	iamRegion := e.Region
	if strings.HasSuffix(hostOf(iamURL), ".amazonaws.com") {
		iamRegion = "us-east-1" // AWS's IAM is global and signed for us-east-1
	}
	return &Admin{
		s3: s3.NewFromConfig(cfg, func(o *s3.Options) {
			o.BaseEndpoint = aws.String(e.URL)
			o.UsePathStyle = !strings.HasSuffix(hostOf(e.URL), ".amazonaws.com")
		}),
		iam: iam.NewFromConfig(cfg, func(o *iam.Options) {
			o.BaseEndpoint = aws.String(iamURL)
			o.Region = iamRegion
		}),
	}
}

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// Check proves that the key may list the store's buckets and its IAM users.
func (a *Admin) Check(ctx context.Context) error {
	if _, err := a.s3.ListBuckets(ctx, &s3.ListBucketsInput{}); err != nil {
		return fmt.Errorf("list buckets with the administrator's key: %w", err)
	}
	if _, err := a.iam.ListUsers(ctx, &iam.ListUsersInput{MaxItems: aws.Int32(1)}); err != nil {
		return fmt.Errorf("list IAM users with the administrator's key (the IAM API creates each binding's key): %w", err)
	}
	return nil
}

// BucketPolicy is the inline policy of a binding's user: objects and listing in its
// bucket, nothing else.
func BucketPolicy(bucket string) string {
	doc := map[string]any{"Version": "2012-10-17", "Statement": []map[string]any{
		{"Effect": "Allow", "Action": []string{"s3:ListBucket", "s3:GetBucketLocation", "s3:ListBucketMultipartUploads"},
			"Resource": []string{"arn:aws:s3:::" + bucket}},
		{"Effect": "Allow", "Action": []string{"s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:GetObjectTagging",
			"s3:PutObjectTagging", "s3:DeleteObjectTagging", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"},
			"Resource": []string{"arn:aws:s3:::" + bucket + "/*"}},
	}}
	raw, _ := json.Marshal(doc)
	return string(raw)
}

// Grant creates the bucket (when missing), the user and its policy, and returns the
// user's access key: keep when the user still has that key (a retry), otherwise a new
// one, after deleting any other key of the user (left by an interrupted grant).
func (a *Admin) Grant(ctx context.Context, bucket, user, keep string) (Key, bool, error) {
	in := &s3.CreateBucketInput{Bucket: aws.String(bucket)}
	if r := a.s3.Options().Region; r != "" && r != "us-east-1" {
		in.CreateBucketConfiguration = &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(r)}
	}
	if _, err := a.s3.CreateBucket(ctx, in); err != nil && !isCode(err, "BucketAlreadyOwnedByYou") {
		if isCode(err, "BucketAlreadyExists") {
			return Key{}, false, fmt.Errorf("create bucket %s: another account owns a bucket of that name; choose another bucket prefix", bucket)
		}
		return Key{}, false, fmt.Errorf("create bucket %s: %w", bucket, err)
	}
	if _, err := a.iam.CreateUser(ctx, &iam.CreateUserInput{UserName: aws.String(user)}); err != nil && !isCode(err, "EntityAlreadyExists") {
		return Key{}, false, fmt.Errorf("create IAM user %s: %w", user, err)
	}
	if _, err := a.iam.PutUserPolicy(ctx, &iam.PutUserPolicyInput{UserName: aws.String(user), PolicyName: aws.String(policyName),
		PolicyDocument: aws.String(BucketPolicy(bucket))}); err != nil {
		return Key{}, false, fmt.Errorf("limit IAM user %s to bucket %s: %w", user, bucket, err)
	}
	keys, err := a.accessKeys(ctx, user)
	if err != nil {
		return Key{}, false, err
	}
	kept := false
	for _, id := range keys {
		if id == keep && keep != "" {
			kept = true
			continue
		}
		if err := a.deleteKey(ctx, user, id); err != nil {
			return Key{}, false, err
		}
	}
	if kept {
		return Key{ID: keep}, true, nil
	}
	out, err := a.iam.CreateAccessKey(ctx, &iam.CreateAccessKeyInput{UserName: aws.String(user)})
	if err != nil {
		return Key{}, false, fmt.Errorf("create an access key of IAM user %s: %w", user, err)
	}
	return Key{ID: aws.ToString(out.AccessKey.AccessKeyId), Secret: aws.ToString(out.AccessKey.SecretAccessKey)}, false, nil
}

func (a *Admin) accessKeys(ctx context.Context, user string) ([]string, error) {
	var ids []string
	p := iam.NewListAccessKeysPaginator(a.iam, &iam.ListAccessKeysInput{UserName: aws.String(user)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			if isCode(err, "NoSuchEntity") {
				return nil, nil
			}
			return nil, fmt.Errorf("list the access keys of IAM user %s: %w", user, err)
		}
		for _, k := range page.AccessKeyMetadata {
			ids = append(ids, aws.ToString(k.AccessKeyId))
		}
	}
	return ids, nil
}

func (a *Admin) deleteKey(ctx context.Context, user, id string) error {
	if _, err := a.iam.DeleteAccessKey(ctx, &iam.DeleteAccessKeyInput{UserName: aws.String(user), AccessKeyId: aws.String(id)}); err != nil && !isCode(err, "NoSuchEntity") {
		return fmt.Errorf("delete access key %s of IAM user %s: %w", id, user, err)
	}
	return nil
}

// Revoke deletes the user (its keys and policy first), then every object of the bucket
// and the bucket. What is already gone is not an error, so a retry completes.
func (a *Admin) Revoke(ctx context.Context, bucket, user string) error {
	keys, err := a.accessKeys(ctx, user)
	if err != nil {
		return err
	}
	for _, id := range keys {
		if err := a.deleteKey(ctx, user, id); err != nil {
			return err
		}
	}
	if _, err := a.iam.DeleteUserPolicy(ctx, &iam.DeleteUserPolicyInput{UserName: aws.String(user), PolicyName: aws.String(policyName)}); err != nil && !isCode(err, "NoSuchEntity") {
		return fmt.Errorf("delete the policy of IAM user %s: %w", user, err)
	}
	if _, err := a.iam.DeleteUser(ctx, &iam.DeleteUserInput{UserName: aws.String(user)}); err != nil && !isCode(err, "NoSuchEntity") {
		return fmt.Errorf("delete IAM user %s: %w", user, err)
	}
	if err := a.emptyBucket(ctx, bucket); err != nil {
		return err
	}
	if _, err := a.s3.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)}); err != nil && !isCode(err, "NoSuchBucket") {
		return fmt.Errorf("delete bucket %s: %w", bucket, err)
	}
	return nil
}

// emptyBucket deletes every object of the bucket, a page of up to 1,000 at a time.
func (a *Admin) emptyBucket(ctx context.Context, bucket string) error {
	p := s3.NewListObjectsV2Paginator(a.s3, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			if isCode(err, "NoSuchBucket") {
				return nil
			}
			return fmt.Errorf("list the objects of bucket %s: %w", bucket, err)
		}
		if len(page.Contents) == 0 {
			continue
		}
		ids := make([]s3types.ObjectIdentifier, len(page.Contents))
		for i, o := range page.Contents {
			ids[i] = s3types.ObjectIdentifier{Key: o.Key}
		}
		out, err := a.s3.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(bucket), Delete: &s3types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
		if err != nil {
			return fmt.Errorf("delete the objects of bucket %s: %w", bucket, err)
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return fmt.Errorf("delete object %s of bucket %s: %s", aws.ToString(e.Key), bucket, aws.ToString(e.Message))
		}
	}
	return nil
}

// isCode reports an API error with the code.
func isCode(err error, code string) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == code
}
