package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"runr.dev/console/apiclient"
)

// Environment variables the CLI reads secrets from (a flag's value would show in the
// process list); each has a --…-file flag as well.
const (
	envRegistryPassword = "RUNR_REGISTRY_PASSWORD"
	envS3SecretKey      = "RUNR_S3_SECRET_KEY"
	envRedisPassword    = "RUNR_REDIS_PASSWORD"
	envObjectSecretKey  = "RUNR_OBJECT_SECRET_KEY"
)

// registryFlags are the flags of a registry: create --registry, registry set and test.
type registryFlags struct {
	mode, storageType, storageClass, size               string
	s3Endpoint, s3Bucket, s3Region, s3AccessKey, s3File string
	address, username, passwordFile                     string
}

// bind adds the registry's flags to a command.
func (f *registryFlags) bind(cmd *cobra.Command, modeDefault string) {
	fl := cmd.Flags()
	fl.StringVar(&f.mode, "registry", modeDefault, "internal (Zot on the cluster), external or none")
	fl.StringVar(&f.storageType, "storage-type", "pvc", "internal registry storage: pvc or s3")
	fl.StringVar(&f.storageClass, "storage-class", "", "the PVC's StorageClass (the cluster's default when empty)")
	fl.StringVar(&f.size, "storage-size", "", "the PVC's size (e.g. 50Gi)")
	fl.StringVar(&f.s3Endpoint, "s3-endpoint", "", "S3 endpoint URL")
	fl.StringVar(&f.s3Bucket, "s3-bucket", "", "S3 bucket")
	fl.StringVar(&f.s3Region, "s3-region", "", "S3 region")
	fl.StringVar(&f.s3AccessKey, "s3-access-key", "", "S3 access key")
	fl.StringVar(&f.s3File, "s3-secret-key-file", "", "file holding the S3 secret key (- for stdin; default: $"+envS3SecretKey+")")
	fl.StringVar(&f.address, "registry-address", "", "external registry address (host[:port])")
	fl.StringVar(&f.username, "registry-username", "", "external registry username")
	fl.StringVar(&f.passwordFile, "registry-password-file", "", "file holding the external registry's password (- for stdin; default: $"+envRegistryPassword+")")
	_ = cmd.RegisterFlagCompletionFunc("registry", cobra.FixedCompletions([]string{"internal", "external", "none"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("storage-type", cobra.FixedCompletions([]string{"pvc", "s3"}, cobra.ShellCompDirectiveNoFileComp))
}

// secrets reads the registry's secrets from their files or environment variables.
func (f *registryFlags) secrets(cmd *cobra.Command) (s3Secret, password string, err error) {
	if s3Secret, err = readSecret(cmd, f.s3File, envS3SecretKey); err != nil {
		return "", "", err
	}
	password, err = readSecret(cmd, f.passwordFile, envRegistryPassword)
	return s3Secret, password, err
}

// input is the body of POST /api/knative-regions/{id}/registry (and test-registry).
func (f *registryFlags) input(cmd *cobra.Command) (map[string]any, error) {
	s3Secret, password, err := f.secrets(cmd)
	if err != nil {
		return nil, err
	}
	return map[string]any{"registry_mode": f.mode, "storage_type": f.storageType,
		"pvc_config": map[string]any{"storageClass": f.storageClass, "size": f.size},
		"s3_config": map[string]any{"endpoint": f.s3Endpoint, "bucket": f.s3Bucket, "region": f.s3Region,
			"access_key": f.s3AccessKey, "secret_key": s3Secret},
		"external_address": f.address, "external_username": f.username, "external_password": password}, nil
}

// addTo puts the registry's fields into the body of POST /api/knative-regions.
func (f *registryFlags) addTo(cmd *cobra.Command, body map[string]any) error {
	if f.mode == "" || f.mode == "none" {
		return nil
	}
	s3Secret, password, err := f.secrets(cmd)
	if err != nil {
		return err
	}
	body["registry_mode"], body["registry_storage_type"] = f.mode, f.storageType
	body["registry_storage_config"] = map[string]any{"storageClass": f.storageClass, "size": f.size, "endpoint": f.s3Endpoint,
		"bucket": f.s3Bucket, "region": f.s3Region, "access_key": f.s3AccessKey, "secret_key": s3Secret}
	body["registry_address"], body["registry_username"], body["registry_password"] = f.address, f.username, password
	return nil
}

// createFlags are the flags of `runr regions create`.
type createFlags struct {
	kubeconfig, redis, redisAddress, redisPasswordFile string
	dataLocation, prometheusURL, lokiURL, lokiOrgID    string
	nodes                                              []string
	inactive, wait                                     bool
	requestTimeout                                     int
	registry                                           registryFlags
}

// body is the body of POST /api/knative-regions.
func (f *createFlags) body(cmd *cobra.Command, name string) (map[string]any, error) {
	kc, err := readFileFlag("kubeconfig", f.kubeconfig)
	if err != nil {
		return nil, err
	}
	redisPassword, err := readSecret(cmd, f.redisPasswordFile, envRedisPassword)
	if err != nil {
		return nil, err
	}
	body := map[string]any{"name": name, "kubeconfig": kc, "redis_mode": f.redis, "redis_address": f.redisAddress,
		"redis_password": redisPassword, "data_location": f.dataLocation, "prometheus_url": f.prometheusURL,
		"loki_url": f.lokiURL, "loki_org_id": f.lokiOrgID, "is_active": !f.inactive}
	if f.nodes != nil {
		body["nodes"] = f.nodes
	}
	if f.requestTimeout > 0 {
		body["request_timeout"] = f.requestTimeout
	}
	return body, f.registry.addTo(cmd, body)
}

// regionsCreateCmd is `runr regions create NAME --kubeconfig FILE …`.
func regionsCreateCmd() *cobra.Command {
	f := &createFlags{}
	cmd := &cobra.Command{
		Use:   "create NAME --kubeconfig FILE",
		Short: "Create a region on a cluster: its preparation, registry and Redis run as jobs",
		Example: "  runr regions create eu-2 --kubeconfig eu-2.yaml --registry internal --storage-class fast-ssd --wait\n" +
			"  runr regions create lab --kubeconfig lab.yaml --redis none --inactive",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := apiClient(cmd)
			if err != nil {
				return err
			}
			body, err := f.body(cmd, args[0])
			if err != nil {
				return err
			}
			var ans struct {
				Data json.RawMessage   `json:"data"`
				Jobs map[string]string `json:"jobs"`
			}
			if err := c.Do(cmd.Context(), http.MethodPost, "/api/knative-regions", body, &ans); err != nil {
				return err
			}
			var ids []string
			for _, k := range []string{"init", "registry", "redis"} {
				if id := ans.Jobs[k]; id != "" {
					ids = append(ids, id)
				}
			}
			if format, _ := outputFormat(cmd); format == outTable {
				fmt.Fprintf(cmd.OutOrStdout(), "Region %s created\n", args[0])
			}
			return queuedJobs(cmd, c, "Region "+args[0], ids, f.wait)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "the cluster's kubeconfig (required)")
	fl.StringVar(&f.redis, "redis", "managed", "the queue triggers' Redis: managed, external, in_cluster or none")
	fl.StringVar(&f.redisAddress, "redis-address", "", "external Redis host:port, or in_cluster <service>.<namespace>.svc:<port>")
	fl.StringVar(&f.redisPasswordFile, "redis-password-file", "", "file holding the Redis's password (- for stdin; default: $"+envRedisPassword+")")
	fl.StringVar(&f.dataLocation, "data-location", "", "the cluster's data location (data residency)")
	fl.StringVar(&f.prometheusURL, "prometheus-url", "", "an existing Prometheus (in-cluster Service URL): RunR installs none")
	fl.StringVar(&f.lokiURL, "loki-url", "", "an existing Loki (in-cluster Service URL): RunR installs none")
	fl.StringVar(&f.lokiOrgID, "loki-org-id", "", "the existing Loki's tenant ID")
	fl.StringSliceVar(&f.nodes, "nodes", nil, "dedicated worker nodes (comma-separated)")
	fl.BoolVar(&f.inactive, "inactive", false, "create the region inactive (status inactive: its function domain answers 404)")
	fl.IntVar(&f.requestTimeout, "request-timeout", 0, "the region's request timeout in seconds (1–3600)")
	f.registry.bind(cmd, "")
	addWaitFlag(cmd, &f.wait)
	_ = cmd.MarkFlagRequired("kubeconfig")
	_ = cmd.RegisterFlagCompletionFunc("redis", cobra.FixedCompletions([]string{"managed", "external", "in_cluster", "none"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// settableKeys are the keys of `runr regions set --set KEY=VALUE` and where each goes.
var settableKeys = map[string]string{
	"status": "region", "request_timeout": "region", "agent_ws_url": "region", "ingress_trusted_ips": "region",
	"faas_cpu_overcommit": "overcommit", "faas_memory_overcommit": "overcommit",
}

// setBodies turns KEY=VALUE pairs into the bodies of PUT /api/knative-regions/{id} and
// PUT …/overcommit.
func setBodies(pairs []string) (region, overcommit map[string]any, err error) {
	region, overcommit = map[string]any{}, map[string]any{}
	for _, kv := range pairs {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || settableKeys[k] == "" {
			return nil, nil, fmt.Errorf("--set %q: use KEY=VALUE with KEY one of status, request_timeout, agent_ws_url, ingress_trusted_ips, faas_cpu_overcommit, faas_memory_overcommit", kv)
		}
		switch k {
		case "status":
			region["region_status"] = v
		case "request_timeout":
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, nil, fmt.Errorf("--set request_timeout=%s: give a whole number of seconds, e.g. request_timeout=300", v)
			}
			region[k] = n
		case "ingress_trusted_ips":
			ips := []string{}
			for _, ip := range strings.Split(v, ",") {
				if ip = strings.TrimSpace(ip); ip != "" {
					ips = append(ips, ip)
				}
			}
			region[k] = ips
		case "agent_ws_url":
			region[k] = v
		default:
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, nil, fmt.Errorf("--set %s=%s: give a number, e.g. %s=1.5", k, v, k)
			}
			overcommit[k] = f
		}
	}
	return region, overcommit, nil
}

// regionsSetCmd is `runr regions set REGION --set KEY=VALUE …`.
func regionsSetCmd() *cobra.Command {
	var pairs []string
	var wait bool
	cmd := regionCommand("set REGION --set KEY=VALUE [--set …]", "Change a region's status and General settings (only the keys given)", 0,
		func(cmd *cobra.Command, c *apiclient.Client, r *apiclient.Region, _ []string) error {
			if len(pairs) == 0 {
				return fmt.Errorf("nothing to change: give --set KEY=VALUE")
			}
			region, overcommit, err := setBodies(pairs)
			if err != nil {
				return err
			}
			if len(overcommit) > 0 {
				if err := c.Do(cmd.Context(), http.MethodPut, apiclient.RegionPath(r.ID, "overcommit"), overcommit, nil); err != nil {
					return err
				}
			}
			// The status and the settings each bring their own job to the cluster: one
			// request each, so that --wait follows both.
			var ids []string
			for _, body := range splitStatus(region) {
				var ans struct {
					JobID string `json:"job_id"`
				}
				if err := c.Do(cmd.Context(), http.MethodPut, apiclient.RegionPath(r.ID, ""), body, &ans); err != nil {
					return err
				}
				if ans.JobID != "" {
					ids = append(ids, ans.JobID)
				}
			}
			return changed(cmd, c, r, ids, wait)
		})
	cmd.Flags().StringArrayVar(&pairs, "set", nil, "KEY=VALUE: status (active, inactive, maintenance), request_timeout, agent_ws_url, "+
		"ingress_trusted_ips (comma-separated), faas_cpu_overcommit, faas_memory_overcommit")
	addWaitFlag(cmd, &wait)
	return cmd
}

// splitStatus splits the body of PUT /api/knative-regions/{id} into the status and the
// settings (each may be absent).
func splitStatus(body map[string]any) []map[string]any {
	var out []map[string]any
	if st, ok := body["region_status"]; ok {
		out = append(out, map[string]any{"region_status": st})
		delete(body, "region_status")
	}
	if len(body) > 0 {
		out = append(out, body)
	}
	return out
}

// changed reports a saved change: the region as it is now, and the jobs that bring the
// change to the cluster (followed with --wait).
func changed(cmd *cobra.Command, c *apiclient.Client, r *apiclient.Region, jobIDs []string, wait bool) error {
	if len(jobIDs) > 0 {
		if format, _ := outputFormat(cmd); format == outTable {
			fmt.Fprintf(cmd.OutOrStdout(), "Region %s changed\n", r.Name)
		}
		return queuedJobs(cmd, c, "Region "+r.Name, jobIDs, wait)
	}
	now, err := regionByID(cmd.Context(), c, r.ID)
	if err != nil {
		return err
	}
	return printed(cmd, now.Raw, func(w io.Writer) error {
		fmt.Fprintf(w, "Region %s changed (nothing to apply on the cluster)\n", r.Name)
		return nil
	})
}
