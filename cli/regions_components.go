package cli

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"runr.dev/console/apiclient"
	"runr.dev/console/ops/data"
)

// jobCommand is a region command whose request queues one job: body builds the request
// body (nil for none) and the command reports the job (followed with --wait, or always
// when follow is set: a test's result is in its job).
func jobCommand(use, short, method, sub string, extraArgs int, follow bool, body func(cmd *cobra.Command, args []string) (any, error)) *cobra.Command {
	var wait bool
	cmd := regionCommand(use, short, extraArgs, func(cmd *cobra.Command, c *apiclient.Client, r *apiclient.Region, args []string) error {
		var in any
		if body != nil {
			b, err := body(cmd, args)
			if err != nil {
				return err
			}
			in = b
		}
		ans, err := c.Post(cmd.Context(), method, apiclient.RegionPath(r.ID, sub), in)
		if err != nil {
			return err
		}
		if ans.Warning != "" {
			fmt.Fprintln(cmd.ErrOrStderr(), "warning:", ans.Warning)
		}
		return queued(cmd, c, short+" ("+r.Name+")", ans.JobID, wait || follow)
	})
	if !follow {
		addWaitFlag(cmd, &wait)
	}
	return cmd
}

// knativeCmd holds `runr regions knative …`.
func knativeCmd() *cobra.Command {
	k := &cobra.Command{Use: "knative", Short: "Knative Serving and its operator on a region"}
	k.AddCommand(knativeVersionsCmd(), knativeInstallCmd(), knativeUninstallCmd(), knativeUpgradeCmd())
	return k
}

// knativeVersion is one entry of GET …/compatible-versions.
type knativeVersion struct {
	Version        string `json:"version"`
	ChartVersion   string `json:"chart_version"`
	ServingVersion string `json:"serving_version"`
	Preselected    bool   `json:"preselected"`
}

