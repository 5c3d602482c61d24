package registry

import (
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"runr.dev/console/store"
)

// Validate checks the registry fields, adding a message per wrong field to errs.
func Validate(p Params, sec Secrets, errs map[string]string) {
	switch p.Mode {
	case store.RegistryInternal:
		validateStorage(p, sec, errs)
	case store.RegistryExternal:
		if p.ExternalAddress == "" || strings.ContainsAny(p.ExternalAddress, " \t") {
			errs["external_address"] = "Give the registry's address, e.g. registry.example.com or registry.example.com:5000."
		}
		if (p.ExternalUsername == "") != (sec.ExternalPassword == "") {
			errs["external_password"] = "Give both a username and a password, or neither."
		}
	case store.RegistryNone:
	default:
		errs["registry_mode"] = "Choose internal or external."
	}
}

// validateStorage checks the storage of an internal registry: a PVC or S3.
func validateStorage(p Params, sec Secrets, errs map[string]string) {
	switch p.StorageType {
	case "pvc":
		if p.Size != "" {
			if q, err := resource.ParseQuantity(p.Size); err != nil || q.Sign() <= 0 {
				errs["pvc_config.size"] = "Use a size such as 10Gi."
			}
		}
		if p.StorageClass != "" && len(validation.IsDNS1123Subdomain(p.StorageClass)) > 0 {
			errs["pvc_config.storageClass"] = "Not a valid StorageClass name."
		}
	case "s3":
		if u, err := url.Parse(p.S3Endpoint); p.S3Endpoint == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			errs["s3_config.endpoint"] = "Give the S3 endpoint as a URL, e.g. https://s3.eu-central-1.amazonaws.com."
		}
		if p.S3Bucket == "" {
			errs["s3_config.bucket"] = "Give the bucket."
		}
		if p.S3AccessKey == "" {
			errs["s3_config.access_key"] = "Give the access key."
		}
		if sec.S3SecretKey == "" {
			errs["s3_config.secret_key"] = "Give the secret key."
		}
	default:
		errs["storage_type"] = "Choose pvc or s3."
	}
}
