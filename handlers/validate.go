package handlers

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"runr.dev/console/kube"
	"runr.dev/console/ops"
	"runr.dev/console/store"
)

var regionNameRe = regexp.MustCompile(`^[a-z]([a-z0-9-]*[a-z0-9])?$`)

// ValidateRegionName checks the spec's rule: lowercase letters, digits and hyphens,
// starting with a letter and ending with a letter or digit, at most 63 characters.
func ValidateRegionName(name string) string {
	switch {
	case name == "":
		return "Give the region a name, such as eu-2."
	case len(name) > 63:
		return "Use at most 63 characters."
	case !regionNameRe.MatchString(name):
		return "Use lowercase letters, digits and hyphens; start with a letter and end with a letter or digit."
	}
	return ""
}

// monitoringURLRe is the spec's in-cluster Service URL:
// http(s)://<service>.<namespace>.svc[.cluster.local]:<port>[/path]
var monitoringURLRe = regexp.MustCompile(`^https?://[a-z0-9]([-a-z0-9]*[a-z0-9])?\.[a-z0-9]([-a-z0-9]*[a-z0-9])?\.svc(\.cluster\.local)?:[0-9]{1,5}(/[^\s]*)?$`)

// ValidateMonitoringURL checks an existing Prometheus or Loki address ("" is RunR's own).
func ValidateMonitoringURL(u string) string {
	if u == "" {
		return ""
	}
	if !monitoringURLRe.MatchString(u) {
		return "Use an in-cluster Service URL: http(s)://<service>.<namespace>.svc[.cluster.local]:<port>[/path]."
	}
	return ""
}

// SetupInput is the body of POST /api/registry-setup/start (and the wizard's step 2).
type SetupInput struct {
	Name         string             `json:"name"`
	Kubeconfig   string             `json:"kubeconfig"`
	Nodes        []string           `json:"nodes"`
	RegistryMode store.RegistryMode `json:"registry_mode"`
	StorageType  string             `json:"storage_type"`
	PVCConfig    struct {
		StorageClass string `json:"storageClass"`
		Size         string `json:"size"`
	} `json:"pvc_config"`
	S3Config struct {
		Endpoint  string `json:"endpoint"`
		Bucket    string `json:"bucket"`
		Region    string `json:"region"`
		AccessKey string `json:"access_key"`
		SecretKey string `json:"secret_key"`
	} `json:"s3_config"`
	ExternalAddress  string          `json:"external_address"`
	ExternalUsername string          `json:"external_username"`
	ExternalPassword string          `json:"external_password"`
	PrometheusURL    string          `json:"prometheus_url"`
	LokiURL          string          `json:"loki_url"`
	LokiOrgID        string          `json:"loki_org_id"`
	RedisMode        store.RedisMode `json:"redis_mode"`
	RedisAddress     string          `json:"redis_address"`
	RedisPassword    string          `json:"redis_password"`
	IsActive         *bool           `json:"is_active"`
	DataLocation     string          `json:"data_location"`
}

// Registry returns the registry part of the input.
func (in *SetupInput) Registry() (ops.RegistryParams, ops.RegistrySecrets) {
	p := ops.RegistryParams{Mode: in.RegistryMode, StorageType: in.StorageType,
		StorageClass: strings.TrimSpace(in.PVCConfig.StorageClass), Size: strings.TrimSpace(in.PVCConfig.Size),
		S3Endpoint: in.S3Config.Endpoint, S3Bucket: in.S3Config.Bucket, S3Region: in.S3Config.Region, S3AccessKey: in.S3Config.AccessKey,
		ExternalAddress: strings.TrimSpace(in.ExternalAddress), ExternalUsername: in.ExternalUsername}
	if p.Mode == store.RegistryInternal && p.StorageType == "" {
		p.StorageType = "pvc"
	}
	return p, ops.RegistrySecrets{S3SecretKey: in.S3Config.SecretKey, ExternalPassword: in.ExternalPassword}
}

