package testcluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"helm.sh/helm/v3/pkg/repo"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// chartCase is one stand-in chart: where the console installs it, the CRDs it
// carries and the renders to check.
type chartCase struct {
	chart      string
	versions   []string
	appVersion func(version string) string
	release    string
	namespace  string
	crds       []string // CRD names in crds/
	renders    []renderCase
}

// renderCase renders the chart with values (YAML; "" = defaults) and checks the result.
type renderCase struct {
	name    string
	values  string
	wantErr string // a substring of the expected render error
	want    []string
	check   func(t *testing.T, version string, m *rendered)
}

func fixedAppVersion(v string) func(string) string { return func(string) string { return v } }

func TestChartRepo(t *testing.T) {
	r, err := StartChartRepo("")
	if err != nil {
		t.Fatalf("StartChartRepo: %v", err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if !strings.HasPrefix(r.URL, "http://127.0.0.1:") || strings.HasSuffix(r.URL, "/") {
		t.Fatalf("URL = %q, want http://127.0.0.1:PORT", r.URL)
	}

	raw := httpGet(t, r.URL+"/index.yaml", http.StatusOK)
	idx := &repo.IndexFile{}
	if err := yaml.Unmarshal(raw, idx); err != nil {
		t.Fatalf("index.yaml: %v", err)
	}

	for _, cc := range chartCases() {
		for _, version := range cc.versions {
			t.Run(cc.chart+"-"+version, func(t *testing.T) {
				cv, err := idx.Get(cc.chart, version)
				if err != nil {
					t.Fatalf("index.yaml has no %s %s: %v", cc.chart, version, err)
				}
				if len(cv.URLs) == 0 {
					t.Fatalf("%s %s has no download URL", cc.chart, version)
				}
				archive := httpGet(t, resolve(t, r.URL, cv.URLs[0]), http.StatusOK)
				ch := loadArchive(t, archive)
				checkMetadata(t, ch.Metadata, cc.chart, version, cc.appVersion(version))
				checkCRDs(t, ch, cc.crds)

				for _, rc := range cc.renders {
					t.Run(rc.name, func(t *testing.T) {
						vals := map[string]any{}
						if rc.values != "" {
							if err := yaml.Unmarshal([]byte(rc.values), &vals); err != nil {
								t.Fatalf("bad test values: %v", err)
							}
						}
						rel, err := render(loadArchive(t, archive), cc.release, cc.namespace, vals)
						if rc.wantErr != "" {
							if err == nil || !strings.Contains(err.Error(), rc.wantErr) {
								t.Fatalf("render error = %v, want one containing %q", err, rc.wantErr)
							}
							return
						}
						if err != nil {
							t.Fatalf("render %s %s: %v", cc.chart, version, err)
						}
						m := parseRelease(t, rel)
						if got := m.names(); !slices.Equal(got, sorted(rc.want)) {
							t.Errorf("rendered resources:\n  got  %v\n  want %v", got, sorted(rc.want))
						}
						for _, o := range append(slices.Clone(m.objects), m.hooks...) {
							if o.namespaced && o.namespace != cc.namespace {
								t.Errorf("%s/%s: namespace %q, want %q", o.kind, o.name, o.namespace, cc.namespace)
							}
						}
						if rc.check != nil {
							rc.check(t, version, m)
						}
					})
				}
			})
		}
	}

	t.Run("serving-crds", func(t *testing.T) {
		for _, v := range KnativeVersions {
			raw := httpGet(t, fmt.Sprintf("%s/knative-serving/v%s/serving-crds.yaml", r.URL, v), http.StatusOK)
			got := map[string]*apiextensionsv1.CustomResourceDefinition{}
			for _, doc := range splitYAML(raw) {
				crd := &apiextensionsv1.CustomResourceDefinition{}
				if err := yaml.UnmarshalStrict(doc, crd); err != nil {
					t.Fatalf("v%s: bad CRD: %v\n%s", v, err, doc)
				}
				got[crd.Name] = crd
			}
			for _, want := range []struct{ plural, kind, short string }{
				{"services", "Service", "ksvc"}, {"configurations", "Configuration", ""},
				{"revisions", "Revision", ""}, {"routes", "Route", ""},
			} {
				crd := got[want.plural+".serving.knative.dev"]
				if crd == nil {
					t.Fatalf("v%s: no CRD %s.serving.knative.dev (have %v)", v, want.plural, keys(got))
				}
				checkCRD(t, crd, "serving.knative.dev", want.kind, "v1", true)
				if want.short != "" && !slices.Contains(crd.Spec.Names.ShortNames, want.short) {
					t.Errorf("%s: short names %v, want %s", crd.Name, crd.Spec.Names.ShortNames, want.short)
				}
			}
			if len(got) != 4 {
				t.Errorf("v%s: %d CRDs, want 4", v, len(got))
			}
		}
		httpGet(t, r.URL+"/knative-serving/v1.15.0/serving-crds.yaml", http.StatusNotFound)
		httpGet(t, r.URL+"/knative-serving/1.20.2/serving-crds.yaml", http.StatusNotFound)
		httpGet(t, r.URL+"/no-such-chart-1.0.0.tgz", http.StatusNotFound)
	})
}

func chartCases() []chartCase {
	return []chartCase{
		{
			chart: "zot", versions: []string{"0.1.125"}, appVersion: fixedAppVersion("v2.1.8"),
			release: "runr-zot", namespace: "runr-registry",
			renders: []renderCase{
				{
					name: "defaults",
					want: []string{"ConfigMap/runr-zot-config", "Deployment/runr-zot", "Service/runr-zot"},
					check: func(t *testing.T, _ string, m *rendered) {
						svc := m.service(t, "runr-zot")
						if svc.Spec.Type != corev1.ServiceTypeClusterIP {
							t.Errorf("Service type %q, want ClusterIP", svc.Spec.Type)
						}
						checkPorts(t, svc, map[int32]int{5000: 5000})
						cfg := zotConfig(t, m)
						if got := dig(cfg, "storage", "rootDirectory"); got != "/var/lib/registry" {
							t.Errorf("storage.rootDirectory = %v", got)
						}
						if got := dig(cfg, "storage", "storageDriver"); got != nil {
							t.Errorf("storage.storageDriver = %v, want none", got)
						}
						if got := fmt.Sprint(dig(cfg, "http", "port")); got != "5000" {
							t.Errorf("http.port = %v, want 5000", got)
						}
						d := m.deployment(t, "runr-zot")
						c := onlyContainer(t, &d.Spec.Template.Spec)
						if c.Image != "ghcr.io/project-zot/zot-linux-amd64:v2.1.8" {
							t.Errorf("image %q", c.Image)
						}
						if v := volumeAt(t, &d.Spec.Template.Spec, c, "/var/lib/registry"); v.EmptyDir == nil {
							t.Errorf("/var/lib/registry is not an emptyDir without persistence: %+v", v)
						}
						if len(c.Env) != 0 {
							t.Errorf("env without s3: %+v", c.Env)
						}
					},
				},
				{
					name: "persistence",
					values: `
image: {tag: v2.1.8}
replicaCount: 1
service: {type: ClusterIP, port: 5000}
persistence: true
pvc: {create: true, storage: 20Gi, storageClassName: ""}
resources: {requests: {cpu: 100m, memory: 128Mi}}
`,
					want: []string{"ConfigMap/runr-zot-config", "Deployment/runr-zot", "PersistentVolumeClaim/runr-zot-pvc", "Service/runr-zot"},
					check: func(t *testing.T, _ string, m *rendered) {
						pvc := &corev1.PersistentVolumeClaim{}
						m.decode(t, "PersistentVolumeClaim", "runr-zot-pvc", pvc)
						if pvc.Spec.StorageClassName != nil {
							t.Errorf("storageClassName %q, want none when empty", *pvc.Spec.StorageClassName)
						}
						if q := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; q.String() != "20Gi" {
							t.Errorf("storage request %s, want 20Gi", q.String())
						}
						d := m.deployment(t, "runr-zot")
						c := onlyContainer(t, &d.Spec.Template.Spec)
						v := volumeAt(t, &d.Spec.Template.Spec, c, "/var/lib/registry")
						if v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "runr-zot-pvc" {
							t.Errorf("/var/lib/registry volume %+v, want claim runr-zot-pvc", v)
						}
						if c.Resources.Requests.Cpu().String() != "100m" {
							t.Errorf("resources %+v", c.Resources)
						}
					},
				},
				{
					name:   "persistence-storage-class",
					values: `{persistence: true, pvc: {create: true, storage: 8Gi, storageClassName: fast}}`,
					want:   []string{"ConfigMap/runr-zot-config", "Deployment/runr-zot", "PersistentVolumeClaim/runr-zot-pvc", "Service/runr-zot"},
					check: func(t *testing.T, _ string, m *rendered) {
						pvc := &corev1.PersistentVolumeClaim{}
						m.decode(t, "PersistentVolumeClaim", "runr-zot-pvc", pvc)
						if pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != "fast" {
							t.Errorf("storageClassName %v, want fast", pvc.Spec.StorageClassName)
						}
					},
				},
				{
					name: "s3",
					values: `
persistence: false
s3:
  enabled: true
  endpoint: https://s3.example.test
  bucket: runr-images
  region: eu-west-1
  secretName: runr-zot-s3
`,
					want: []string{"ConfigMap/runr-zot-config", "Deployment/runr-zot", "Service/runr-zot"},
					check: func(t *testing.T, _ string, m *rendered) {
						cfg := zotConfig(t, m)
						for path, want := range map[string]string{
							"name": "s3", "bucket": "runr-images", "region": "eu-west-1", "regionendpoint": "https://s3.example.test",
						} {
							if got := dig(cfg, "storage", "storageDriver", path); got != want {
								t.Errorf("storage.storageDriver.%s = %v, want %s", path, got, want)
							}
						}
						d := m.deployment(t, "runr-zot")
						c := onlyContainer(t, &d.Spec.Template.Spec)
						refs := map[string]string{}
						for _, e := range c.Env {
							if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
								refs[e.ValueFrom.SecretKeyRef.Name+"/"+e.ValueFrom.SecretKeyRef.Key] = e.Name
							}
						}
						if refs["runr-zot-s3/accessKey"] == "" || refs["runr-zot-s3/secretKey"] == "" {
							t.Errorf("env does not read the s3 Secret's accessKey and secretKey: %+v", c.Env)
						}
					},
				},
			},
		},
		{
			chart: "knative-operator", versions: KnativeVersions, appVersion: func(v string) string { return "v" + v },
			release: "knative-operator", namespace: "knative-operator",
			crds: []string{"knativeeventings.operator.knative.dev", "knativeservings.operator.knative.dev"},
			renders: []renderCase{
				{
					name: "defaults",
					want: knativeOperatorResources,
					check: func(t *testing.T, version string, m *rendered) {
						for _, name := range []string{"knative-operator", "operator-webhook"} {
							d := m.deployment(t, name)
							for k, want := range map[string]string{
								"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "knative-operator",
								"app.kubernetes.io/version": "v" + version,
							} {
								if got := d.Labels[k]; got != want {
									t.Errorf("Deployment %s: label %s = %q, want %q", name, k, got, want)
								}
							}
							c := onlyContainer(t, &d.Spec.Template.Spec)
							if !strings.HasSuffix(c.Image, ":v"+version) {
								t.Errorf("Deployment %s: image %q, want tag v%s", name, c.Image, version)
							}
							if d.Spec.Template.Spec.ServiceAccountName != "knative-operator" {
								t.Errorf("Deployment %s: service account %q", name, d.Spec.Template.Spec.ServiceAccountName)
							}
						}
						crb := &rbacv1.ClusterRoleBinding{}
						m.decode(t, "ClusterRoleBinding", "knative-serving-operator", crb)
						if crb.RoleRef.Name != "knative-serving-operator" || len(crb.Subjects) != 1 ||
							crb.Subjects[0].Name != "knative-operator" || crb.Subjects[0].Namespace != "knative-operator" {
							t.Errorf("ClusterRoleBinding %+v", crb)
						}
					},
				},
				{
					name: "images",
					values: `
knative_operator:
  knative_operator: {image: registry.example.test/knative/operator, tag: v9.9.9}
  operator_webhook: {image: registry.example.test/knative/webhook, tag: v9.9.8}
`,
					want: knativeOperatorResources,
					check: func(t *testing.T, _ string, m *rendered) {
						for name, want := range map[string]string{
							"knative-operator": "registry.example.test/knative/operator:v9.9.9",
							"operator-webhook": "registry.example.test/knative/webhook:v9.9.8",
						} {
							d := m.deployment(t, name)
							if c := onlyContainer(t, &d.Spec.Template.Spec); c.Image != want {
								t.Errorf("Deployment %s: image %q, want %q", name, c.Image, want)
							}
						}
					},
				},
			},
		},
		{
			chart: "traefik", versions: []string{"40.3.0"}, appVersion: fixedAppVersion("v3.7.4"),
			release: "traefik", namespace: "knative-serving",
			crds: []string{
				"ingressroutes.traefik.io", "ingressroutetcps.traefik.io", "middlewares.traefik.io",
				"serverstransports.traefik.io", "tlsoptions.traefik.io", "tlsstores.traefik.io",
			},
			renders: []renderCase{
				{
					name: "defaults",
					want: traefikResources(true),
					check: func(t *testing.T, _ string, m *rendered) {
						svc := m.service(t, "traefik")
						if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
							t.Errorf("Service type %q, want LoadBalancer", svc.Spec.Type)
						}
						checkPorts(t, svc, map[int32]int{80: 8000, 443: 8443})
						d := m.deployment(t, "traefik")
						if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
							t.Errorf("replicas %v, want 1", d.Spec.Replicas)
						}
						c := onlyContainer(t, &d.Spec.Template.Spec)
						if c.Image != "docker.io/traefik:v3.7.4" {
							t.Errorf("image %q", c.Image)
						}
						for _, want := range []string{
							"--entryPoints.web.address=:8000/tcp", "--entryPoints.websecure.address=:8443/tcp",
							"--providers.kubernetescrd", "--providers.kubernetesingress",
							"--providers.kubernetesingress.ingressclass=traefik",
						} {
							if !slices.Contains(c.Args, want) {
								t.Errorf("args %q lack %q", c.Args, want)
							}
						}
						for _, a := range c.Args {
							if strings.Contains(a, "respondingTimeouts") {
								t.Errorf("timeout argument %q without timeouts set", a)
							}
						}
						ic := &networkingv1.IngressClass{}
						m.decode(t, "IngressClass", "traefik", ic)
						if ic.Spec.Controller != "traefik.io/ingress-controller" {
							t.Errorf("IngressClass controller %q", ic.Spec.Controller)
						}
						if got := ic.Annotations["ingressclass.kubernetes.io/is-default-class"]; got != "false" {
							t.Errorf("is-default-class = %q, want false", got)
						}
						crb := &rbacv1.ClusterRoleBinding{}
						m.decode(t, "ClusterRoleBinding", "traefik-knative-serving", crb)
						if crb.RoleRef.Name != "traefik-knative-serving" || len(crb.Subjects) != 1 ||
							crb.Subjects[0].Name != "traefik" || crb.Subjects[0].Namespace != "knative-serving" {
							t.Errorf("ClusterRoleBinding %+v", crb)
						}
					},
				},
				{
					name: "console",
					values: `
deployment: {replicas: 2}
ingressClass: {enabled: true, isDefaultClass: true, name: traefik}
providers: {kubernetesIngress: {ingressClass: knative-traefik}}
ports:
  web: {transport: {respondingTimeouts: {readTimeout: 600s, writeTimeout: 600s}}}
  websecure: {transport: {respondingTimeouts: {readTimeout: 0}}}
additionalArguments: ["--log.level=DEBUG", "--serversTransport.insecureSkipVerify=true"]
`,
					want: traefikResources(true),
					check: func(t *testing.T, _ string, m *rendered) {
						d := m.deployment(t, "traefik")
						if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
							t.Errorf("replicas %v, want 2", d.Spec.Replicas)
						}
						c := onlyContainer(t, &d.Spec.Template.Spec)
						for _, want := range []string{
							"--providers.kubernetesingress.ingressclass=knative-traefik",
							"--entryPoints.web.transport.respondingTimeouts.readTimeout=600s",
							"--entryPoints.web.transport.respondingTimeouts.writeTimeout=600s",
							"--entryPoints.websecure.transport.respondingTimeouts.readTimeout=0",
							"--log.level=DEBUG", "--serversTransport.insecureSkipVerify=true",
						} {
							if !slices.Contains(c.Args, want) {
								t.Errorf("args %q lack %q", c.Args, want)
							}
						}
						if slices.ContainsFunc(c.Args, func(a string) bool { return strings.Contains(a, "websecure.transport.respondingTimeouts.writeTimeout") }) {
							t.Errorf("args %q set websecure's writeTimeout, which is not in the values", c.Args)
						}
						ic := &networkingv1.IngressClass{}
						m.decode(t, "IngressClass", "traefik", ic)
						if got := ic.Annotations["ingressclass.kubernetes.io/is-default-class"]; got != "true" {
							t.Errorf("is-default-class = %q, want true", got)
						}
					},
				},
				{
					name:   "no-ingress-class",
					values: `{ingressClass: {enabled: false}, service: {type: ClusterIP}}`,
					want:   traefikResources(false),
					check: func(t *testing.T, _ string, m *rendered) {
						if svc := m.service(t, "traefik"); svc.Spec.Type != corev1.ServiceTypeClusterIP {
							t.Errorf("Service type %q, want ClusterIP", svc.Spec.Type)
						}
					},
				},
			},
		},
		{
			chart: "kube-prometheus-stack", versions: []string{"79.5.0"}, appVersion: fixedAppVersion("v0.86.0"),
			release: "knative", namespace: "observability",
			crds: []string{
				"podmonitors.monitoring.coreos.com", "prometheuses.monitoring.coreos.com",
				"prometheusrules.monitoring.coreos.com", "servicemonitors.monitoring.coreos.com",
			},
			renders: []renderCase{
				{
					name: "defaults",
					want: []string{
						"DaemonSet/knative-node-exporter", "Deployment/knative-operator", "Job/knative-admission-create",
						"Job/knative-admission-patch", "Service/prometheus-knative", "ServiceAccount/knative-operator",
						"StatefulSet/prometheus-knative",
					},
					check: func(t *testing.T, _ string, m *rendered) {
						sts := m.statefulSet(t, "prometheus-knative")
						if sts.Spec.ServiceName != "prometheus-knative" || sts.Spec.Replicas == nil || *sts.Spec.Replicas != 1 {
							t.Errorf("StatefulSet serviceName %q replicas %v", sts.Spec.ServiceName, sts.Spec.Replicas)
						}
						if sts.Spec.Template.Spec.PriorityClassName != "" || len(sts.Spec.Template.Spec.Volumes) != 0 || len(sts.Spec.VolumeClaimTemplates) != 0 {
							t.Errorf("StatefulSet pod spec %+v", sts.Spec.Template.Spec)
						}
						svc := m.service(t, "prometheus-knative")
						if svc.Spec.ClusterIP != corev1.ClusterIPNone {
							t.Errorf("Service prometheus-knative is not headless")
						}
						checkPorts(t, svc, map[int32]int{9090: 9090})
						for name, want := range map[string]struct{ hook, weight string }{
							"knative-admission-create": {"pre-install,pre-upgrade", "-5"},
							"knative-admission-patch":  {"post-install,post-upgrade", ""},
						} {
							job := &batchv1.Job{}
							m.decode(t, "Job", name, job)
							if got := job.Annotations["helm.sh/hook"]; got != want.hook {
								t.Errorf("Job %s: hook %q, want %q", name, got, want.hook)
							}
							if got := job.Annotations["helm.sh/hook-delete-policy"]; got != "before-hook-creation,hook-succeeded" {
								t.Errorf("Job %s: hook-delete-policy %q", name, got)
							}
							if got := job.Annotations["helm.sh/hook-weight"]; want.weight != "" && got != want.weight {
								t.Errorf("Job %s: hook-weight %q, want %q", name, got, want.weight)
							}
							if job.Spec.BackoffLimit == nil || *job.Spec.BackoffLimit != 3 || job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
								t.Errorf("Job %s: backoffLimit %v restartPolicy %q", name, job.Spec.BackoffLimit, job.Spec.Template.Spec.RestartPolicy)
							}
						}
					},
				},
				{
					name: "console",
					values: `
grafana: {enabled: false}
windowsMonitoring: {enabled: false}
nodeExporter: {enabled: false}
prometheusOperator: {admissionWebhooks: {enabled: false}}
prometheus:
  prometheusSpec:
    retention: 7d
    priorityClassName: runr-observability
    resources: {requests: {cpu: 200m, memory: 512Mi}}
`,
					want: []string{
						"Deployment/knative-operator", "Service/prometheus-knative", "ServiceAccount/knative-operator",
						"StatefulSet/prometheus-knative",
					},
					check: func(t *testing.T, _ string, m *rendered) {
						sts := m.statefulSet(t, "prometheus-knative")
						if got := sts.Spec.Template.Spec.PriorityClassName; got != "runr-observability" {
							t.Errorf("priorityClassName %q", got)
						}
						c := onlyContainer(t, &sts.Spec.Template.Spec)
						if !slices.Contains(c.Args, "--storage.tsdb.retention.time=7d") {
							t.Errorf("args %q lack the retention", c.Args)
						}
						if c.Resources.Requests.Memory().String() != "512Mi" {
							t.Errorf("resources %+v", c.Resources)
						}
					},
				},
			},
		},
		{
			chart: "loki-stack", versions: []string{"2.10.2"}, appVersion: fixedAppVersion("v2.9.3"),
			release: "loki-stack", namespace: "observability",
			renders: []renderCase{
				{
					name: "defaults",
					want: []string{"DaemonSet/loki-stack-promtail", "Service/loki-stack", "Service/loki-stack-headless", "StatefulSet/loki-stack"},
					check: func(t *testing.T, _ string, m *rendered) {
						sts := m.statefulSet(t, "loki-stack")
						if sts.Spec.ServiceName != "loki-stack-headless" || sts.Spec.Replicas == nil || *sts.Spec.Replicas != 1 {
							t.Errorf("StatefulSet serviceName %q replicas %v", sts.Spec.ServiceName, sts.Spec.Replicas)
						}
						if sts.Spec.Template.Spec.PriorityClassName != "" {
							t.Errorf("priorityClassName %q without one set", sts.Spec.Template.Spec.PriorityClassName)
						}
						checkPorts(t, m.service(t, "loki-stack"), map[int32]int{3100: 3100})
						if svc := m.service(t, "loki-stack-headless"); svc.Spec.ClusterIP != corev1.ClusterIPNone {
							t.Errorf("Service loki-stack-headless is not headless")
						}
					},
				},
				{
					name: "console",
					values: `
loki: {image: {repository: registry.example.test/loki, tag: 2.9.4}, priorityClassName: runr-observability}
promtail: {enabled: false}
grafana: {enabled: false}
`,
					want: []string{"Service/loki-stack", "Service/loki-stack-headless", "StatefulSet/loki-stack"},
					check: func(t *testing.T, _ string, m *rendered) {
						sts := m.statefulSet(t, "loki-stack")
						if got := sts.Spec.Template.Spec.PriorityClassName; got != "runr-observability" {
							t.Errorf("priorityClassName %q", got)
						}
						if c := onlyContainer(t, &sts.Spec.Template.Spec); c.Image != "registry.example.test/loki:2.9.4" {
							t.Errorf("image %q", c.Image)
						}
					},
				},
			},
		},
		{
			chart: "opentelemetry-collector", versions: []string{"0.176.0"}, appVersion: fixedAppVersion("0.162.0"),
			release: "otel-collector", namespace: "observability",
			renders: []renderCase{
				{
					name: "defaults",
					want: []string{"ConfigMap/otel-collector", "Deployment/otel-collector", "Service/otel-collector"},
					check: func(t *testing.T, _ string, m *rendered) {
						if got := otelRelay(t, m); len(got) != 0 {
							t.Errorf("relay = %v, want {}", got)
						}
						d := m.deployment(t, "otel-collector")
						if c := onlyContainer(t, &d.Spec.Template.Spec); c.Image != "ghcr.io/brf-tech/reqs/opentelemetry-collector-contrib:0.162.0" {
							t.Errorf("image %q", c.Image)
						}
						svc := m.service(t, "otel-collector")
						checkPorts(t, svc, map[int32]int{4317: 4317, 4318: 4318})
						names := map[string]int32{}
						for _, p := range svc.Spec.Ports {
							names[p.Name] = p.Port
						}
						if names["otlp"] != 4317 || names["otlp-http"] != 4318 {
							t.Errorf("Service ports %+v", svc.Spec.Ports)
						}
					},
				},
				{
					name: "console",
					values: `
mode: deployment
replicaCount: 2
config:
  receivers:
    otlp:
      protocols:
        grpc: {endpoint: "0.0.0.0:4317"}
        http: {endpoint: "0.0.0.0:4318"}
  exporters:
    otlp:
      endpoint: tempo.observability.svc:4317
      tls: {insecure: true}
  service:
    pipelines:
      traces: {receivers: [otlp], exporters: [otlp]}
`,
					want: []string{"ConfigMap/otel-collector", "Deployment/otel-collector", "Service/otel-collector"},
					check: func(t *testing.T, _ string, m *rendered) {
						relay := otelRelay(t, m)
						if got := dig(relay, "exporters", "otlp", "endpoint"); got != "tempo.observability.svc:4317" {
							t.Errorf("relay exporters.otlp.endpoint = %v", got)
						}
						if d := m.deployment(t, "otel-collector"); d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
							t.Errorf("replicas %v, want 2", d.Spec.Replicas)
						}
					},
				},
				{name: "unsupported-mode", values: `{mode: daemonset}`, wantErr: "supports mode"},
			},
		},
		{
			chart: "tempo", versions: []string{"3.2.0"}, appVersion: fixedAppVersion("3.1.0"),
			release: "tempo", namespace: "observability",
			renders: []renderCase{
				{
					name: "defaults",
					want: []string{"ConfigMap/tempo", "Service/tempo", "StatefulSet/tempo"},
					check: func(t *testing.T, _ string, m *rendered) {
						if got := dig(tempoConfig(t, m), "compactor", "compaction", "block_retention"); got != "72h" {
							t.Errorf("block_retention = %v, want 72h", got)
						}
						sts := m.statefulSet(t, "tempo")
						if sts.Spec.ServiceName != "tempo" || sts.Spec.Replicas == nil || *sts.Spec.Replicas != 1 || len(sts.Spec.VolumeClaimTemplates) != 0 {
							t.Errorf("StatefulSet %+v", sts.Spec)
						}
						if c := onlyContainer(t, &sts.Spec.Template.Spec); c.Image != "ghcr.io/brf-tech/reqs/tempo:3.1.0" {
							t.Errorf("image %q", c.Image)
						}
						svc := m.service(t, "tempo")
						checkPorts(t, svc, map[int32]int{3200: 3200, 4317: 4317})
					},
				},
				{
					name:   "console",
					values: `{tempo: {retention: 168h, tag: 3.1.1}, persistence: {enabled: true, storageClassName: fast}}`,
					want:   []string{"ConfigMap/tempo", "Service/tempo", "StatefulSet/tempo"},
					check: func(t *testing.T, _ string, m *rendered) {
						if got := dig(tempoConfig(t, m), "compactor", "compaction", "block_retention"); got != "168h" {
							t.Errorf("block_retention = %v, want 168h", got)
						}
						sts := m.statefulSet(t, "tempo")
						if len(sts.Spec.VolumeClaimTemplates) != 1 {
							t.Fatalf("volumeClaimTemplates %+v, want one", sts.Spec.VolumeClaimTemplates)
						}
						if sc := sts.Spec.VolumeClaimTemplates[0].Spec.StorageClassName; sc == nil || *sc != "fast" {
							t.Errorf("storageClassName %v, want fast", sc)
						}
						if c := onlyContainer(t, &sts.Spec.Template.Spec); c.Image != "ghcr.io/brf-tech/reqs/tempo:3.1.1" {
							t.Errorf("image %q", c.Image)
						}
					},
				},
			},
		},
	}
}

