package testcluster_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"runr.dev/console/ops/isolation"
	"runr.dev/console/testcluster"
)

// Upstream charts and versions the facts were read from (charts/CONTRACT.md).
const (
	upTraefik   = "traefik 40.3.0 (traefik/traefik-helm-chart, tag v40.3.0)"
	upOperator  = "knative-operator (knative/operator, tags knative-v1.16.0..knative-v1.23.0, gh-pages index.yaml)"
	upZot       = "zot 0.1.122 (project-zot/helm-charts, tag zot-0.1.122; the pinned 0.1.125 is not upstream yet)"
	upKPS       = "kube-prometheus-stack 79.5.0 (prometheus-community/helm-charts, tags kube-prometheus-stack-79.5.0, kube-state-metrics-6.4.1, prometheus-node-exporter-4.49.1)"
	upLoki      = "loki-stack 2.10.2 with loki 2.16.0 and promtail 6.15.5 (grafana/helm-charts)"
	upTempo     = "tempo 2.2.4 (grafana-community/helm-charts, tag tempo-2.2.4; the pinned 3.2.0 is not upstream yet)"
	upOtel      = "opentelemetry-collector 0.170.0 (open-telemetry/opentelemetry-helm-charts; the pinned 0.176.0 is not upstream yet)"
	upKata      = "kata-deploy 3.32.0 (kata-containers/kata-containers, tag 3.32.0: KD = tools/packaging/kata-deploy/helm-chart/kata-deploy, KB = tools/packaging/kata-deploy/binary/src)"
	upRCM       = "runtime-class-manager 0.2.0 (spinframework/runtime-class-manager, tag v0.2.0: deploy/helm, internal/controller)"
	upAllCharts = "every chart above"
)