// knativeVersionsCmd is `runr regions knative versions REGION`.
func knativeVersionsCmd() *cobra.Command {
	return regionCommand("versions REGION", "The Knative versions the region's cluster supports, newest first", 0,
		func(cmd *cobra.Command, c *apiclient.Client, r *apiclient.Region, _ []string) error {
			var ans struct {
				Data []knativeVersion `json:"data"`
				K8s  string           `json:"kubernetes_version"`
			}
			if err := c.Do(cmd.Context(), http.MethodGet, apiclient.RegionPath(r.ID, "compatible-versions"), nil, &ans); err != nil {
				return err
			}
			return printed(cmd, ans.Data, func(w io.Writer) error {
				fmt.Fprintf(w, "Kubernetes %s offers:\nVERSION\tOPERATOR CHART\tSERVING\tDEFAULT\n", dash(ans.K8s))
				for _, v := range ans.Data {
					def := ""
					if v.Preselected {
						def = "yes"
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", v.Version, v.ChartVersion, v.ServingVersion, def)
				}
				return nil
			})
		})
}

// knativeTarget maps `install|uninstall REGION [operator|serving]` to its route.
func knativeTarget(verb string, args []string) (string, error) {
	if len(args) == 0 {
		return verb + "-knative", nil
	}
	switch args[0] {
	case "operator", "serving":
		return verb + "-" + args[0], nil
	}
	return "", fmt.Errorf("%s what? operator, serving, or nothing for both", verb)
}

// knativeInstallCmd is `runr regions knative install REGION [operator|serving]`.
func knativeInstallCmd() *cobra.Command {
	var version, namespace, opNamespace, ingressMode string
	var wait bool
	cmd := &cobra.Command{
		Use:   "install REGION [operator|serving]",
		Short: "Install the Knative Operator, Knative Serving, or both (adopting what runs already)",
		Args:  cobra.RangeArgs(1, 2), ValidArgsFunction: completeRegionThen("operator", "serving"),
		RunE: withAPIRegion(func(cmd *cobra.Command, c *apiclient.Client, r *apiclient.Region, args []string) error {
			route, err := knativeTarget("install", args)
			if err != nil {
				return err
			}
			body := map[string]any{"version": version, "namespace": namespace, "operator_namespace": opNamespace, "ingress_mode": ingressMode}
			ans, err := c.Post(cmd.Context(), http.MethodPost, apiclient.RegionPath(r.ID, route), body)
			if err != nil {
				return err
			}
			return queued(cmd, c, "Knative "+route+" ("+r.Name+")", ans.JobID, wait)
		}),
	}
	cmd.Flags().StringVar(&version, "version", "", "the Knative minor (e.g. 1.20; default: the newest the cluster supports)")
	cmd.Flags().StringVar(&namespace, "namespace", "", "the Serving namespace (default knative-serving)")
	cmd.Flags().StringVar(&opNamespace, "operator-namespace", "", "the operator's namespace (default knative-operator)")
	cmd.Flags().StringVar(&ingressMode, "ingress-mode", "", "load_balancer (default) or host_network (Traefik on the nodes' ports 80 and 443)")
	_ = cmd.RegisterFlagCompletionFunc("ingress-mode", cobra.FixedCompletions([]string{"load_balancer", "host_network"}, cobra.ShellCompDirectiveNoFileComp))
	addWaitFlag(cmd, &wait)
	return cmd
}

// knativeUninstallCmd is `runr regions knative uninstall REGION [operator|serving]`.
func knativeUninstallCmd() *cobra.Command {
	var removeTraefik, wait bool
	cmd := &cobra.Command{
		Use:   "uninstall REGION [operator|serving]",
		Short: "Uninstall Knative Serving, the operator (once Serving is gone), or both",
		Args:  cobra.RangeArgs(1, 2), ValidArgsFunction: completeRegionThen("operator", "serving"),
		RunE: withAPIRegion(func(cmd *cobra.Command, c *apiclient.Client, r *apiclient.Region, args []string) error {
			route, err := knativeTarget("uninstall", args)
			if err != nil {
				return err
			}
			ans, err := c.Post(cmd.Context(), http.MethodPost, apiclient.RegionPath(r.ID, route), map[string]any{"remove_traefik": removeTraefik})
			if err != nil {
				return err
			}
			return queued(cmd, c, "Knative "+route+" ("+r.Name+")", ans.JobID, wait)
		}),
	}
	cmd.Flags().BoolVar(&removeTraefik, "remove-traefik", false, "remove Traefik even while it serves other Ingresses")
	addWaitFlag(cmd, &wait)
	return cmd
}

// knativeUpgradeCmd is `runr regions knative upgrade REGION --version V`.
func knativeUpgradeCmd() *cobra.Command {
	var version string
	cmd := jobCommand("upgrade REGION --version MINOR", "Upgrade Knative Serving to the next minor version", http.MethodPost, "upgrade", 0, false,
		func(*cobra.Command, []string) (any, error) { return map[string]any{"version": version}, nil })
	cmd.Flags().StringVar(&version, "version", "", "the next minor version (e.g. 1.21)")
	_ = cmd.MarkFlagRequired("version")
	return cmd
}

// completeRegionThen completes a region, then one of words.
func completeRegionThen(words ...string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, s string) ([]string, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return completeRegions(cmd, args, s)
		}
		if len(args) == 1 {
			return words, cobra.ShellCompDirectiveNoFileComp
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
}

// regionRegistryCmd holds `runr regions registry set|rm|test`.
func regionRegistryCmd() *cobra.Command {
	reg := &cobra.Command{Use: "registry", Short: "A region's image registry"}
	set := &registryFlags{}
	setCmd := jobCommand("set REGION --registry internal|external", "Set up (or replace an external) registry", http.MethodPost, "registry", 0, false,
		func(cmd *cobra.Command, _ []string) (any, error) { return set.input(cmd) })
	set.bind(setCmd, "internal")
	test := &registryFlags{}
	testCmd := jobCommand("test REGION --registry internal|external", "Test the storage or the external registry from the cluster, installing nothing", http.MethodPost, "test-registry", 0, true,
		func(cmd *cobra.Command, _ []string) (any, error) { return test.input(cmd) })
	test.bind(testCmd, "internal")
	rm := jobCommand("rm REGION", "Remove the registry (internal: its mirror, release and namespace with its volume)", http.MethodDelete, "registry", 0, false, nil)
	reg.AddCommand(setCmd, rm, testCmd)
	return reg
}

// redisCmd holds `runr regions redis set|test|rm`.
func redisCmd() *cobra.Command {
	redis := &cobra.Command{Use: "redis", Short: "A region's Redis (queue triggers)"}
	var mode, address, passwordFile string
	set := jobCommand("set REGION --mode managed|external|in_cluster", "Use RunR's managed Redis, an external one, or one already running in the cluster", http.MethodPost, "redis", 0, false,
		func(cmd *cobra.Command, _ []string) (any, error) {
			pw, err := readSecret(cmd, passwordFile, envRedisPassword)
			return map[string]any{"mode": mode, "address": address, "password": pw}, err
		})
	set.Flags().StringVar(&mode, "mode", "managed", "managed, external or in_cluster")
	set.Flags().StringVar(&address, "address", "", "external Redis host:port, or in_cluster <service>.<namespace>.svc:<port>")
	set.Flags().StringVar(&passwordFile, "password-file", "", "file holding the Redis's password (- for stdin; default: $"+envRedisPassword+")")
	_ = set.RegisterFlagCompletionFunc("mode", cobra.FixedCompletions([]string{"managed", "external", "in_cluster"}, cobra.ShellCompDirectiveNoFileComp))
	test := jobCommand("test REGION", "PING the region's Redis from a pod in the cluster", http.MethodPost, "test-redis", 0, true, nil)
	rm := jobCommand("rm REGION", "Remove RunR's managed Redis and the region's Redis settings", http.MethodDelete, "redis", 0, false, nil)
	redis.AddCommand(set, test, rm)
	return redis
}

// functionTLSCmd holds `runr regions function-tls set|rm`.
func functionTLSCmd() *cobra.Command {
	tls := &cobra.Command{Use: "function-tls", Short: "The certificate the region's Traefik serves the function domain with"}
	var certFile, keyFile string
	var replace, useConsole bool
	set := jobCommand("set REGION (--cert FILE --key FILE | --use-console-certificate)", "Upload a certificate for *.<function domain>, or use the console's own", http.MethodPut, "function-tls", 0, false,
		func(*cobra.Command, []string) (any, error) {
			if useConsole {
				if certFile != "" || keyFile != "" {
					return nil, fmt.Errorf("give either --use-console-certificate or --cert and --key")
				}
				return map[string]any{"use_console_certificate": true, "replace_existing": replace}, nil
			}
			cert, err := readFileFlag("cert", certFile)
			if err != nil {
				return nil, err
			}
			key, err := readFileFlag("key", keyFile)
			return map[string]any{"certificate": cert, "private_key": key, "replace_existing": replace}, err
		})
	set.Flags().StringVar(&certFile, "cert", "", "the certificate (PEM, with its chain)")
	set.Flags().StringVar(&keyFile, "key", "", "its private key (PEM)")
	set.Flags().BoolVar(&replace, "replace-existing", false, "replace a default TLSStore RunR did not create")
	set.Flags().BoolVar(&useConsole, "use-console-certificate", false, "the console's own certificate (a region on the cluster the console runs in)")
	rm := jobCommand("rm REGION", "Switch function TLS off (Traefik's own default certificate again)", http.MethodDelete, "function-tls", 0, false, nil)
	tls.AddCommand(set, rm)
	return tls
}

// monitoringCmd holds `runr regions monitoring set`.
func monitoringCmd() *cobra.Command {
	mon := &cobra.Command{Use: "monitoring", Short: "A region's Prometheus and Loki: existing ones, or RunR's own with their volumes and retention"}
	var wait bool
	// Flag → body key; the numbers go as numbers (0: RunR's default).
	text := map[string]string{"prometheus-url": "prometheus_url", "loki-url": "loki_url", "loki-org-id": "loki_org_id", "storage-class": "storage_class"}
	numbers := map[string]string{"prometheus-size-gi": "prometheus_size_gi", "loki-size-gi": "loki_size_gi", "tempo-size-gi": "tempo_size_gi",
		"prometheus-retention-days": "prometheus_retention_days", "loki-retention-days": "loki_retention_days"}
	set := regionCommand("set REGION [--prometheus-url URL] [--loki-url URL] [--loki-org-id ID] [--storage-class NAME] [--prometheus-size-gi N] …",
		"Use an existing Prometheus or Loki (in-cluster Service URLs; an empty value goes back to RunR's own), or set the volumes and retention of RunR's own", 0,
		func(cmd *cobra.Command, c *apiclient.Client, r *apiclient.Region, _ []string) error {
			body := map[string]any{}
			for f, key := range text {
				if cmd.Flags().Changed(f) {
					body[key], _ = cmd.Flags().GetString(f)
				}
			}
			for f, key := range numbers {
				if cmd.Flags().Changed(f) {
					body[key], _ = cmd.Flags().GetInt(f)
				}
			}
			if len(body) == 0 {
				return fmt.Errorf("nothing to change: give --prometheus-url, --loki-url, --loki-org-id, --storage-class or a size or retention")
			}
			var ans struct {
				JobID string `json:"job_id"`
			}
			if err := c.Do(cmd.Context(), http.MethodPut, apiclient.RegionPath(r.ID, "monitoring"), body, &ans); err != nil {
				return err
			}
			var ids []string
			if ans.JobID != "" {
				ids = append(ids, ans.JobID)
			}
			return changed(cmd, c, r, ids, wait)
		})
	set.Flags().String("prometheus-url", "", "an existing Prometheus (http(s)://<service>.<namespace>.svc[:port]); \"\" for RunR's own")
	set.Flags().String("loki-url", "", "an existing Loki (http(s)://<service>.<namespace>.svc[:port]); \"\" for RunR's own")
	set.Flags().String("loki-org-id", "", "the existing Loki's tenant ID")
	set.Flags().String("storage-class", "", "the StorageClass of RunR's Prometheus, Loki and Tempo volumes; \"\" for the cluster's default")
	set.Flags().Int("prometheus-size-gi", 0, "Prometheus's volume in GiB (0: RunR's default, 20)")
	set.Flags().Int("loki-size-gi", 0, "Loki's volume in GiB (0: RunR's default, 10)")
	set.Flags().Int("tempo-size-gi", 0, "Tempo's volume in GiB (0: RunR's default, 10)")
	set.Flags().Int("prometheus-retention-days", 0, "how long Prometheus keeps metrics (0: RunR's default, 10 days)")
	set.Flags().Int("loki-retention-days", 0, "how long Loki keeps logs (0: RunR's default, 7 days)")
	addWaitFlag(set, &wait)
	mon.AddCommand(set)
	return mon
}

// demoCmd holds `runr regions demo install|rm`.
func demoCmd() *cobra.Command {
	demo := &cobra.Command{Use: "demo", Short: "A region's demo projects: a frontend, a backend, a queue-triggered e-mail sender and a scheduled statistics job"}
	install := jobCommand("install REGION", "Deploy the demo projects (Serving, Redis and the registry must be ready)", http.MethodPost, "demo-projects", 0, false, nil)
	rm := jobCommand("rm REGION", "Remove the demo projects and exactly what they created", http.MethodDelete, "demo-projects", 0, false, nil)
	demo.AddCommand(install, rm)
	return demo
}

// dataServicesCmd holds `runr regions data-services install|rm REGION SERVICE`.
func dataServicesCmd() *cobra.Command {
	ds := &cobra.Command{Use: "data-services", Short: "A region's data services: kv (on its Redis), object (S3), postgres (CloudNativePG)"}
	var storageClass string
	var sizeGi int
	var wait bool
	// An external object store's settings (its secret key from a file or the environment).
	ext := map[string]*string{"mode": new(string), "endpoint": new(string), "iam_endpoint": new(string), "s3_region": new(string),
		"bucket_prefix": new(string), "access_key_id": new(string)}
	var secretFile string
	install := regionCommand("install REGION kv|object|postgres", "Install a data service in the namespace runr-data", 1,
		func(cmd *cobra.Command, c *apiclient.Client, r *apiclient.Region, args []string) error {
			body := map[string]any{}
			if storageClass != "" {
				body["storage_class"] = storageClass
			}
			if sizeGi > 0 {
				body["size_gi"] = sizeGi
			}
			for k, v := range ext {
				if *v != "" {
					body[k] = *v
				}
			}
			if *ext["mode"] == "external" {
				secret, err := readSecret(cmd, secretFile, envObjectSecretKey)
				if err != nil {
					return err
				}
				body["secret_access_key"] = secret
			}
			ans, err := c.Post(cmd.Context(), http.MethodPost, apiclient.RegionPath(r.ID, "data-services/"+args[0]), body)
			if err != nil {
				return err
			}
			return queued(cmd, c, "Install "+args[0]+" ("+r.Name+")", ans.JobID, wait)
		})
	install.Flags().StringVar(&storageClass, "storage-class", "", "StorageClass of its volumes (default: the region's)")
	install.Flags().IntVar(&sizeGi, "size-gi", 0, "size of its volume in GiB (default: the service's)")
	install.Flags().StringVar(ext["mode"], "mode", "", "object: managed (SeaweedFS in runr-data, the default) or external (an S3 endpoint with an IAM API)")
	install.Flags().StringVar(ext["endpoint"], "endpoint", "", "external object store: its S3 endpoint URL")
	install.Flags().StringVar(ext["iam_endpoint"], "iam-endpoint", "", "external object store: its IAM endpoint (default: the S3 endpoint)")
	install.Flags().StringVar(ext["s3_region"], "s3-region", "", "external object store: its region (default us-east-1)")
	install.Flags().StringVar(ext["bucket_prefix"], "bucket-prefix", "", "external object store: prefix of each binding's bucket and IAM user (default runr-)")
	install.Flags().StringVar(ext["access_key_id"], "access-key-id", "", "external object store: the administrator's access key id")
	install.Flags().StringVar(&secretFile, "secret-access-key-file", "", "external object store: file holding the administrator's secret key (- for stdin; default: $"+envObjectSecretKey+")")
	addWaitFlag(install, &wait)
	var rmWait bool
	rm := regionCommand("rm REGION kv|object|postgres", "Remove a data service and its data (refused while projects are bound to it)", 1,
		func(cmd *cobra.Command, c *apiclient.Client, r *apiclient.Region, args []string) error {
			ans, err := c.Post(cmd.Context(), http.MethodDelete, apiclient.RegionPath(r.ID, "data-services/"+args[0]), nil)
			if err != nil {
				return err
			}
			return queued(cmd, c, "Remove "+args[0]+" ("+r.Name+")", ans.JobID, rmWait)
		})
	addWaitFlag(rm, &rmWait)
	ds.AddCommand(install, rm)
	return ds
}

// tracingCmd holds `runr regions tracing set|rm`: a region's tracing mode.
func tracingCmd() *cobra.Command {
	tr := &cobra.Command{Use: "tracing", Short: "A region's tracing mode (the cluster's OpenTelemetry Collector and Tempo)"}
	send := func(method string, body func() any) regionRun {
		return func(cmd *cobra.Command, c *apiclient.Client, r *apiclient.Region, _ []string) error {
			wait, _ := cmd.Flags().GetBool("wait")
			ans, err := c.Post(cmd.Context(), method, "/api/observability/regions/"+url.PathEscape(r.ID)+"/tracing", body())
			if err != nil {
				return err
			}
			return queued(cmd, c, "Tracing of "+r.Name, ans.JobID, wait)
		}
	}
	var mode string
	var retention int
	var wait bool
	var set *cobra.Command
	set = regionCommand("set REGION [--mode on|off|default] [--retention-hours N]", "Set a region's tracing mode (default: the console's) or its own retention", 0,
		send(http.MethodPut, func() any {
			body := map[string]any{}
			if set.Flags().Changed("retention-hours") {
				body["retention_hours"] = retention
			}
			if set.Flags().Changed("mode") || len(body) == 0 {
				body["mode"] = mode
			}
			return body
		}))
	set.Flags().StringVar(&mode, "mode", "on", "on, off or default")
	set.Flags().IntVar(&retention, "retention-hours", 0, "the region's own Tempo retention in hours (0: the console's); the cluster's first region with tracing on decides")
	_ = set.RegisterFlagCompletionFunc("mode", cobra.FixedCompletions([]string{"on", "off", "default"}, cobra.ShellCompDirectiveNoFileComp))
	rm := regionCommand("rm REGION", "Turn a region's tracing off (the backend goes once no region of the cluster uses it)", 0,
		send(http.MethodDelete, func() any { return nil }))
	addWaitFlag(set, &wait)
	addWaitFlag(rm, &wait)
	tr.AddCommand(set, rm)
	return tr
}

// skupperCmd holds `runr regions skupper show|site`: the region's Skupper v2 site (the
// Data services tab). Skupper itself is installed by the cluster's operators, not RunR.
func skupperCmd() *cobra.Command {
	sk := &cobra.Command{Use: "skupper", Short: "A region's Skupper site (Skupper v2 runs in the cluster; RunR creates the region's site)"}
	show := regionCommand("show REGION", "Show whether the cluster runs Skupper v2 and the state of the region's site", 0,
		func(cmd *cobra.Command, c *apiclient.Client, r *apiclient.Region, _ []string) error {
			var rep data.SkupperReport
			if err := c.Do(cmd.Context(), http.MethodGet, apiclient.RegionPath(r.ID, "skupper"), nil, &rep); err != nil {
				return err
			}
			return printed(cmd, rep, func(w io.Writer) error {
				state := "not installed"
				if rep.Installed {
					state = "installed " + rep.Version + " (controller in " + rep.ControllerNamespace + ")"
				}
				fmt.Fprintf(w, "skupper\t%s\n", state)
				if len(rep.Missing) > 0 {
					fmt.Fprintf(w, "missing\t%s\n", strings.Join(rep.Missing, ", "))
				}
				fmt.Fprintf(w, "site\t%s\t%s\n", rep.Site.State(), rep.Site.Message)
				return nil
			})
		})
	site := jobCommand("site REGION", "Create the region's Skupper site (refused when the cluster runs no Skupper v2)", http.MethodPost, "skupper/site", 0, false, nil)
	sk.AddCommand(show, site)
	return sk
}