var knativeOperatorResources = []string{
	"ClusterRole/knative-serving-operator", "ClusterRoleBinding/knative-serving-operator",
	"Deployment/knative-operator", "Deployment/operator-webhook", "Service/operator-webhook",
	"ServiceAccount/knative-operator",
}

func traefikResources(ingressClass bool) []string {
	out := []string{
		"ClusterRole/traefik-knative-serving", "ClusterRoleBinding/traefik-knative-serving",
		"Deployment/traefik", "Service/traefik", "ServiceAccount/traefik",
	}
	if ingressClass {
		out = append(out, "IngressClass/traefik")
	}
	return out
}

// render renders a chart the way `helm template` does, for Kubernetes 1.36.
func render(ch *chart.Chart, releaseName, namespace string, vals map[string]any) (*release.Release, error) {
	in := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	in.DryRun = true
	in.ClientOnly = true
	in.ReleaseName = releaseName
	in.Namespace = namespace
	in.KubeVersion = &chartutil.KubeVersion{Version: "v1.36.0", Major: "1", Minor: "36"}
	return in.Run(ch, vals)
}

// object is one rendered manifest.
type object struct {
	kind, name, namespace string
	namespaced            bool
	raw                   []byte
}

// rendered holds a release's manifests and hooks.
type rendered struct {
	objects []object
	hooks   []object
}