// contractFacts is the table of facts; charts/CONTRACT.md lists the same ids.
var contractFacts = []fact{
	// Every chart.
	{id: "values-read", chart: "*", upstream: upAllCharts, source: "each chart's values.yaml and templates; kata-deploy: KD/templates/_helpers.tpl (getDefaultShimForArch, commonEnv)",
		text: "Every values key the console sets is one the chart reads (unknown keys are silently ignored where the chart has no closed schema); kata-deploy reads defaultShim.<arch> only when that shim is enabled for <arch> (else no DEFAULT_SHIM_<ARCH>)",
		check: func(r *rendering) error {
			defaults, err := chartDefaults(r.chart)
			if err != nil {
				return err
			}
			// Subtrees the charts render as they are (toYaml into the pod spec or a config file).
			verbatim := map[string][]string{
				// Traefik's: also the entry point of Knative's cluster-local addresses (the chart
				// makes an entry point of every key of ports) and the Services of
				// service.additionalServices (each rendered as the default Service is).
				"traefik":                 {"securityContext", "podSecurityContext", "resources", "nodeSelector", "tolerations", "ports.local", "service.additionalServices"},
				"zot":                     {"configFiles", "env", "resources", "nodeSelector", "tolerations", "securityContext", "podSecurityContext"},
				"opentelemetry-collector": {"config", "resources"},
				"kube-prometheus-stack":   {"prometheus.prometheusSpec.resources", "prometheus.prometheusSpec.storageSpec", "alertmanager.alertmanagerSpec.storage"},
				// Loki's config is loki.yaml as it is; the claim's class (and Tempo's) is read by
				// the StatefulSet template though values.yaml only documents it in a comment.
				"loki-stack": {"loki.config", "loki.persistence.storageClassName"},
				"tempo":      {"persistence.storageClassName"},
				// Read by every shim's templates though values.yaml only documents them in a comment.
				"kata-deploy": {"nodeSelector", "tolerations", "shims.*.dropIn", "shims.*.runtimeClass"},
			}
			bad := ignoredKeys(jsonMap(r.vc.Values), defaults, "", verbatim[r.vc.Chart.Name])
			if r.vc.Chart.Name == "kata-deploy" {
				unread, err := kataUnreadDefaults(r)
				if err != nil {
					return err
				}
				bad = append(bad, unread...)
			}
			if len(bad) > 0 {
				return fmt.Errorf("keys the chart ignores: %s", strings.Join(bad, ", "))
			}
			return nil
		}},
	{id: "images-pullable", chart: "*", upstream: upAllCharts, source: "each chart's image templates",
		text: "Every image the release runs is one pullable reference: no registry host after the first path element (docker.io/ghcr.io/...)",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			var bad []string
			for where, img := range m.images() {
				if doubleRegistry(img) || img == "" || strings.HasSuffix(img, ":") {
					bad = append(bad, where+": "+img)
				}
			}
			if len(bad) > 0 {
				slices.Sort(bad)
				return fmt.Errorf("unpullable images: %s", strings.Join(bad, "; "))
			}
			return nil
		}},
	{id: "pdb-no-daemonset", chart: "*", upstream: upAllCharts, source: "each chart's PodDisruptionBudget templates; Kubernetes disruption controller",
		text: "No PodDisruptionBudget of the release selects DaemonSet pods (it cannot sync: \"does not implement the scale subresource\", and then refuses every eviction of them)",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			pdbs, err := m.pdbs()
			if err != nil {
				return err
			}
			for _, p := range pdbs {
				for where, pt := range m.pods() {
					if strings.HasPrefix(where, "DaemonSet/") && selects(p, pt.Labels) {
						return fmt.Errorf("PodDisruptionBudget %s selects the pods of %s", p.Name, where)
					}
				}
			}
			return nil
		}},

	// traefik.
	{id: "traefik-renders", chart: "traefik", upstream: upTraefik, source: "traefik/values.schema.json, traefik/templates/requirements.yaml",
		text:  "The chart accepts the values: its values.schema.json refuses unknown keys at the top level, under image, ingressClass, providers (and each provider), each port, updateStrategy, podDisruptionBudget, rbac, serviceAccount",
		check: func(r *rendering) error { _, err := r.rendered(); return err }},
	{id: "traefik-workload", chart: "traefik", upstream: upTraefik, source: "traefik/templates/_helpers.tpl, deployment.yaml, daemonset.yaml",
		text: "Workload traefik, a Deployment or a DaemonSet per deployment.kind, with hostNetwork per values; pods labelled app.kubernetes.io/name=traefik, app.kubernetes.io/instance=traefik-<namespace>",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			kind := fmt.Sprint(dig(r.values, "deployment", "kind"))
			pt, err := m.podTemplate(kind, "traefik")
			if err != nil {
				return err
			}
			if hn, _ := dig(r.values, "hostNetwork").(bool); pt.Spec.HostNetwork != hn {
				return fmt.Errorf("hostNetwork %v, values say %v", pt.Spec.HostNetwork, hn)
			}
			return hasLabels(kind+" traefik pods", pt.Labels, map[string]string{"app.kubernetes.io/name": "traefik", "app.kubernetes.io/instance": "traefik-" + r.vc.Namespace})
		}},
	{id: "traefik-knative-switch", chart: "traefik", upstream: upTraefik, source: "traefik/templates/requirements.yaml, _podtemplate.tpl, values.yaml",
		text: "Traefik's Knative provider is switched on by providers.knative.enabled with experimental.knative (the chart then adds --providers.knative and its RBAC); --providers.knative in additionalArguments starts it without the RBAC. The chart has values for its namespaces and labelSelector only: its entry points and Services (--providers.knative.publicEntrypoints, privateEntrypoints, privateService.name/namespace) go in additionalArguments",
		check: func(r *rendering) error {
			on, _ := dig(r.values, "providers", "knative", "enabled").(bool)
			exp, _ := dig(r.values, "experimental", "knative").(bool)
			var viaArgs []string
			for _, a := range toStrings(dig(r.values, "additionalArguments")) {
				if a == "--providers.knative" || strings.HasPrefix(a, "--providers.knative=") || strings.HasPrefix(a, "--experimental.knative") {
					viaArgs = append(viaArgs, a)
				}
			}
			if !on || !exp || len(viaArgs) > 0 {
				return fmt.Errorf("providers.knative.enabled=%v, experimental.knative=%v, Knative switched on through additionalArguments %v", on, exp, viaArgs)
			}
			return nil
		}},
	{id: "traefik-knative-rbac", chart: "traefik", upstream: upTraefik, source: "traefik/templates/rbac/clusterrole.yaml",
		text: "ClusterRole traefik-<namespace> grants networking.internal.knative.dev ingresses get/list/watch and ingresses/status update (only under providers.knative.enabled): without it Traefik is refused (403) and no Knative Service gets a route",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			var cr rbacv1.ClusterRole
			if err := m.typed("ClusterRole", "traefik-"+r.vc.Namespace, &cr); err != nil {
				return err
			}
			for res, verbs := range map[string][]string{"ingresses": {"get", "list", "watch"}, "ingresses/status": {"update"}} {
				if !grants(cr.Rules, "networking.internal.knative.dev", res, verbs) {
					return fmt.Errorf("the ClusterRole does not grant networking.internal.knative.dev %s %v", res, verbs)
				}
			}
			return nil
		}},
	{id: "traefik-service", chart: "traefik", upstream: upTraefik, source: "traefik/templates/service.yaml, _service.tpl, values.yaml",
		text: "Service traefik of type service.spec.type (LoadBalancer by default; there is no service.type), port 80 to web and 443 to websecure",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			var svc corev1.Service
			if err := m.typed("Service", "traefik", &svc); err != nil {
				return err
			}
			want := corev1.ServiceType(fmt.Sprint(dig(r.values, "service", "spec", "type")))
			if svc.Spec.Type != want {
				return fmt.Errorf("type %s, want %s", svc.Spec.Type, want)
			}
			ports := map[int32]string{}
			for _, p := range svc.Spec.Ports {
				ports[p.Port] = p.TargetPort.String()
			}
			if ports[80] != "web" || ports[443] != "websecure" {
				return fmt.Errorf("ports %v, want 80→web and 443→websecure", ports)
			}
			return nil
		}},
	{id: "traefik-additional-services", chart: "traefik", upstream: upTraefik, source: "traefik/templates/service.yaml, _service.tpl, EXAMPLES.md (Add custom (internal) services)",
		text: "Each service.additionalServices.<key> adds Service traefik-<key> (service.spec of its own) carrying the ports whose expose.<key> is true; the default Service carries only those with expose.default; a Service without ports is refused",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			ports, _ := dig(r.values, "ports").(map[string]any)
			for _, key := range append([]string{"default"}, slices.Sorted(maps.Keys(mapOf(dig(r.values, "service", "additionalServices"))))...) {
				name := "traefik"
				if key != "default" {
					name += "-" + key
				}
				var svc corev1.Service
				if err := m.typed("Service", name, &svc); err != nil {
					return err
				}
				var got, want []string
				for _, p := range svc.Spec.Ports {
					got = append(got, p.TargetPort.String())
				}
				for port, p := range ports {
					if dig(mapOf(p), "expose", key) == true {
						want = append(want, port)
					}
				}
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					return fmt.Errorf("Service %s carries %v, want %v", name, got, want)
				}
			}
			return nil
		}},
	{id: "traefik-ingressclass", chart: "traefik", upstream: upTraefik, source: "traefik/templates/ingressclass.yaml, _podtemplate.tpl",
		text: "IngressClass ingressClass.name (controller traefik.io/ingress-controller, is-default-class from ingressClass.isDefaultClass, true by default), watched through --providers.kubernetesingress.ingressClass",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			name := fmt.Sprint(dig(r.values, "ingressClass", "name"))
			var ic networkingv1.IngressClass
			if err := m.typed("IngressClass", name, &ic); err != nil {
				return err
			}
			if ic.Spec.Controller != "traefik.io/ingress-controller" || ic.Annotations["ingressclass.kubernetes.io/is-default-class"] != fmt.Sprint(dig(r.values, "ingressClass", "isDefaultClass")) {
				return fmt.Errorf("IngressClass %s: controller %s, annotations %v", name, ic.Spec.Controller, ic.Annotations)
			}
			return traefikArgs(r, "--providers.kubernetesingress.ingressClass="+fmt.Sprint(dig(r.values, "providers", "kubernetesIngress", "ingressClass")))
		}},
	{id: "traefik-entrypoints", chart: "traefik", upstream: upTraefik, source: "traefik/templates/_podtemplate.tpl",
		text: "ports.<name>.transport.respondingTimeouts, transport.lifeCycle (requestAcceptGraceTimeout, graceTimeOut), forwardedHeaders.trustedIPs and proxyProtocol.trustedIPs become --entryPoints.<name>.… arguments",
		check: func(r *rendering) error {
			var want []string
			for _, ep := range []string{"web", "websecure"} {
				for _, k := range []string{"readTimeout", "writeTimeout"} {
					if v := dig(r.values, "ports", ep, "transport", "respondingTimeouts", k); v != nil && fmt.Sprint(v) != "" {
						want = append(want, fmt.Sprintf("--entryPoints.%s.transport.respondingTimeouts.%s=%v", ep, k, v))
					}
				}
				for _, k := range []string{"requestAcceptGraceTimeout", "graceTimeOut"} {
					if v := dig(r.values, "ports", ep, "transport", "lifeCycle", k); v != nil && fmt.Sprint(v) != "" {
						want = append(want, fmt.Sprintf("--entryPoints.%s.transport.lifeCycle.%s=%v", ep, k, v))
					}
				}
				for _, k := range []string{"forwardedHeaders", "proxyProtocol"} {
					if ips := toStrings(dig(r.values, "ports", ep, k, "trustedIPs")); len(ips) > 0 {
						want = append(want, fmt.Sprintf("--entryPoints.%s.%s.trustedIPs=%s", ep, k, strings.Join(ips, ",")))
					}
				}
			}
			return traefikArgs(r, want...)
		}},
	{id: "traefik-image", chart: "traefik", upstream: upTraefik, source: "traefik/templates/_helpers.tpl (traefik.image-name), requirements.yaml, Chart.yaml annotations",
		text: "Image image.registry/image.repository:image.tag, the tag within the Traefik Proxy versions the chart supports (v3.6.0 to v3.7.4)",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			pt, err := m.podTemplate(fmt.Sprint(dig(r.values, "deployment", "kind")), "traefik")
			if err != nil {
				return err
			}
			tag := fmt.Sprint(dig(r.values, "image", "tag"))
			want := fmt.Sprintf("%v/%v:%s", dig(r.values, "image", "registry"), dig(r.values, "image", "repository"), tag)
			if img := pt.Spec.Containers[0].Image; img != want {
				return fmt.Errorf("image %s, want %s", img, want)
			}
			v, err := semver.NewVersion(tag)
			if err != nil || v.LessThan(semver.MustParse("v3.6.0")) || v.GreaterThan(semver.MustParse("v3.7.4")) {
				return fmt.Errorf("tag %s outside v3.6.0..v3.7.4", tag)
			}
			return nil
		}},
	{id: "traefik-crds", chart: "traefik", upstream: upTraefik, source: "traefik/crds/",
		text: "CRDs in crds/ (installed once, never upgraded or deleted by Helm); upstream ships 25 (10 traefik.io, 15 hub.traefik.io), the stand-in the 10 traefik.io ones, which Traefik's CRD provider watches all of (it waits for all their caches before it routes)",
		check: func(r *rendering) error {
			return crdsIn(r, "traefik", []string{"ingressroutes.traefik.io", "ingressroutetcps.traefik.io", "ingressrouteudps.traefik.io",
				"middlewares.traefik.io", "middlewaretcps.traefik.io", "serverstransports.traefik.io", "serverstransporttcps.traefik.io",
				"tlsoptions.traefik.io", "tlsstores.traefik.io", "traefikservices.traefik.io"})
		}},

	// knative-operator.
	{id: "operator-numbering", chart: "knative-operator", upstream: upOperator, source: "hack/find_helm_chart_releases_and_create_helm_index.sh, hack/generate-helm.sh, gh-pages index.yaml",
		text: "Index entries are v<release> with appVersion <release>, archives knative-operator-v<release>.tgz; the archive's Chart.yaml (apiVersion v1) says <release>; images are tagged v<release>",
		check: func(r *rendering) error {
			rel := strings.TrimPrefix(r.cv.Version, "v")
			if r.cv.Version != "v"+rel || r.cv.AppVersion != rel || !strings.HasSuffix(r.cv.URLs[0], "knative-operator-v"+rel+".tgz") {
				return fmt.Errorf("index entry version %s appVersion %s url %s", r.cv.Version, r.cv.AppVersion, r.cv.URLs[0])
			}
			if md := r.chart.Metadata; md.Version != rel || md.APIVersion != "v1" || md.AppVersion != "" {
				return fmt.Errorf("Chart.yaml apiVersion %s version %s appVersion %q", md.APIVersion, md.Version, md.AppVersion)
			}
			if !slices.Contains(testcluster.OperatorReleases(), rel) {
				return fmt.Errorf("operator release %s does not exist upstream", rel)
			}
			m, err := r.rendered()
			if err != nil {
				return err
			}
			for where, img := range m.images() {
				if !strings.HasSuffix(img, ":v"+rel) {
					return fmt.Errorf("%s runs %s, want tag v%s", where, img, rel)
				}
			}
			return nil
		}},
	{id: "operator-workloads", chart: "knative-operator", upstream: upOperator, source: "config/charts/knative-operator/templates/operator.yaml",
		text: "Deployment knative-operator (selector name=knative-operator; pods also app.kubernetes.io/name=knative-operator, app.kubernetes.io/version=<release>) and Deployment operator-webhook (selector app=operator-webhook, role=operator-webhook); no app.kubernetes.io/instance",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			rel := strings.TrimPrefix(r.cv.Version, "v")
			op, err := m.podTemplate("Deployment", "knative-operator")
			if err != nil {
				return err
			}
			if err := hasLabels("knative-operator pods", op.Labels, map[string]string{"name": "knative-operator", "app.kubernetes.io/name": "knative-operator", "app.kubernetes.io/version": rel}); err != nil {
				return err
			}
			wh, err := m.podTemplate("Deployment", "operator-webhook")
			if err != nil {
				return err
			}
			return hasLabels("operator-webhook pods", wh.Labels, map[string]string{"app": "operator-webhook", "role": "operator-webhook", "app.kubernetes.io/name": "knative-operator"})
		}},
	{id: "operator-crds-in-release", chart: "knative-operator", upstream: upOperator, source: "config/charts/knative-operator/templates/operator.yaml",
		text: "The CRDs KnativeServing and KnativeEventing are templates of the release, not crds/: helm upgrade upgrades them and helm uninstall deletes them, with every KnativeServing",
		check: func(r *rendering) error {
			if len(r.chart.CRDObjects()) != 0 {
				return errors.New("the chart has files in crds/")
			}
			m, err := r.rendered()
			if err != nil {
				return err
			}
			for _, n := range []string{"knativeservings.operator.knative.dev", "knativeeventings.operator.knative.dev"} {
				if m.find("CustomResourceDefinition", n) == nil {
					return fmt.Errorf("the release has no CRD %s", n)
				}
			}
			return nil
		}},

	// zot.
	{id: "zot-labels", chart: "zot", upstream: upZot, source: "charts/zot/templates/_helpers.tpl, service.yaml",
		text: "Workload runr-zot, pods labelled app.kubernetes.io/name=zot, app.kubernetes.io/instance=<release>; Service runr-zot of service.type (NodePort by default) on service.port to the container port zot (5000)",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			pt, err := zotPod(r, m)
			if err != nil {
				return err
			}
			if err := hasLabels("runr-zot pods", pt.Labels, map[string]string{"app.kubernetes.io/name": "zot", "app.kubernetes.io/instance": r.vc.Release}); err != nil {
				return err
			}
			var svc corev1.Service
			if err := m.typed("Service", "runr-zot", &svc); err != nil {
				return err
			}
			if string(svc.Spec.Type) != fmt.Sprint(dig(r.values, "service", "type")) || fmt.Sprint(svc.Spec.Ports[0].Port) != fmt.Sprint(dig(r.values, "service", "port")) || svc.Spec.Ports[0].TargetPort.String() != "zot" {
				return fmt.Errorf("Service runr-zot: %s %v", svc.Spec.Type, svc.Spec.Ports)
			}
			return nil
		}},
	{id: "zot-persistence", chart: "zot", cases: []string{"zot-pvc"}, upstream: upZot, source: "charts/zot/templates/statefulset.yaml",
		text: "persistence: true makes StatefulSet runr-zot with volumeClaimTemplate pvc.name or <release>-pvc (PVC runr-zot-pvc-runr-zot-0) of pvc.storage and pvc.storageClassName, mounted at /var/lib/registry",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			var sts struct {
				Spec struct {
					VolumeClaimTemplates []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates"`
					Template             corev1.PodTemplateSpec         `json:"template"`
				} `json:"spec"`
			}
			if err := m.typed("StatefulSet", "runr-zot", &sts); err != nil {
				return err
			}
			if len(sts.Spec.VolumeClaimTemplates) != 1 || sts.Spec.VolumeClaimTemplates[0].Name != r.vc.Release+"-pvc" {
				return fmt.Errorf("volumeClaimTemplates %v, want one named %s-pvc", sts.Spec.VolumeClaimTemplates, r.vc.Release)
			}
			vct := sts.Spec.VolumeClaimTemplates[0]
			if q := vct.Spec.Resources.Requests[corev1.ResourceStorage]; q.String() != fmt.Sprint(dig(r.values, "pvc", "storage")) {
				return fmt.Errorf("claim size %s, want pvc.storage %v", q.String(), dig(r.values, "pvc", "storage"))
			}
			if sc := dig(r.values, "pvc", "storageClassName"); sc != nil && (vct.Spec.StorageClassName == nil || *vct.Spec.StorageClassName != sc) {
				return fmt.Errorf("claim class %v, want %v", vct.Spec.StorageClassName, sc)
			}
			return mountedAt(&sts.Spec.Template, "/var/lib/registry", vct.Name)
		}},
	{id: "zot-s3-config", chart: "zot", cases: []string{"zot-s3"}, upstream: upZot, source: "charts/zot/values.yaml (configFiles, mountConfig), templates/configmap.yaml",
		text: "The chart has no s3 values: a registry on S3 is zot's own config file (configFiles config.json with mountConfig: true, ConfigMap <release>-config at /etc/zot) whose storage.storageDriver.name is s3",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			var cm corev1.ConfigMap
			if err := m.typed("ConfigMap", r.vc.Release+"-config", &cm); err != nil {
				return fmt.Errorf("no zot config file is mounted (mountConfig/configFiles unset): %w", err)
			}
			var cfg map[string]any
			if err := yaml.Unmarshal([]byte(cm.Data["config.json"]), &cfg); err != nil {
				return fmt.Errorf("config.json: %w", err)
			}
			if dig(cfg, "storage", "storageDriver", "name") != "s3" || fmt.Sprint(dig(cfg, "storage", "storageDriver", "bucket")) == "" {
				return fmt.Errorf("storage %v is not on S3", dig(cfg, "storage"))
			}
			pt, err := zotPod(r, m)
			if err != nil {
				return err
			}
			return mountedAt(pt, "/etc/zot", r.vc.Release+"-config")
		}},
	{id: "zot-s3-credentials", chart: "zot", cases: []string{"zot-s3"}, upstream: upZot, source: "charts/zot/values.yaml (env, externalSecrets, mountSecret), templates/deployment.yaml",
		text: "S3 credentials reach zot through env (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY from a Secret) or a mounted Secret (externalSecrets, secretFiles)",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			pt, err := zotPod(r, m)
			if err != nil {
				return err
			}
			c := pt.Spec.Containers[0]
			for _, e := range c.Env {
				if e.Name == "AWS_ACCESS_KEY_ID" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					return nil
				}
			}
			for _, v := range pt.Spec.Volumes {
				if v.Secret != nil {
					return nil
				}
			}
			return fmt.Errorf("no credentials: env %v, volumes %v", c.Env, pt.Spec.Volumes)
		}},
	{id: "zot-emptydir", chart: "zot", cases: []string{"zot-s3"}, upstream: upZot, source: "charts/zot/templates/deployment.yaml",
		text: "Without persistence: Deployment runr-zot with an emptyDir at /var/lib/registry",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			pt, err := m.podTemplate("Deployment", "runr-zot")
			if err != nil {
				return err
			}
			for _, v := range pt.Spec.Volumes {
				if v.EmptyDir != nil {
					return mountedAt(pt, "/var/lib/registry", v.Name)
				}
			}
			return errors.New("no emptyDir volume")
		}},
	{id: "zot-test-hooks", chart: "zot", upstream: upZot, source: "charts/zot/templates/tests/",
		text: "Pods <release>-test-connection and -test-connection-fails are helm test hooks, not workloads of the release",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			for _, n := range []string{"-test-connection", "-test-connection-fails"} {
				found := false
				for _, h := range m.hooks {
					found = found || (h.GetKind() == "Pod" && h.GetName() == r.vc.Release+n && h.GetAnnotations()["helm.sh/hook"] == "test")
				}
				if !found {
					return fmt.Errorf("no test hook Pod %s%s", r.vc.Release, n)
				}
			}
			return nil
		}},

	// kube-prometheus-stack.
	{id: "kps-workloads", chart: "kube-prometheus-stack", upstream: upKPS, source: "templates/prometheus-operator/deployment.yaml, _helpers.tpl; kube-state-metrics and prometheus-node-exporter templates",
		text: "Deployment <release>-kube-prometheus-st-operator (name truncated to 26 + -operator), Deployment <release>-kube-state-metrics, DaemonSet <release>-prometheus-node-exporter; their pods carry app.kubernetes.io/instance=<release> and release=<release>",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			rel := r.vc.Release
			for kn, extra := range map[string]map[string]string{
				"Deployment/" + kpsFullname(rel) + "-operator":   {"app": "kube-prometheus-stack-operator", "app.kubernetes.io/component": "prometheus-operator"},
				"Deployment/" + rel + "-kube-state-metrics":      {"app.kubernetes.io/name": "kube-state-metrics"},
				"DaemonSet/" + rel + "-prometheus-node-exporter": {"app.kubernetes.io/name": "prometheus-node-exporter"},
			} {
				kind, name, _ := strings.Cut(kn, "/")
				pt, err := m.podTemplate(kind, name)
				if err != nil {
					return err
				}
				want := map[string]string{"app.kubernetes.io/instance": rel, "release": rel}
				for k, v := range extra {
					want[k] = v
				}
				if err := hasLabels(kn+" pods", pt.Labels, want); err != nil {
					return err
				}
			}
			return nil
		}},
	{id: "kps-custom-resources", chart: "kube-prometheus-stack", upstream: upKPS, source: "templates/prometheus/prometheus.yaml, templates/alertmanager/alertmanager.yaml",
		text: "Prometheus <fullname>-prometheus and Alertmanager <fullname>-alertmanager are custom resources, not workloads of the chart: the Prometheus operator makes StatefulSets prometheus-<name> and alertmanager-<name>, whose pods carry app.kubernetes.io/instance=<resource name>, not <release>",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			fn := kpsFullname(r.vc.Release)
			if m.find("Prometheus", fn+"-prometheus") == nil || m.find("Alertmanager", fn+"-alertmanager") == nil {
				return fmt.Errorf("no Prometheus %s-prometheus or Alertmanager %s-alertmanager (have %v)", fn, fn, m.names())
			}
			for _, o := range m.objects {
				if o.GetKind() == "StatefulSet" {
					return fmt.Errorf("the chart renders StatefulSet %s itself", o.GetName())
				}
			}
			return nil
		}},
	{id: "kps-prometheus-spec", chart: "kube-prometheus-stack", upstream: upKPS, source: "templates/prometheus/prometheus.yaml",
		text: "prometheus.prometheusSpec.priorityClassName, retention, retentionSize and resources reach the Prometheus resource's spec, and storageSpec its spec.storage (the operator's volume claim; none: an emptyDir)",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			p := m.find("Prometheus", kpsFullname(r.vc.Release)+"-prometheus")
			if p == nil {
				return errors.New("no Prometheus resource")
			}
			for k, field := range map[string]string{"priorityClassName": "priorityClassName", "retention": "retention", "retentionSize": "retentionSize",
				"resources": "resources", "storageSpec": "storage"} {
				want := dig(r.values, "prometheus", "prometheusSpec", k)
				got, _, _ := unstructured.NestedFieldNoCopy(p.Object, "spec", field)
				if isEmpty(want) != isEmpty(got) || (!isEmpty(want) && fmt.Sprint(normalizeJSON(want)) != fmt.Sprint(normalizeJSON(got))) {
					return fmt.Errorf("spec.%s %v, values say %v", field, got, want)
				}
			}
			return nil
		}},
	{id: "kps-podmonitor-selector", chart: "kube-prometheus-stack", upstream: upKPS, source: "templates/prometheus/prometheus.yaml (podMonitorSelector, podMonitorNamespaceSelector), values.yaml (podMonitorSelectorNilUsesHelmValues: true)",
		text: "The Prometheus resource selects the PodMonitors labelled release=<release> in every namespace (cAdvisor's PodMonitor carries that label)",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			p := m.find("Prometheus", kpsFullname(r.vc.Release)+"-prometheus")
			if p == nil {
				return errors.New("no Prometheus resource")
			}
			sel, _, _ := unstructured.NestedStringMap(p.Object, "spec", "podMonitorSelector", "matchLabels")
			ns, found, _ := unstructured.NestedMap(p.Object, "spec", "podMonitorNamespaceSelector")
			if len(sel) != 1 || sel["release"] != r.vc.Release || !found || len(ns) != 0 {
				return fmt.Errorf("podMonitorSelector %v, podMonitorNamespaceSelector %v (found %v): want release=%s in every namespace", sel, ns, found, r.vc.Release)
			}
			return nil
		}},
	{id: "kps-admission-hooks", chart: "kube-prometheus-stack", upstream: upKPS, source: "templates/prometheus-operator/admission-webhooks/job-patch/job-createSecret.yaml, job-patchWebhook.yaml",
		text: "The admission-webhook certificate Jobs <fullname>-admission-create (pre-install) and -patch (post-install) are hooks",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			fn := kpsFullname(r.vc.Release)
			for name, hook := range map[string]string{fn + "-admission-create": "pre-install,pre-upgrade", fn + "-admission-patch": "post-install,post-upgrade"} {
				found := false
				for _, h := range m.hooks {
					found = found || (h.GetKind() == "Job" && h.GetName() == name && h.GetAnnotations()["helm.sh/hook"] == hook)
				}
				if !found {
					return fmt.Errorf("no hook Job %s (%s)", name, hook)
				}
			}
			return nil
		}},
	{id: "kps-crds", chart: "kube-prometheus-stack", upstream: upKPS, source: "charts/kube-prometheus-stack/charts/crds/crds/",
		text: "The Prometheus operator's 10 CRDs (monitoring.coreos.com) are in crds/ of the in-tree subchart crds: installed once by Helm, never upgraded or deleted by it",
		check: func(r *rendering) error {
			return crdsIn(r, "crds", []string{"alertmanagerconfigs.monitoring.coreos.com", "alertmanagers.monitoring.coreos.com",
				"podmonitors.monitoring.coreos.com", "probes.monitoring.coreos.com", "prometheusagents.monitoring.coreos.com",
				"prometheuses.monitoring.coreos.com", "prometheusrules.monitoring.coreos.com", "scrapeconfigs.monitoring.coreos.com",
				"servicemonitors.monitoring.coreos.com", "thanosrulers.monitoring.coreos.com"})
		}},
	{id: "kps-grafana-off", chart: "kube-prometheus-stack", upstream: upKPS, source: "Chart.yaml dependencies, values.yaml (grafana.enabled: true)",
		text: "Grafana is on by default (Deployment <release>-grafana from the grafana subchart); grafana.enabled: false leaves it out",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			on, _ := dig(r.values, "grafana", "enabled").(bool)
			if got := m.find("Deployment", r.vc.Release+"-grafana") != nil; got != on {
				return fmt.Errorf("grafana.enabled %v but Deployment %s-grafana rendered: %v", on, r.vc.Release, got)
			}
			return nil
		}},
	{id: "kps-pdb-selectors", chart: "kube-prometheus-stack", upstream: upKPS, source: "templates/prometheus/podDisruptionBudget.yaml, alertmanager/podDisruptionBudget.yaml, prometheus-operator/pdb.yaml",
		text: "A PodDisruptionBudget the chart renders selects pods that exist: the operator's, or the Prometheus/Alertmanager pods the Prometheus operator makes (app.kubernetes.io/name, operator.prometheus.io/name or alertmanager = the resource name)",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			pdbs, err := m.pdbs()
			if err != nil {
				return err
			}
			fn := kpsFullname(r.vc.Release)
			pods := []map[string]string{testcluster.OperatorPodLabels("Prometheus", fn+"-prometheus"), testcluster.OperatorPodLabels("Alertmanager", fn+"-alertmanager")}
			for _, pt := range m.pods() {
				pods = append(pods, pt.Labels)
			}
			for _, p := range pdbs {
				if !slices.ContainsFunc(pods, func(l map[string]string) bool { return selects(p, l) }) {
					return fmt.Errorf("PodDisruptionBudget %s selects no pod", p.Name)
				}
			}
			return nil
		}},

	// loki-stack.
	{id: "loki-workloads", chart: "loki-stack", upstream: upLoki, source: "loki 2.16.0 templates/statefulset.yaml; promtail 6.15.5 templates/daemonset.yaml, _pod.tpl",
		text: "StatefulSet <release> with pods app=loki, release=<release> (no app.kubernetes.io/instance); DaemonSet <release>-promtail with pods app.kubernetes.io/name=promtail, app.kubernetes.io/instance=<release>",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			rel := r.vc.Release
			loki, err := m.podTemplate("StatefulSet", rel)
			if err != nil {
				return err
			}
			if err := hasLabels("Loki pods", loki.Labels, map[string]string{"app": "loki", "release": rel}); err != nil {
				return err
			}
			if v, ok := loki.Labels["app.kubernetes.io/instance"]; ok {
				return fmt.Errorf("Loki pods carry app.kubernetes.io/instance=%s", v)
			}
			pt, err := m.podTemplate("DaemonSet", rel+"-promtail")
			if err != nil {
				return err
			}
			return hasLabels("promtail pods", pt.Labels, map[string]string{"app.kubernetes.io/name": "promtail", "app.kubernetes.io/instance": rel})
		}},
	{id: "loki-priority", chart: "loki-stack", upstream: upLoki, source: "loki 2.16.0 templates/statefulset.yaml (priorityClassName)",
		text: "loki.priorityClassName reaches Loki's pods",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			pt, err := m.podTemplate("StatefulSet", r.vc.Release)
			if err != nil {
				return err
			}
			if want := dig(r.values, "loki", "priorityClassName"); !isEmpty(want) && pt.Spec.PriorityClassName != fmt.Sprint(want) {
				return fmt.Errorf("priorityClassName %q, values say %v", pt.Spec.PriorityClassName, want)
			}
			return nil
		}},
	{id: "loki-persistence", chart: "loki-stack", upstream: upLoki, source: "loki 2.16.0 templates/statefulset.yaml (volumeClaimTemplates, volumes), values.yaml (persistence)",
		text: "loki.persistence.enabled gives Loki's StatefulSet the volumeClaimTemplate storage of persistence.size and persistence.storageClassName (none: the cluster's default class), mounted at /data; without it storage is an emptyDir",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			var sts appsv1.StatefulSet
			if err := m.typed("StatefulSet", r.vc.Release, &sts); err != nil {
				return err
			}
			return persistenceRendered(&sts, dig(r.values, "loki", "persistence").(map[string]any))
		}},
	{id: "loki-retention", chart: "loki-stack", upstream: upLoki, source: "loki 2.16.0 values.yaml (config: compactor, limits_config, table_manager), templates/secret.yaml",
		text: "loki.config is loki.yaml in Secret <release>, merged key by key with the chart's config: compactor.retention_enabled and limits_config.retention_period keep the chart's compactor (shared_store filesystem, working_directory under /data) and limits",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			var sec corev1.Secret
			if err := m.typed("Secret", r.vc.Release, &sec); err != nil {
				return err
			}
			var cfg map[string]any
			if err := yaml.Unmarshal(sec.Data["loki.yaml"], &cfg); err != nil {
				return fmt.Errorf("loki.yaml: %w", err)
			}
			for _, path := range [][]string{{"compactor", "retention_enabled"}, {"limits_config", "retention_period"}, {"compactor", "shared_store"},
				{"compactor", "working_directory"}, {"limits_config", "reject_old_samples_max_age"}} {
				want := dig(r.values, append([]string{"loki", "config"}, path...)...)
				if got := dig(cfg, path...); fmt.Sprint(got) != fmt.Sprint(want) {
					return fmt.Errorf("loki.yaml %s: %v, values say %v", strings.Join(path, "."), got, want)
				}
			}
			if dig(cfg, "compactor", "shared_store") != "filesystem" {
				return fmt.Errorf("loki.yaml compactor %v: the chart's shared_store is lost", dig(cfg, "compactor"))
			}
			return nil
		}},
	{id: "loki-pdb", chart: "loki-stack", upstream: upLoki, source: "loki 2.16.0 templates/_helpers.tpl (loki.podDisruptionBudget.apiVersion), templates/pdb.yaml, values.yaml (podDisruptionBudget: {})",
		text: "loki.podDisruptionBudget (empty by default: no budget) renders PodDisruptionBudget <release> of policy/v1beta1: the helper asks for \"policy/v1/PodDisruptionBudgets\" (plural; Helm lists kinds in the singular), never true, and Kubernetes removed policy/v1beta1 in 1.25, so the release fails to install; no PodDisruptionBudget the release renders may be of an apiVersion Kubernetes 1.25+ does not serve",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			for _, o := range m.all() {
				if o.GetKind() == "PodDisruptionBudget" && o.GetAPIVersion() != "policy/v1" {
					return fmt.Errorf("PodDisruptionBudget %s is %s, which Kubernetes 1.25 and later do not serve: the install fails (\"no matches for kind PodDisruptionBudget in version %s\")", o.GetName(), o.GetAPIVersion(), o.GetAPIVersion())
				}
			}
			return nil
		}},
	{id: "loki-image", chart: "loki-stack", upstream: upLoki, source: "loki 2.16.0 values.yaml (image), loki-stack Chart.yaml",
		text: "Loki runs grafana/loki:2.6.1, the loki subchart's default (loki-stack's appVersion v2.9.3 is not Loki's version)",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			pt, err := m.podTemplate("StatefulSet", r.vc.Release)
			if err != nil {
				return err
			}
			want := fmt.Sprintf("%v:%v", dig(r.values, "loki", "image", "repository"), dig(r.values, "loki", "image", "tag"))
			if img := pt.Spec.Containers[0].Image; img != want {
				return fmt.Errorf("image %s, want %s", img, want)
			}
			return nil
		}},

	// tempo.
	{id: "tempo-workload", chart: "tempo", upstream: upTempo, source: "charts/tempo/templates/statefulset.yaml, _helpers.tpl",
		text: "StatefulSet tempo (the release name), pods app.kubernetes.io/name=tempo, app.kubernetes.io/instance=<release>; persistence.enabled adds volumeClaimTemplate storage of persistence.size and persistence.storageClassName (none: the cluster's default class)",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			pt, err := m.podTemplate("StatefulSet", r.vc.Release)
			if err != nil {
				return err
			}
			if err := hasLabels("tempo pods", pt.Labels, map[string]string{"app.kubernetes.io/name": "tempo", "app.kubernetes.io/instance": r.vc.Release}); err != nil {
				return err
			}
			var sts appsv1.StatefulSet
			if err := m.typed("StatefulSet", r.vc.Release, &sts); err != nil {
				return err
			}
			return persistenceRendered(&sts, dig(r.values, "persistence").(map[string]any))
		}},
	{id: "tempo-image", chart: "tempo", upstream: upTempo, source: "charts/tempo/templates/statefulset.yaml (image), values.yaml (tempo.registry: docker.io)",
		text: "Image <global.imageRegistry or tempo.registry>/<tempo.repository>:<tempo.tag>, tempo.registry defaulting to docker.io: a registry must go in tempo.registry, not in tempo.repository",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			pt, err := m.podTemplate("StatefulSet", r.vc.Release)
			if err != nil {
				return err
			}
			img := pt.Spec.Containers[0].Image
			if doubleRegistry(img) {
				return fmt.Errorf("image %s: tempo.repository %v names a registry, and tempo.registry %v is put before it", img, dig(r.values, "tempo", "repository"), dig(r.values, "tempo", "registry"))
			}
			return nil
		}},
	{id: "tempo-retention", chart: "tempo", upstream: upTempo, source: "charts/tempo/values.yaml (config: compactor.compaction.block_retention)",
		text: "tempo.retention is tempo.yaml's compactor.compaction.block_retention",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			var cm corev1.ConfigMap
			if err := m.typed("ConfigMap", "tempo", &cm); err != nil {
				return err
			}
			var cfg map[string]any
			if err := yaml.Unmarshal([]byte(cm.Data["tempo.yaml"]), &cfg); err != nil {
				return err
			}
			if got, want := fmt.Sprint(dig(cfg, "compactor", "compaction", "block_retention")), fmt.Sprint(dig(r.values, "tempo", "retention")); got != want {
				return fmt.Errorf("block_retention %s, want %s", got, want)
			}
			return nil
		}},

	// opentelemetry-collector.
	{id: "otel-renders", chart: "opentelemetry-collector", upstream: upOtel, source: "templates/NOTES.txt, values.schema.json",
		text:  "The chart accepts the values: image.repository and mode set (no defaults), the health_check extension kept, only keys of its closed values.schema.json",
		check: func(r *rendering) error { _, err := r.rendered(); return err }},
	{id: "otel-workload", chart: "opentelemetry-collector", upstream: upOtel, source: "templates/deployment.yaml, daemonset.yaml, statefulset.yaml, _helpers.tpl",
		text: "Workload <release>-opentelemetry-collector of the kind mode names (-agent for a DaemonSet); pods app.kubernetes.io/name=opentelemetry-collector, app.kubernetes.io/instance=<release>, component=standalone-collector (deployment); image <repository>:<tag or the chart's appVersion>",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			kinds := map[string]string{"deployment": "Deployment", "daemonset": "DaemonSet", "statefulset": "StatefulSet"}
			components := map[string]string{"deployment": "standalone-collector", "daemonset": "agent-collector", "statefulset": "statefulset-collector"}
			mode := fmt.Sprint(dig(r.values, "mode"))
			name := r.vc.Release + "-opentelemetry-collector"
			if mode == "daemonset" {
				name += "-agent"
			}
			pt, err := m.podTemplate(kinds[mode], name)
			if err != nil {
				return err
			}
			if err := hasLabels("collector pods", pt.Labels, map[string]string{"app.kubernetes.io/name": "opentelemetry-collector", "app.kubernetes.io/instance": r.vc.Release, "component": components[mode]}); err != nil {
				return err
			}
			tag := fmt.Sprint(dig(r.values, "image", "tag"))
			if isEmpty(dig(r.values, "image", "tag")) {
				tag = r.chart.Metadata.AppVersion // image.tag | default .Chart.AppVersion
			}
			if want := fmt.Sprintf("%v:%s", dig(r.values, "image", "repository"), tag); pt.Spec.Containers[0].Image != want {
				return fmt.Errorf("image %s, want %s", pt.Spec.Containers[0].Image, want)
			}
			return nil
		}},
	{id: "otel-config", chart: "opentelemetry-collector", upstream: upOtel, source: "templates/configmap.yaml, _config.tpl",
		text: "config is merged with the chart's default config (maps merge, lists replace) into the relay ConfigMap; the traces pipeline exports where the console says",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			var cm corev1.ConfigMap
			if err := m.typed("ConfigMap", r.vc.Release+"-opentelemetry-collector", &cm); err != nil {
				return err
			}
			var relay map[string]any
			if err := yaml.Unmarshal([]byte(cm.Data["relay"]), &relay); err != nil {
				return err
			}
			want := toStrings(dig(r.vc.Values, "config", "service", "pipelines", "traces", "exporters"))
			got := toStrings(dig(relay, "service", "pipelines", "traces", "exporters"))
			if !slices.Equal(got, want) {
				return fmt.Errorf("traces exporters %v, want %v", got, want)
			}
			for _, e := range want {
				if dig(relay, "exporters", e) == nil {
					return fmt.Errorf("exporter %s is not configured", e)
				}
			}
			return nil
		}},
	// kata-deploy (release kata-deploy in runr-sandbox).
	{id: "kata-numbering", chart: "kata-deploy", upstream: upKata, source: "KD/Chart.yaml (version, appVersion, dependencies), KD/templates/_helpers.tpl (kata-deploy.image); tools/packaging/release/release.sh (_upload_helm_chart_tarball); .github/workflows/release.yaml (upload-helm-chart-tarball)",
		text: "Chart version = appVersion = the Kata release (3.32.0); the release packaging runs helm dependencies update, so kata-deploy-3.32.0.tgz vendors node-feature-discovery 0.18.3 (~0.18.0, condition node-feature-discovery.enabled, off by default and left off by the console), and is uploaded as a release asset and pushed to oci://quay.io/kata-containers/kata-deploy-charts and oci://ghcr.io/kata-containers/kata-deploy-charts; no values.schema.json (unknown keys are ignored); image quay.io/kata-containers/kata-deploy:<appVersion> unless image.tag says",
		check: func(r *rendering) error {
			if r.cv.Version != r.vc.Chart.Version || r.cv.AppVersion != r.cv.Version {
				return fmt.Errorf("version %s, appVersion %s, pinned %s", r.cv.Version, r.cv.AppVersion, r.vc.Chart.Version)
			}
			if r.chart.Schema != nil {
				return errors.New("the stand-in has a values schema; upstream has none")
			}
			if err := kataVendorsNFD(r); err != nil {
				return err
			}
			_, c, err := kataPod(r)
			if err != nil {
				return err
			}
			tag := fmt.Sprint(dig(r.values, "image", "tag"))
			if isEmpty(dig(r.values, "image", "tag")) {
				tag = r.cv.AppVersion
			}
			if want := fmt.Sprintf("%v:%s", dig(r.values, "image", "reference"), tag); c.Image != want {
				return fmt.Errorf("image %s, want %s", c.Image, want)
			}
			return nil
		}},
	{id: "kata-workload", chart: "kata-deploy", upstream: upKata, source: "KD/templates/kata-deploy.yaml",
		text: "DaemonSet kata-deploy (the chart's name, whatever the release is called) whose selector and pod labels are only name=kata-deploy (no app.kubernetes.io/*); container kube-kata privileged, hostPID; nodeSelector and tolerations from values",
		check: func(r *rendering) error {
			pt, c, err := kataPod(r)
			if err != nil {
				return err
			}
			if !maps.Equal(pt.Labels, map[string]string{"name": "kata-deploy"}) {
				return fmt.Errorf("pod labels %v, want only name=kata-deploy", pt.Labels)
			}
			if c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged || !pt.Spec.HostPID {
				return errors.New("kube-kata is not privileged with hostPID")
			}
			want := map[string]string{}
			for k, v := range jsonMap(r.vc.Values)["nodeSelector"].(map[string]any) {
				want[k] = fmt.Sprint(v)
			}
			if !maps.Equal(pt.Spec.NodeSelector, want) {
				return fmt.Errorf("nodeSelector %v, values say %v", pt.Spec.NodeSelector, want)
			}
			if len(toStrings(dig(r.values, "tolerations"))) != len(pt.Spec.Tolerations) {
				return fmt.Errorf("tolerations %v, values say %v", pt.Spec.Tolerations, dig(r.values, "tolerations"))
			}
			return nil
		}},
	{id: "kata-shims", chart: "kata-deploy", upstream: upKata, source: "KD/templates/_helpers.tpl (getEnabledShimsForArch, getDefaultShimForArch, commonEnv), KD/values.yaml (shims.*.supportedArches, defaultShim); KB/config.rs (get_arch_var, get_default_shims_for_arch)",
		text: "On every architecture the pods may run on (the kubernetes.io/arch of their nodeSelector, else amd64, arm64, s390x and ppc64le), SHIMS_<ARCH> lists exactly the shims the console enables whose supportedArches hold it (shims.disableAll: true turns off every shim whose enabled is ~; clh, fc and dragonball are amd64 only) and DEFAULT_SHIM_<ARCH> is one of them (defaultShim.<arch> only when that shim is enabled there); a pod of an architecture without SHIMS_<ARCH> installs kata-deploy's built-in list (nine shims on aarch64), so the console keeps the pods off every architecture none of its picks runs on",
		check: func(r *rendering) error {
			pt, c, err := kataPod(r)
			if err != nil {
				return err
			}
			env := envOf(c)
			for _, arch := range kataPodArchs(pt) {
				suffix := kataArchSuffix[arch]
				want := kataPickedOn(r, arch)
				if len(want) == 0 {
					return fmt.Errorf("the pods may run on %s nodes, where the console enables no shim: no SHIMS_%s, and kata-deploy installs its built-in list there", arch, suffix)
				}
				got := strings.Fields(env["SHIMS_"+suffix])
				slices.Sort(got)
				if !slices.Equal(got, want) {
					return fmt.Errorf("SHIMS_%s %v, the console enables %v for %s", suffix, got, want, arch)
				}
				def := env["DEFAULT_SHIM_"+suffix]
				if !slices.Contains(want, def) {
					return fmt.Errorf("DEFAULT_SHIM_%s %q is none of the shims for %s %v", suffix, def, arch, want)
				}
				if set := dig(r.vc.Values, "defaultShim", arch); set != nil && fmt.Sprint(set) != def {
					return fmt.Errorf("DEFAULT_SHIM_%s %q, the console's default shim %q", suffix, def, set)
				}
			}
			return nil
		}},
	{id: "kata-runtimeclasses", chart: "kata-deploy", upstream: upKata, source: "KD/templates/runtimeclasses.yaml (kata-deploy.runtimeclass), KD/values.yaml (shims.*.runtimeClass.nodeSelector); KB/main.rs (KATA_RUNTIME_LABEL)",
		text: "RuntimeClass kata-<shim> (handler kata-<shim>) for each enabled shim and no other, whatever the architectures (no default kata without runtimeClasses.createDefault); scheduling.nodeSelector katacontainers.io/kata-runtime=true, the label the pod puts on its node, plus shims.<shim>.runtimeClass.nodeSelector: the console's kubernetes.io/arch for a shim that does not run on every architecture the pods may run on, so its pods go only where it is installed; overhead.podFixed qemu 160Mi/250m, clh, fc and dragonball 130Mi/250m",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			rcs, err := m.runtimeClasses()
			if err != nil {
				return err
			}
			pt, _, err := kataPod(r)
			if err != nil {
				return err
			}
			var want []string
			for _, shim := range kataPicked(r) {
				want = append(want, isolation.KataRuntimeClass(shim))
				if rc, ok := rcs[isolation.KataRuntimeClass(shim)]; ok {
					if err := checkKataRuntimeClass(rc, shim, kataShimArchs(r, shim), kataPodArchs(pt)); err != nil {
						return err
					}
				}
			}
			got := slices.Sorted(maps.Keys(rcs))
			if !slices.Equal(got, want) {
				return fmt.Errorf("RuntimeClasses %v, want %v", got, want)
			}
			return nil
		}},
	{id: "kata-dropins", chart: "kata-deploy", upstream: upKata, source: "KD/templates/custom-runtimes.yaml, _helpers.tpl (commonVolumes, hasDefaultRuntimeDropIns); KB/artifacts/install.rs",
		text: "ConfigMap kata-deploy-custom-configs holds dropin-<shim>.toml = shims.<shim>.dropIn for each enabled shim with one, mounted at /custom-configs/ in kube-kata; the pod writes it as the shim's config.d/50-user-overrides.toml",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			var cm corev1.ConfigMap
			if err := m.typed("ConfigMap", "kata-deploy-custom-configs", &cm); err != nil {
				return err
			}
			want := map[string]string{}
			for _, shim := range kataPicked(r) {
				if d := strings.TrimSpace(fmt.Sprint(dig(r.vc.Values, "shims", shim, "dropIn"))); d != "" {
					want["dropin-"+shim+".toml"] = d
				}
			}
			got := map[string]string{}
			for k, v := range cm.Data {
				got[k] = strings.TrimSpace(v) // the last entry loses its final line break, upstream too
			}
			if !maps.Equal(got, want) {
				return fmt.Errorf("drop-ins %q, want %q", cm.Data, want)
			}
			pt, c, err := kataPod(r)
			if err != nil {
				return err
			}
			if err := mountedAt(&corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{*c}}}, "/custom-configs/", "custom-configs"); err != nil {
				return err
			}
			for _, v := range pt.Spec.Volumes {
				if v.Name == "custom-configs" && (v.ConfigMap == nil || v.ConfigMap.Name != cm.Name) {
					return fmt.Errorf("volume custom-configs is not ConfigMap %s", cm.Name)
				}
			}
			return nil
		}},
	{id: "kata-containerd-dir", chart: "kata-deploy", upstream: upKata, source: "KD/templates/_helpers.tpl (containerdConfPath), KD/values.yaml (k8sDistribution, containerd.configDir)",
		text: "k8sDistribution picks the host directory mounted at /etc/containerd/: k8s /etc/containerd/, k3s /var/lib/rancher/k3s/agent/etc/containerd/, rke2 /var/lib/rancher/rke2/agent/etc/containerd/ (containerd.configDir overrides it)",
		check: func(r *rendering) error {
			pt, _, err := kataPod(r)
			if err != nil {
				return err
			}
			dirs := map[string]string{"k8s": "/etc/containerd/", "k3s": "/var/lib/rancher/k3s/agent/etc/containerd/", "rke2": "/var/lib/rancher/rke2/agent/etc/containerd/"}
			dist := fmt.Sprint(dig(r.values, "k8sDistribution"))
			want, ok := dirs[dist]
			if !ok {
				return fmt.Errorf("k8sDistribution %q is none of k8s, k3s, rke2", dist)
			}
			for _, v := range pt.Spec.Volumes {
				if v.Name == "containerd-conf" {
					if v.HostPath == nil || v.HostPath.Path != want {
						return fmt.Errorf("containerd-conf is %+v, want hostPath %s", v.VolumeSource, want)
					}
					return nil
				}
			}
			return errors.New("no volume containerd-conf")
		}},
	{id: "kata-rbac-keep", chart: "kata-deploy", upstream: upKata, source: "KD/templates/kata-rbac.yaml, kata-cleanup-rbac-job.yaml; KB/main.rs (cleanup), KB/k8s/client.rs (own_daemonset_exists, count_any_kata_deploy_daemonsets, label_node)",
		text: "ServiceAccount kata-deploy-sa, ClusterRole kata-deploy-role (nodes get/patch, daemonsets get/list: what a pod's SIGTERM cleanup asks before it removes its node's label) and ClusterRoleBinding kata-deploy-rb carry helm.sh/resource-policy: keep (helm uninstall leaves them); the post-delete hook Job kata-deploy-rb-cleanup is meant to delete them once the name=kata-deploy pods are gone, but its ClusterRole kata-deploy-cleanup-role grants delete only (clusterroles, clusterrolebindings, serviceaccounts): its kubectl get pod is forbidden and counts none, so it deletes them at once, and the pods' cleanup then cannot remove the label; the console deletes the DaemonSet and waits for the labels before helm uninstall",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			for _, kn := range [][2]string{{"ServiceAccount", "kata-deploy-sa"}, {"ClusterRole", "kata-deploy-role"}, {"ClusterRoleBinding", "kata-deploy-rb"}} {
				o := m.find(kn[0], kn[1])
				if o == nil || slices.Contains(m.hooks, o) {
					return fmt.Errorf("%s %s is not an object of the release", kn[0], kn[1])
				}
				if o.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
					return fmt.Errorf("%s %s is not kept", kn[0], kn[1])
				}
			}
			var cr rbacv1.ClusterRole
			if err := m.typed("ClusterRole", "kata-deploy-role", &cr); err != nil {
				return err
			}
			if !grants(cr.Rules, "", "nodes", []string{"get", "patch"}) || !grants(cr.Rules, "apps", "daemonsets", []string{"get", "list"}) {
				return errors.New("kata-deploy-role does not grant nodes get/patch and daemonsets get/list")
			}
			return kataCleanupHookForbidden(m)
		}},

	// runtime-class-manager (release runtime-class-manager in runr-sandbox).
	{id: "rcm-numbering", chart: "runtime-class-manager", upstream: upRCM, source: "Makefile (helm-package), deploy/update-chart-versions.sh, .github/workflows/helm-chart-release.yml, container-image.yml",
		text: "Chart version = the tag without v (0.2.0), appVersion = the tag (v0.2.0); the release packaging sets image.tag, rcm.shimDownloaderImage.tag and rcm.nodeInstallerImage.tag to the tag (the repository's values say latest), and the images are pushed with the tag",
		check: func(r *rendering) error {
			if r.cv.Version != r.vc.Chart.Version || r.cv.AppVersion != "v"+r.cv.Version {
				return fmt.Errorf("version %s, appVersion %s, pinned %s", r.cv.Version, r.cv.AppVersion, r.vc.Chart.Version)
			}
			for _, p := range [][]string{{"image", "tag"}, {"rcm", "shimDownloaderImage", "tag"}, {"rcm", "nodeInstallerImage", "tag"}} {
				if got := fmt.Sprint(dig(r.values, p...)); got != r.cv.AppVersion {
					return fmt.Errorf("%s is %s, not the release tag %s", strings.Join(p, "."), got, r.cv.AppVersion)
				}
			}
			return nil
		}},
	{id: "rcm-workload", chart: "runtime-class-manager", upstream: upRCM, source: "deploy/helm/templates/deployment.yaml, _helpers.tpl",
		text: "Deployment runtime-class-manager (the release name, as it holds the chart's name), selector app.kubernetes.io/name=runtime-class-manager, app.kubernetes.io/instance=<release>, pods also app.kubernetes.io/version=<appVersion>; CONTROLLER_NAMESPACE is the release namespace, where its installer Jobs run",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			var d appsv1.Deployment
			if err := m.typed("Deployment", "runtime-class-manager", &d); err != nil {
				return err
			}
			sel := map[string]string{"app.kubernetes.io/name": "runtime-class-manager", "app.kubernetes.io/instance": r.vc.Release}
			if d.Spec.Selector == nil || !maps.Equal(d.Spec.Selector.MatchLabels, sel) {
				return fmt.Errorf("selector %v, want %v", d.Spec.Selector, sel)
			}
			sel["app.kubernetes.io/version"] = r.cv.AppVersion
			if err := hasLabels("controller pods", d.Spec.Template.Labels, sel); err != nil {
				return err
			}
			if ns := envOf(&d.Spec.Template.Spec.Containers[0])["CONTROLLER_NAMESPACE"]; ns != r.vc.Namespace {
				return fmt.Errorf("CONTROLLER_NAMESPACE %q, want %s", ns, r.vc.Namespace)
			}
			return nil
		}},
	{id: "rcm-images", chart: "runtime-class-manager", upstream: upRCM, source: "deploy/helm/templates/deployment.yaml; internal/controller/shim_controller.go (createJobManifest)",
		text: "The controller runs ghcr.io/spinframework/runtime-class-manager:<image.tag>; its installer Jobs run the images of env SHIM_DOWNLOADER_IMAGE (ghcr.io/spinframework/shim-downloader) and SHIM_NODE_INSTALLER_IMAGE (ghcr.io/spinframework/node-installer): all three pullable and tagged with the release tag, not latest",
		check: func(r *rendering) error {
			m, err := r.rendered()
			if err != nil {
				return err
			}
			pt, err := m.podTemplate("Deployment", "runtime-class-manager")
			if err != nil {
				return err
			}
			c := pt.Spec.Containers[0]
			env := envOf(&c)
			want := map[string]string{
				"controller":                "ghcr.io/spinframework/runtime-class-manager:" + r.cv.AppVersion,
				"SHIM_DOWNLOADER_IMAGE":     "ghcr.io/spinframework/shim-downloader:" + r.cv.AppVersion,
				"SHIM_NODE_INSTALLER_IMAGE": "ghcr.io/spinframework/node-installer:" + r.cv.AppVersion,
			}
			got := map[string]string{"controller": c.Image, "SHIM_DOWNLOADER_IMAGE": env["SHIM_DOWNLOADER_IMAGE"], "SHIM_NODE_INSTALLER_IMAGE": env["SHIM_NODE_INSTALLER_IMAGE"]}
			if !maps.Equal(got, want) {
				return fmt.Errorf("images %v, want %v", got, want)
			}
			return nil
		}},
	{id: "rcm-crd", chart: "runtime-class-manager", upstream: upRCM, source: "deploy/helm/crds/runtime.spinkube.dev_shims.yaml",
		text: "CRD shims.runtime.spinkube.dev in crds/ (installed once, never upgraded or deleted by Helm): Shim runtime.spinkube.dev/v1alpha1, cluster-scoped, no status subresource (status.nodes and status.nodesReady are written with the object)",
		check: func(r *rendering) error {
			if err := crdsIn(r, "runtime-class-manager", []string{"shims.runtime.spinkube.dev"}); err != nil {
				return err
			}
			crd, err := crdOf(r, "shims.runtime.spinkube.dev")
			if err != nil {
				return err
			}
			v := crd.Spec.Versions
			if crd.Spec.Scope != apiextensionsv1.ClusterScoped || crd.Spec.Names.Kind != "Shim" || len(v) != 1 || v[0].Name != "v1alpha1" || !v[0].Storage {
				return fmt.Errorf("CRD scope %s kind %s versions %d", crd.Spec.Scope, crd.Spec.Names.Kind, len(v))
			}
			if v[0].Subresources != nil && v[0].Subresources.Status != nil {
				return errors.New("the CRD has a status subresource; upstream has none")
			}
			return nil
		}},
	{id: "rcm-shim-valid", chart: "runtime-class-manager", upstream: upRCM, source: "deploy/helm/crds/runtime.spinkube.dev_shims.yaml; internal/controller/shim_controller.go (handleInstallShim, resolveArtifactForNode)",
		text: "The console's Shims (isolation.ShimObject) are valid for the CRD and lose no field to pruning: nodeSelector, fetchStrategy.platforms[os linux, arch amd64|arm64|x86_64|aarch64, location, sha256], runtimeClass{name,handler}, rolloutStrategy.type recreate (the controller installs nothing for rolling: not implemented), containerdRuntimeOptions of strings",
		check: func(r *rendering) error {
			crd, err := crdOf(r, "shims.runtime.spinkube.dev")
			if err != nil {
				return err
			}
			for _, sh := range isolation.WasmShims {
				obj := jsonMap(isolation.ShimObject(sh))
				if err := validateCustom(crd, "v1alpha1", obj); err != nil {
					return fmt.Errorf("Shim %s: %w", sh.Name, err)
				}
				if t := dig(obj, "spec", "rolloutStrategy", "type"); t != "recreate" {
					return fmt.Errorf("Shim %s: rolloutStrategy %v, the controller only rolls out recreate", sh.Name, t)
				}
			}
			return nil
		}},
}

// mapOf is v as a map (nil when it is none).
func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