// Params returns the job parameters and secrets of a setup.
func (in *SetupInput) Params() (ops.SetupParams, ops.SetupSecret) {
	reg, regSec := in.Registry()
	active := in.IsActive == nil || *in.IsActive
	redis := in.RedisMode
	if redis == "" {
		redis = store.RedisManaged
	}
	nodes := in.Nodes
	if nodes == nil {
		nodes = []string{}
	}
	return ops.SetupParams{Name: in.Name, Nodes: nodes, Registry: reg,
			Monitoring: store.Monitoring{PrometheusURL: in.PrometheusURL, LokiURL: in.LokiURL, LokiOrgID: in.LokiOrgID},
			RedisMode:  redis, RedisAddress: in.RedisAddress, IsActive: active, DataLocation: in.DataLocation},
		ops.SetupSecret{Kubeconfig: in.Kubeconfig, Registry: regSec, RedisPassword: in.RedisPassword}
}

// ValidateRegistry checks the registry fields.
func ValidateRegistry(p ops.RegistryParams, sec ops.RegistrySecrets, errs FieldErrors) {
	switch p.Mode {
	case store.RegistryInternal:
		switch p.StorageType {
		case "pvc":
			if p.Size != "" {
				if q, err := resource.ParseQuantity(p.Size); err != nil || q.Sign() <= 0 {
					errs["pvc_config.size"] = "Use a size such as 10Gi."
				}
			}
			if p.StorageClass != "" && !regionNameRe.MatchString(strings.ReplaceAll(p.StorageClass, ".", "-")) {
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

// Validate checks a setup; kubeconfig problems are reported on its field.
func (in *SetupInput) Validate() FieldErrors {
	errs := FieldErrors{}
	in.Name = strings.TrimSpace(in.Name)
	if m := ValidateRegionName(in.Name); m != "" {
		errs["name"] = m
	}
	if _, err := kube.ParseKubeconfig([]byte(in.Kubeconfig)); err != nil {
		errs["kubeconfig"] = err.Error()
	}
	reg, sec := in.Registry()
	ValidateRegistry(reg, sec, errs)
	for k, v := range map[string]string{"prometheus_url": in.PrometheusURL, "loki_url": in.LokiURL} {
		if m := ValidateMonitoringURL(v); m != "" {
			errs[k] = m
		}
	}
	switch in.RedisMode {
	case "", store.RedisManaged, store.RedisNone:
	case store.RedisExternal:
		if m := validateHostPort(in.RedisAddress); m != "" {
			errs["redis_address"] = m
		}
	default:
		errs["redis_mode"] = "Choose managed or external."
	}
	for _, n := range in.Nodes {
		if n == "" || len(n) > 253 {
			errs["nodes"] = "Node names must not be empty."
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

func validateHostPort(a string) string {
	host, port, err := net.SplitHostPort(a)
	if err != nil || host == "" {
		return "Give the address as host:port, e.g. redis.example.com:6379."
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "The port must be a number from 1 to 65535."
	}
	return ""
}

// checkRefusal turns a failed check into the field errors of a 422.
func checkRefusal(chk *ops.CheckResult) FieldErrors {
	errs := FieldErrors{}
	for _, it := range chk.Items {
		if it.Status != ops.CheckFail {
			continue
		}
		field := "kubeconfig"
		switch it.Key {
		case "namespace":
			field = "name"
		case "version":
			field = "kubeconfig"
		}
		if _, ok := errs[field]; !ok {
			errs[field] = it.Title + ": " + it.Evidence
		}
	}
	return errs
}

// nodesExist checks a worker selection against the cluster's nodes.
func nodesExist(selected []string, chk *ops.CheckResult) string {
	have := map[string]bool{}
	for _, n := range chk.Nodes {
		have[n.Name] = true
	}
	for _, n := range selected {
		if !have[n] {
			return fmt.Sprintf("The cluster has no node %q.", n)
		}
	}
	return ""
}