// typedKinds are the kinds the charts may render, decoded strictly to catch misplaced fields.
var typedKinds = map[string]struct {
	namespaced bool
	new        func() any
}{
	"ConfigMap":             {true, func() any { return &corev1.ConfigMap{} }},
	"Service":               {true, func() any { return &corev1.Service{} }},
	"ServiceAccount":        {true, func() any { return &corev1.ServiceAccount{} }},
	"PersistentVolumeClaim": {true, func() any { return &corev1.PersistentVolumeClaim{} }},
	"Deployment":            {true, func() any { return &appsv1.Deployment{} }},
	"StatefulSet":           {true, func() any { return &appsv1.StatefulSet{} }},
	"DaemonSet":             {true, func() any { return &appsv1.DaemonSet{} }},
	"Job":                   {true, func() any { return &batchv1.Job{} }},
	"ClusterRole":           {false, func() any { return &rbacv1.ClusterRole{} }},
	"ClusterRoleBinding":    {false, func() any { return &rbacv1.ClusterRoleBinding{} }},
	"IngressClass":          {false, func() any { return &networkingv1.IngressClass{} }},
}

func parseRelease(t *testing.T, rel *release.Release) *rendered {
	t.Helper()
	m := &rendered{}
	for _, doc := range releaseutil.SplitManifests(rel.Manifest) {
		m.objects = append(m.objects, parseObject(t, []byte(doc)))
	}
	for _, h := range rel.Hooks {
		m.hooks = append(m.hooks, parseObject(t, []byte(h.Manifest)))
	}
	return m
}

