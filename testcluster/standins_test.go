package testcluster_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// standInCase renders a stand-in with values (YAML) and checks the result, or the error.
type standInCase struct {
	name, chart, version, release, namespace, values string
	wantErr                                          string
	check                                            func(m *manifest) error
}

// TestStandIns checks what the stand-ins do with values other than the console's: the
// refusals and options of the upstream charts (charts/CONTRACT.md names the sources).
func TestStandIns(t *testing.T) {
	s := serve(t)
	for _, tc := range standInCases() {
		t.Run(tc.chart+"/"+tc.name, func(t *testing.T) {
			_, ch := s.chart(t, tc.chart, tc.version)
			vals := map[string]any{}
			if err := yaml.Unmarshal([]byte(tc.values), &vals); err != nil {
				t.Fatalf("bad test values: %v", err)
			}
			rel, err := render(ch, tc.release, tc.namespace, vals)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("render error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			m, err := parseManifest(rel)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range m.all() {
				if ns := o.GetNamespace(); ns != "" && ns != tc.namespace {
					t.Errorf("%s/%s in namespace %s", o.GetKind(), o.GetName(), ns)
				}
			}
			if err := tc.check(m); err != nil {
				t.Error(err)
			}
		})
	}
}

func traefikCase(name, values, wantErr string, check func(m *manifest) error) standInCase {
	return standInCase{name: name, chart: "traefik", version: "40.3.0", release: "traefik", namespace: "knative-serving", values: values, wantErr: wantErr, check: check}
}