func parseObject(t *testing.T, doc []byte) object {
	t.Helper()
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		t.Fatalf("bad manifest: %v\n%s", err, doc)
	}
	tk, ok := typedKinds[meta.Kind]
	if !ok {
		t.Fatalf("unexpected kind %q in\n%s", meta.Kind, doc)
	}
	if meta.APIVersion == "" || meta.Metadata.Name == "" {
		t.Fatalf("manifest without apiVersion or name:\n%s", doc)
	}
	obj := tk.new()
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		t.Fatalf("%s %s does not decode strictly: %v\n%s", meta.Kind, meta.Metadata.Name, err, doc)
	}
	checkWorkload(t, meta.Kind, meta.Metadata.Name, obj)
	return object{kind: meta.Kind, name: meta.Metadata.Name, namespace: meta.Metadata.Namespace, namespaced: tk.namespaced, raw: doc}
}

// checkWorkload checks a workload's labels, selector and single container.
func checkWorkload(t *testing.T, kind, name string, obj any) {
	t.Helper()
	var labels map[string]string
	var selector map[string]string
	var pod *corev1.PodTemplateSpec
	switch o := obj.(type) {
	case *appsv1.Deployment:
		labels, pod = o.Labels, &o.Spec.Template
		if o.Spec.Selector != nil {
			selector = o.Spec.Selector.MatchLabels
		}
	case *appsv1.StatefulSet:
		labels, pod = o.Labels, &o.Spec.Template
		if o.Spec.Selector != nil {
			selector = o.Spec.Selector.MatchLabels
		}
	case *appsv1.DaemonSet:
		labels, pod = o.Labels, &o.Spec.Template
		if o.Spec.Selector != nil {
			selector = o.Spec.Selector.MatchLabels
		}
	case *batchv1.Job:
		labels, pod = o.Labels, &o.Spec.Template
	case *corev1.Service:
		if o.Spec.Type == corev1.ServiceTypeExternalName {
			return
		}
		if len(o.Spec.Selector) == 0 {
			t.Errorf("Service %s has no selector", name)
		}
		return
	default:
		return
	}
	for _, k := range []string{"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/managed-by"} {
		if labels[k] == "" {
			t.Errorf("%s %s lacks label %s: %v", kind, name, k, labels)
		}
	}
	if kind != "Job" {
		if len(selector) == 0 {
			t.Errorf("%s %s has no selector", kind, name)
		}
		for k, v := range selector {
			if pod.Labels[k] != v {
				t.Errorf("%s %s: selector %s=%s does not match the pod labels %v", kind, name, k, v, pod.Labels)
			}
		}
	}
	if len(pod.Spec.Containers) != 1 || pod.Spec.Containers[0].Image == "" || strings.HasSuffix(pod.Spec.Containers[0].Image, ":") {
		t.Errorf("%s %s: want one container with an image, have %+v", kind, name, pod.Spec.Containers)
	}
}

func (m *rendered) names() []string {
	var out []string
	for _, o := range append(slices.Clone(m.objects), m.hooks...) {
		out = append(out, o.kind+"/"+o.name)
	}
	sort.Strings(out)
	return out
}

// decode strictly decodes the rendered object kind/name (a manifest or a hook) into into.
func (m *rendered) decode(t *testing.T, kind, name string, into any) {
	t.Helper()
	for _, o := range append(slices.Clone(m.objects), m.hooks...) {
		if o.kind == kind && o.name == name {
			if err := yaml.UnmarshalStrict(o.raw, into); err != nil {
				t.Fatalf("%s %s: %v", kind, name, err)
			}
			return
		}
	}
	t.Fatalf("no %s %s rendered (have %v)", kind, name, m.names())
}

func (m *rendered) deployment(t *testing.T, name string) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	m.decode(t, "Deployment", name, d)
	return d
}

func (m *rendered) statefulSet(t *testing.T, name string) *appsv1.StatefulSet {
	t.Helper()
	s := &appsv1.StatefulSet{}
	m.decode(t, "StatefulSet", name, s)
	return s
}

func (m *rendered) service(t *testing.T, name string) *corev1.Service {
	t.Helper()
	s := &corev1.Service{}
	m.decode(t, "Service", name, s)
	return s
}