func standInCases() []standInCase {
	noKnativeRBAC := func(m *manifest) error {
		var cr rbacv1.ClusterRole
		if err := m.typed("ClusterRole", "traefik-knative-serving", &cr); err != nil {
			return err
		}
		if grants(cr.Rules, "networking.internal.knative.dev", "ingresses", []string{"get"}) {
			return fmt.Errorf("the ClusterRole grants Knative ingresses without providers.knative.enabled")
		}
		return nil
	}
	return append([]standInCase{
		traefikCase("defaults", "", "", func(m *manifest) error {
			if m.find("Deployment", "traefik") == nil || m.find("IngressClass", "traefik") == nil {
				return fmt.Errorf("rendered %v", m.names())
			}
			if ic := m.find("IngressClass", "traefik"); ic.GetAnnotations()["ingressclass.kubernetes.io/is-default-class"] != "true" {
				return fmt.Errorf("IngressClass traefik is not the default class: %v", ic.GetAnnotations())
			}
			return noKnativeRBAC(m)
		}),
		traefikCase("knative-needs-experimental", "providers: {knative: {enabled: true}}", "Knative is experimental", nil),
		traefikCase("knative", "providers: {knative: {enabled: true}}\nexperimental: {knative: true}", "", func(m *manifest) error {
			var cr rbacv1.ClusterRole
			if err := m.typed("ClusterRole", "traefik-knative-serving", &cr); err != nil {
				return err
			}
			if !grants(cr.Rules, "networking.internal.knative.dev", "ingresses", []string{"get", "list", "watch"}) ||
				!grants(cr.Rules, "networking.internal.knative.dev", "ingresses/status", []string{"update"}) {
				return fmt.Errorf("no Knative RBAC: %+v", cr.Rules)
			}
			pt, err := m.podTemplate("Deployment", "traefik")
			if err != nil {
				return err
			}
			for _, a := range []string{"--providers.knative", "--experimental.knative"} {
				if !slices.Contains(pt.Spec.Containers[0].Args, a) {
					return fmt.Errorf("no %s in %v", a, pt.Spec.Containers[0].Args)
				}
			}
			return nil
		}),
		traefikCase("knative-through-arguments", "additionalArguments: [--providers.knative, --experimental.knative=true]", "", noKnativeRBAC),
		traefikCase("unknown-top-level-key", "bogus: 1", "values don't meet the specifications of the schema", nil),
		traefikCase("unknown-port-key", "ports: {web: {bogus: 1}}", "values don't meet the specifications of the schema", nil),
		traefikCase("unknown-provider-key", "providers: {knative: {bogus: true}}", "values don't meet the specifications of the schema", nil),
		traefikCase("service-type-is-ignored", "service: {type: NodePort}", "", func(m *manifest) error {
			if typ, _, _ := nestedString(m.find("Service", "traefik"), "spec", "type"); typ != "LoadBalancer" {
				return fmt.Errorf("service.type changed the type to %s", typ)
			}
			return nil
		}),
		traefikCase("service-spec-type", "service: {spec: {type: NodePort}}", "", func(m *manifest) error {
			if typ, _, _ := nestedString(m.find("Service", "traefik"), "spec", "type"); typ != "NodePort" {
				return fmt.Errorf("type %s", typ)
			}
			return nil
		}),
		traefikCase("daemonset-hostnetwork-needs-maxunavailable", "deployment: {kind: DaemonSet}\nhostNetwork: true", "maxUnavailable should be greater than 0 when using hostNetwork", nil),
		traefikCase("hostport-must-match", "hostNetwork: true\nports: {web: {port: 8000, hostPort: 80}}", "All hostPort must match", nil),
		traefikCase("daemonset-hostnetwork", "deployment: {kind: DaemonSet}\nhostNetwork: true\nupdateStrategy: {rollingUpdate: {maxUnavailable: 1, maxSurge: 0}}\nports: {web: {port: 80, hostPort: 80}, websecure: {port: 443, hostPort: 443}}\nsecurityContext: {capabilities: {add: [NET_BIND_SERVICE], drop: [ALL]}}\npodSecurityContext: {runAsNonRoot: false, runAsUser: 0}", "", func(m *manifest) error {
			pt, err := m.podTemplate("DaemonSet", "traefik")
			if err != nil {
				return err
			}
			if !pt.Spec.HostNetwork || m.find("Deployment", "traefik") != nil {
				return fmt.Errorf("hostNetwork %v, rendered %v", pt.Spec.HostNetwork, m.names())
			}
			ports := map[string]int32{}
			for _, p := range pt.Spec.Containers[0].Ports {
				ports[p.Name] = p.HostPort
			}
			if ports["web"] != 80 || ports["websecure"] != 443 {
				return fmt.Errorf("host ports %v", ports)
			}
			return nil
		}),
		traefikCase("proxy-too-new", "image: {tag: v3.8.0}", "only supports Traefik Proxy up to v3.7.4", nil),
		traefikCase("proxy-too-old", "image: {tag: v3.5.3}", "only supports Traefik Proxy v3.6.0+", nil),
		traefikCase("pdb", "podDisruptionBudget: {enabled: true, minAvailable: 1}", "", func(m *manifest) error {
			var p policyv1.PodDisruptionBudget
			if err := m.typed("PodDisruptionBudget", "traefik", &p); err != nil {
				return err
			}
			return hasLabels("PDB selector", p.Spec.Selector.MatchLabels, map[string]string{"app.kubernetes.io/name": "traefik", "app.kubernetes.io/instance": "traefik-knative-serving"})
		}),

		{name: "defaults", chart: "zot", version: "0.1.125", release: "runr-zot", namespace: "runr-registry", check: func(m *manifest) error {
			var svcType string
			svcType, _, _ = nestedString(m.find("Service", "runr-zot"), "spec", "type")
			pt, err := m.podTemplate("Deployment", "runr-zot")
			if err != nil || svcType != "NodePort" || m.find("ConfigMap", "runr-zot-config") != nil || pt.Spec.Containers[0].Image != "ghcr.io/project-zot/zot:v2.1.18" {
				return fmt.Errorf("rendered %v, Service %s, err %v", m.names(), svcType, err)
			}
			return nil
		}},
		{name: "s3-values-ignored", chart: "zot", version: "0.1.125", release: "runr-zot", namespace: "runr-registry",
			values: "s3: {enabled: true, bucket: images, secretName: x}", check: func(m *manifest) error {
				pt, err := m.podTemplate("Deployment", "runr-zot")
				if err != nil {
					return err
				}
				if len(pt.Spec.Containers[0].Env) != 0 || m.find("ConfigMap", "runr-zot-config") != nil {
					return fmt.Errorf("s3 values changed the render: %v %v", pt.Spec.Containers[0].Env, m.names())
				}
				return nil
			}},
		{name: "config-file", chart: "zot", version: "0.1.125", release: "runr-zot", namespace: "runr-registry",
			values: "mountConfig: true\nconfigFiles: {config.json: '{\"storage\": {\"rootDirectory\": \"/var/lib/registry\"}}'}", check: func(m *manifest) error {
				pt, err := m.podTemplate("Deployment", "runr-zot")
				if err != nil {
					return err
				}
				if m.find("ConfigMap", "runr-zot-config") == nil {
					return fmt.Errorf("no ConfigMap runr-zot-config: %v", m.names())
				}
				return mountedAt(pt, "/etc/zot", "runr-zot-config")
			}},
		{name: "existing-claim", chart: "zot", version: "0.1.125", release: "runr-zot", namespace: "runr-registry",
			values: "persistence: true\npvc: {create: false, name: mine}", check: func(m *manifest) error {
				pt, err := m.podTemplate("StatefulSet", "runr-zot")
				if err != nil {
					return err
				}
				for _, v := range pt.Spec.Volumes {
					if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "mine" {
						return mountedAt(pt, "/var/lib/registry", "mine")
					}
				}
				return fmt.Errorf("volumes %v", pt.Spec.Volumes)
			}},
		{name: "pdb-needs-one-bound", chart: "zot", version: "0.1.125", release: "runr-zot", namespace: "runr-registry",
			values: "podDisruptionBudget: {enabled: true}", wantErr: "set exactly one of podDisruptionBudget.minAvailable or podDisruptionBudget.maxUnavailable"},

		{name: "crds-in-templates", chart: "knative-operator", version: "v1.20.2", release: "knative-operator", namespace: "knative-operator", check: func(m *manifest) error {
			for _, n := range []string{"knativeservings.operator.knative.dev", "knativeeventings.operator.knative.dev"} {
				o := m.find("CustomResourceDefinition", n)
				if o == nil {
					return fmt.Errorf("no CRD %s", n)
				}
				raw, _ := yaml.Marshal(o.Object)
				crd := &apiextensionsv1.CustomResourceDefinition{}
				if err := yaml.UnmarshalStrict(raw, crd); err != nil {
					return fmt.Errorf("CRD %s: %w", n, err)
				}
				spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
				for _, f := range []string{"version", "config", "ingress"} {
					if _, ok := spec.Properties[f]; !ok && (f != "ingress" || crd.Spec.Names.Kind == "KnativeServing") {
						return fmt.Errorf("CRD %s: spec has no field %s (it would be pruned)", n, f)
					}
				}
			}
			return nil
		}},

		{name: "defaults", chart: "kube-prometheus-stack", version: "79.5.0", release: "knative", namespace: "observability", check: func(m *manifest) error {
			if m.find("Deployment", "knative-grafana") == nil {
				return fmt.Errorf("Grafana is on by default: %v", m.names())
			}
			return nil
		}},
		{name: "pdbs", chart: "kube-prometheus-stack", version: "79.5.0", release: "knative", namespace: "observability",
			values: "grafana: {enabled: false}\nprometheus: {podDisruptionBudget: {enabled: true}}\nalertmanager: {podDisruptionBudget: {enabled: true}}\nprometheusOperator: {podDisruptionBudget: {enabled: true}}", check: func(m *manifest) error {
				want := map[string]map[string]string{
					"knative-kube-prometheus-st-prometheus":   {"app.kubernetes.io/name": "prometheus", "operator.prometheus.io/name": "knative-kube-prometheus-st-prometheus"},
					"knative-kube-prometheus-st-alertmanager": {"app.kubernetes.io/name": "alertmanager", "alertmanager": "knative-kube-prometheus-st-alertmanager"},
					"knative-kube-prometheus-st-operator":     {"app": "kube-prometheus-stack-operator", "release": "knative"},
				}
				for name, sel := range want {
					var p policyv1.PodDisruptionBudget
					if err := m.typed("PodDisruptionBudget", name, &p); err != nil {
						return err
					}
					if fmt.Sprint(p.Spec.Selector.MatchLabels) != fmt.Sprint(sel) {
						return fmt.Errorf("PDB %s selector %v, want %v", name, p.Spec.Selector.MatchLabels, sel)
					}
				}
				if p := m.find("PodDisruptionBudget", "knative-kube-prometheus-st-operator"); p != nil {
					if v, _, _ := nestedString(p, "spec", "unhealthyPodEvictionPolicy"); v != "AlwaysAllow" {
						return fmt.Errorf("operator PDB unhealthyPodEvictionPolicy %q", v)
					}
				}
				return nil
			}},

		{name: "pdb-selects-app-only", chart: "loki-stack", version: "2.10.2", release: "loki-stack", namespace: "observability",
			values: "loki: {podDisruptionBudget: {minAvailable: 1}, persistence: {enabled: true, size: 5Gi}}", check: func(m *manifest) error {
				var p policyv1.PodDisruptionBudget
				if err := m.typed("PodDisruptionBudget", "loki-stack", &p); err != nil {
					return err
				}
				if fmt.Sprint(p.Spec.Selector.MatchLabels) != "map[app:loki]" {
					return fmt.Errorf("selector %v", p.Spec.Selector.MatchLabels)
				}
				// loki 2.16.0 asks for "policy/v1/PodDisruptionBudgets", which Helm never lists.
				if v := m.find("PodDisruptionBudget", "loki-stack").GetAPIVersion(); v != "policy/v1beta1" {
					return fmt.Errorf("apiVersion %s, upstream renders policy/v1beta1", v)
				}
				vcts, _, _ := nestedSlice(m.find("StatefulSet", "loki-stack"), "spec", "volumeClaimTemplates")
				if len(vcts) != 1 {
					return fmt.Errorf("volumeClaimTemplates %v", vcts)
				}
				return nil
			}},

		// seaweedfs 4.44.0: the all-in-one SFTP server, and what the default layout renders.
		{name: "all-in-one-sftp", chart: "seaweedfs", version: "4.44.0", release: "seaweedfs", namespace: "runr-data",
			values: "master: {enabled: false}\nvolume: {enabled: false}\nfiler: {enabled: false}\nallInOne: {enabled: true, sftp: {enabled: true}}", check: func(m *manifest) error {
				pt, err := m.podTemplate("Deployment", "seaweedfs-all-in-one")
				if err != nil {
					return err
				}
				if cmd := strings.Join(pt.Spec.Containers[0].Command, " "); !strings.Contains(cmd, "-sftp.port=2022") {
					return fmt.Errorf("no SFTP server: %s", cmd)
				}
				if err := mountedAt(pt, "/etc/sw/ssh", "config-ssh"); err != nil {
					return err
				}
				var svc corev1.Service
				if err := m.typed("Service", "seaweedfs-all-in-one", &svc); err != nil {
					return err
				}
				if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == "swfs-sftp" && p.Port == 2022 }) {
					return fmt.Errorf("service ports %v", svc.Spec.Ports)
				}
				for _, name := range []string{"seaweedfs-sftp-secret", "seaweedfs-sftp-ssh-secret"} {
					o := m.find("Secret", name)
					if o == nil || o.GetAnnotations()["helm.sh/resource-policy"] != "keep" || o.GetAnnotations()["helm.sh/hook"] != "pre-install,pre-upgrade" {
						return fmt.Errorf("Secret %s must be a kept hook: %v", name, o)
					}
				}
				if k, _, _ := nestedString(m.find("Secret", "seaweedfs-sftp-ssh-secret"), "data", "ssh_host_ed25519_key"); k == "" {
					return fmt.Errorf("no host key")
				}
				return nil
			}},
		{name: "default-layout-no-cluster-role", chart: "seaweedfs", version: "4.44.0", release: "seaweedfs", namespace: "runr-data",
			values: "global: {seaweedfs: {createClusterRole: false}}", check: func(m *manifest) error {
				// sftp-secret's condition is sftp.enabled or allInOne.enabled: neither here.
				for _, gone := range []string{"Secret/seaweedfs-sftp-secret", "ClusterRole/seaweedfs-rw-cr", "ClusterRoleBinding/seaweedfs-rw-crb", "Deployment/seaweedfs-all-in-one"} {
					kind, name, _ := strings.Cut(gone, "/")
					if m.find(kind, name) != nil {
						return fmt.Errorf("%s rendered (have %v)", gone, m.names())
					}
				}
				for _, want := range []string{"ServiceAccount/seaweedfs", "ConfigMap/seaweedfs-master-config", "StatefulSet/seaweedfs-master"} {
					kind, name, _ := strings.Cut(want, "/")
					if m.find(kind, name) == nil {
						return fmt.Errorf("no %s (have %v)", want, m.names())
					}
				}
				return nil
			}},

		{name: "registry-before-repository", chart: "tempo", version: "3.2.0", release: "tempo", namespace: "observability",
			values: "tempo: {repository: ghcr.io/x/tempo, tag: '3.1.0'}", check: func(m *manifest) error {
				pt, err := m.podTemplate("StatefulSet", "tempo")
				if err != nil {
					return err
				}
				if img := pt.Spec.Containers[0].Image; img != "docker.io/ghcr.io/x/tempo:3.1.0" {
					return fmt.Errorf("image %s", img)
				}
				return nil
			}},
		{name: "registry", chart: "tempo", version: "3.2.0", release: "tempo", namespace: "observability",
			values: "tempo: {registry: ghcr.io, repository: x/tempo, tag: '3.1.0'}", check: func(m *manifest) error {
				pt, err := m.podTemplate("StatefulSet", "tempo")
				if err != nil {
					return err
				}
				if img := pt.Spec.Containers[0].Image; img != "ghcr.io/x/tempo:3.1.0" {
					return fmt.Errorf("image %s", img)
				}
				return nil
			}},

		{name: "no-repository", chart: "opentelemetry-collector", version: "0.176.0", release: "otel-collector", namespace: "observability",
			values: "mode: deployment", wantErr: "'image.repository' must be set"},
		{name: "no-mode", chart: "opentelemetry-collector", version: "0.176.0", release: "otel-collector", namespace: "observability",
			values: "image: {repository: x/otel}", wantErr: "'mode' must be set"},
		{name: "no-health-check", chart: "opentelemetry-collector", version: "0.176.0", release: "otel-collector", namespace: "observability",
			values: "mode: deployment\nimage: {repository: x/otel}\nconfig: {service: {extensions: []}}", wantErr: "health_check extension"},
		{name: "unknown-key", chart: "opentelemetry-collector", version: "0.176.0", release: "otel-collector", namespace: "observability",
			values: "mode: deployment\nimage: {repository: x/otel, registry2: y}", wantErr: "values don't meet the specifications of the schema"},
		{name: "daemonset", chart: "opentelemetry-collector", version: "0.176.0", release: "otel-collector", namespace: "observability",
			values: "mode: daemonset\nimage: {repository: x/otel}", check: func(m *manifest) error {
				pt, err := m.podTemplate("DaemonSet", "otel-collector-opentelemetry-collector-agent")
				if err != nil {
					return err
				}
				return hasLabels("agent pods", pt.Labels, map[string]string{"component": "agent-collector"})
			}},
	}, sandboxStandInCases()...)
}