func (m *rendered) configMap(t *testing.T, name string) *corev1.ConfigMap {
	t.Helper()
	c := &corev1.ConfigMap{}
	m.decode(t, "ConfigMap", name, c)
	return c
}

func zotConfig(t *testing.T, m *rendered) map[string]any {
	t.Helper()
	cm := m.configMap(t, "runr-zot-config")
	cfg := map[string]any{}
	if err := json.Unmarshal([]byte(cm.Data["config.json"]), &cfg); err != nil {
		t.Fatalf("config.json: %v\n%s", err, cm.Data["config.json"])
	}
	return cfg
}

func otelRelay(t *testing.T, m *rendered) map[string]any {
	t.Helper()
	cm := m.configMap(t, "otel-collector")
	relay, ok := cm.Data["relay"]
	if !ok {
		t.Fatalf("ConfigMap otel-collector has no relay key: %v", cm.Data)
	}
	out := map[string]any{}
	if err := yaml.Unmarshal([]byte(relay), &out); err != nil {
		t.Fatalf("relay: %v\n%s", err, relay)
	}
	return out
}

func tempoConfig(t *testing.T, m *rendered) map[string]any {
	t.Helper()
	cm := m.configMap(t, "tempo")
	out := map[string]any{}
	if err := yaml.Unmarshal([]byte(cm.Data["tempo.yaml"]), &out); err != nil {
		t.Fatalf("tempo.yaml: %v\n%s", err, cm.Data["tempo.yaml"])
	}
	return out
}

func onlyContainer(t *testing.T, pod *corev1.PodSpec) *corev1.Container {
	t.Helper()
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	return &pod.Containers[0]
}

// volumeAt returns the pod volume the container mounts at path.
func volumeAt(t *testing.T, pod *corev1.PodSpec, c *corev1.Container, path string) *corev1.Volume {
	t.Helper()
	for _, vm := range c.VolumeMounts {
		if vm.MountPath != path {
			continue
		}
		for i := range pod.Volumes {
			if pod.Volumes[i].Name == vm.Name {
				return &pod.Volumes[i]
			}
		}
		t.Fatalf("mount %s names an undefined volume %q", path, vm.Name)
	}
	t.Fatalf("nothing mounted at %s: %+v", path, c.VolumeMounts)
	return nil
}

// checkPorts checks a Service's port -> targetPort numbers, exactly.
func checkPorts(t *testing.T, svc *corev1.Service, want map[int32]int) {
	t.Helper()
	got := map[int32]int{}
	for _, p := range svc.Spec.Ports {
		got[p.Port] = p.TargetPort.IntValue()
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Service %s ports %v, want %v", svc.Name, got, want)
	}
}

func checkMetadata(t *testing.T, md *chart.Metadata, name, version, appVersion string) {
	t.Helper()
	if md.APIVersion != chart.APIVersionV2 || md.Name != name || md.Version != version || md.AppVersion != appVersion ||
		md.KubeVersion != ">=1.25.0-0" || md.Type != "application" {
		t.Errorf("Chart.yaml: apiVersion %q name %q version %q appVersion %q kubeVersion %q type %q; want v2 %s %s %s >=1.25.0-0 application",
			md.APIVersion, md.Name, md.Version, md.AppVersion, md.KubeVersion, md.Type, name, version, appVersion)
	}
	if !strings.Contains(md.Description, "stand-in") {
		t.Errorf("description %q does not say it is a stand-in", md.Description)
	}
	if len(md.Dependencies) != 0 {
		t.Errorf("chart has dependencies %v", md.Dependencies)
	}
}

// checkCRDs decodes the chart's crds/ files and checks their names.
func checkCRDs(t *testing.T, ch *chart.Chart, want []string) {
	t.Helper()
	var got []string
	for _, f := range ch.CRDObjects() {
		for _, doc := range splitYAML(f.File.Data) {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.UnmarshalStrict(doc, crd); err != nil {
				t.Fatalf("%s: %v", f.Filename, err)
			}
			if crd.Kind != "CustomResourceDefinition" || crd.APIVersion != "apiextensions.k8s.io/v1" {
				t.Errorf("%s: %s %s", f.Filename, crd.APIVersion, crd.Kind)
			}
			version := "v1"
			if len(crd.Spec.Versions) > 0 {
				version = crd.Spec.Versions[0].Name
			}
			wantStatus := crd.Spec.Group == "operator.knative.dev" || crd.Name == "prometheuses.monitoring.coreos.com"
			checkCRD(t, crd, crd.Spec.Group, crd.Spec.Names.Kind, version, wantStatus)
			got = append(got, crd.Name)
		}
	}
	if !slices.Equal(sorted(got), sorted(want)) {
		t.Errorf("CRDs %v, want %v", sorted(got), sorted(want))
	}
	switch ch.Name() {
	case "knative-operator":
		for _, f := range ch.CRDObjects() {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			yaml.Unmarshal(f.File.Data, crd)
			if crd.Spec.Group != "operator.knative.dev" || crd.Spec.Versions[0].Name != "v1beta1" {
				t.Errorf("%s: group %s version %s", crd.Name, crd.Spec.Group, crd.Spec.Versions[0].Name)
			}
			if crd.Spec.Names.Kind == "KnativeServing" && !slices.Contains(crd.Spec.Names.ShortNames, "ks") {
				t.Errorf("KnativeServing short names %v, want ks", crd.Spec.Names.ShortNames)
			}
		}
	case "traefik":
		for _, f := range ch.CRDObjects() {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			yaml.Unmarshal(f.File.Data, crd)
			if crd.Spec.Versions[0].Name != "v1alpha1" {
				t.Errorf("%s: version %s, want v1alpha1", crd.Name, crd.Spec.Versions[0].Name)
			}
		}
	}
}

// checkCRD checks one namespaced, single-version CRD with an open schema.
func checkCRD(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, group, kind, version string, status bool) {
	t.Helper()
	s := crd.Spec
	if crd.Name != s.Names.Plural+"."+group || s.Group != group || s.Names.Kind != kind || s.Scope != apiextensionsv1.NamespaceScoped {
		t.Errorf("CRD %s: group %s kind %s plural %s scope %s", crd.Name, s.Group, s.Names.Kind, s.Names.Plural, s.Scope)
	}
	if len(s.Versions) != 1 || s.Versions[0].Name != version || !s.Versions[0].Served || !s.Versions[0].Storage {
		t.Fatalf("CRD %s: versions %+v, want %s served and stored", crd.Name, s.Versions, version)
	}
	v := s.Versions[0]
	if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil || v.Schema.OpenAPIV3Schema.Type != "object" {
		t.Fatalf("CRD %s: no object schema", crd.Name)
	}
	root := v.Schema.OpenAPIV3Schema
	open := func(p *apiextensionsv1.JSONSchemaProps) bool {
		return p.XPreserveUnknownFields != nil && *p.XPreserveUnknownFields
	}
	if !open(root) {
		spec, ok := root.Properties["spec"]
		if !ok || !open(&spec) {
			t.Errorf("CRD %s: spec does not keep unknown fields", crd.Name)
		}
		if st, ok := root.Properties["status"]; status && (!ok || !open(&st)) {
			t.Errorf("CRD %s: status does not keep unknown fields", crd.Name)
		}
	}
	if status && (v.Subresources == nil || v.Subresources.Status == nil) {
		t.Errorf("CRD %s: no status subresource", crd.Name)
	}
}

func loadArchive(t *testing.T, archive []byte) *chart.Chart {
	t.Helper()
	ch, err := loader.LoadArchive(bytes.NewReader(archive))
	if err != nil {
		t.Fatalf("LoadArchive: %v", err)
	}
	return ch
}

func httpGet(t *testing.T, u string, wantStatus int) []byte {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	if resp.StatusCode != wantStatus {
		t.Fatalf("GET %s: %s, want %d", u, resp.Status, wantStatus)
	}
	return body
}

func resolve(t *testing.T, base, ref string) string {
	t.Helper()
	b, err := url.Parse(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	r, err := url.Parse(ref)
	if err != nil {
		t.Fatal(err)
	}
	return b.ResolveReference(r).String()
}

// splitYAML splits a multi-document YAML file in order, dropping empty (or comment-only) documents.
func splitYAML(raw []byte) [][]byte {
	var out [][]byte
	for _, doc := range strings.Split("\n"+string(raw), "\n---") {
		var v any
		if err := yaml.Unmarshal([]byte(doc), &v); err != nil || v != nil {
			out = append(out, []byte(doc))
		}
	}
	return out
}

func dig(m map[string]any, path ...string) any {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[p]
	}
	return cur
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
