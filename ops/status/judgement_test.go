package status

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"runr.dev/console/config"
	"runr.dev/console/kube"
	"runr.dev/console/ops/data"
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/knative"
	"runr.dev/console/ops/observability"
	"runr.dev/console/ops/registry"
	"runr.dev/console/store"
)

func readyDeployment(ns, name string) *appsv1.Deployment {
	one := int32(1)
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{}},
		Spec:   appsv1.DeploymentSpec{Replicas: &one},
		Status: appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1, ReadyReplicas: 1}}
}

func statefulSet(ns, name string, ready int32) *appsv1.StatefulSet {
	one := int32(1)
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: appsv1.StatefulSetSpec{Replicas: &one},
		Status: appsv1.StatefulSetStatus{ReadyReplicas: ready}}
}

func prometheusCR(available string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": "Available", "status": available, "reason": "NoPodReady"}}}}}
}

// A full look at a healthy cluster: every component judged from its release's workloads.
func healthyLook() *clusterLook {
	prom := kube.Workload{Kind: "Prometheus", Namespace: observability.ObservabilityNamespace, Name: "knative-kube-prometheus-st-prometheus"}
	st := &clusterLook{
		deployments: map[string]*appsv1.Deployment{}, statefuls: map[string]*appsv1.StatefulSet{}, daemons: map[string]*appsv1.DaemonSet{},
		releases: map[string][]kube.Workload{
			key("knative-operator", knative.OperatorRelease): {{Kind: "Deployment", Namespace: "knative-operator", Name: "knative-operator"}},
			key("knative-serving", kit.TraefikRelease):       {{Kind: "Deployment", Namespace: "knative-serving", Name: "traefik"}},
			key(registry.Namespace, registry.ZotRelease):     {{Kind: "StatefulSet", Namespace: registry.Namespace, Name: "runr-zot"}},
			key(observability.ObservabilityNamespace, observability.PrometheusRelease): {
				{Kind: "Deployment", Namespace: observability.ObservabilityNamespace, Name: "knative-kube-prometheus-st-operator"}, prom},
		},
		resources: map[string]*unstructured.Unstructured{prom.String(): prometheusCR("True")},
		servingOK: true,
	}
	for _, d := range []*appsv1.Deployment{readyDeployment("knative-operator", "knative-operator"), readyDeployment("knative-serving", "traefik"),
		readyDeployment(observability.ObservabilityNamespace, "knative-kube-prometheus-st-operator")} {
		st.deployments[key(d.Namespace, d.Name)] = d
	}
	st.statefuls[key(registry.Namespace, "runr-zot")] = statefulSet(registry.Namespace, "runr-zot", 1)
	one := int32(1)
	st.daemons[key(registry.Namespace, registry.MirrorDaemonSet)] = &appsv1.DaemonSet{Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: one, NumberReady: one, UpdatedNumberScheduled: one}}
	return st
}

func judgedRegion() *store.Region {
	r := &store.Region{Name: "eu-2", OperatorNamespace: "knative-operator", ServingNamespace: "knative-serving",
		ServingStatus: store.ComponentReady, RegistryMode: store.RegistryInternal, RegistryStatus: store.ComponentReady}
	r.Components.V = map[string]store.ComponentState{"prometheus": {Status: store.ComponentReady, UpdatedAt: time.Now()}}
	return r
}

func TestStatusJudgement(t *testing.T) {
	s := &Service{Kit: &kit.Kit{Cfg: &config.Config{}}}
	verdicts := func(st *clusterLook) map[string]componentCheck {
		out := map[string]componentCheck{}
		for _, c := range s.components(judgedRegion(), st) {
			out[c.name] = c
		}
		return out
	}
	if got := verdicts(healthyLook()); len(got) != 4 || !got["serving"].ok || !got["traefik"].ok || !got["registry"].ok || !got["prometheus"].ok {
		t.Fatalf("a healthy cluster: %+v", got)
	}
	for _, tc := range []struct {
		name      string
		break_    func(st *clusterLook)
		component string
		reason    string
	}{
		{"a workload of the release is missing", func(st *clusterLook) { delete(st.statefuls, key(registry.Namespace, "runr-zot")) },
			"registry", "StatefulSet runr-registry/runr-zot is missing"},
		{"a StatefulSet not ready", func(st *clusterLook) { st.statefuls[key(registry.Namespace, "runr-zot")].Status.ReadyReplicas = 0 },
			"registry", "0/1 replicas ready"},
		{"the release is not deployed", func(st *clusterLook) { delete(st.releases, key("knative-serving", kit.TraefikRelease)) },
			"traefik", "Helm release knative-serving/traefik is not deployed"},
		{"the operator's resource is not available", func(st *clusterLook) {
			st.resources[kube.Workload{Kind: "Prometheus", Namespace: observability.ObservabilityNamespace, Name: "knative-kube-prometheus-st-prometheus"}.String()] = prometheusCR("False")
		}, "prometheus", "not available: NoPodReady"},
		{"Traefik may not read Knative's ingresses", func(st *clusterLook) { st.traefikRBAC = "Traefik's service account may not list ingresses" },
			"serving", "may not list ingresses"},
		{"the KnativeServing is not Ready", func(st *clusterLook) { st.servingOK, st.servingMsg = false, "activator not ready" },
			"serving", "KnativeServing is not Ready: activator not ready"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := healthyLook()
			tc.break_(st)
			got := verdicts(st)[tc.component]
			if got.ok || !strings.Contains(got.detail, tc.reason) {
				t.Fatalf("%s: ok=%v %q, want a failure naming %q", tc.component, got.ok, got.detail, tc.reason)
			}
		})
	}
}

// TestStatusFailedComponentIsNotOk: a component whose last job failed (Loki's install,
// refused by the cluster) is judged not ok with its error, so that the region's
// components do not read ok without it; one never installed adds nothing.
func TestStatusFailedComponentIsNotOk(t *testing.T) {
	s := &Service{Kit: &kit.Kit{Cfg: &config.Config{}}}
	r := judgedRegion()
	const why = `helm install observability/loki-stack (loki-stack 2.10.2): no matches for kind "PodDisruptionBudget" in version "policy/v1beta1"`
	r.Components.V["loki"] = store.ComponentState{Status: store.ComponentError, Message: why}
	r.DataServices.V.Object = store.DataService{Status: store.ComponentError, Message: "helm install runr-data/seaweedfs: timed out"}
	u := s.checkRegion(context.Background(), r, healthyLook(), "")
	h := u.Health.Components
	if h.State != store.HealthDegraded || !strings.Contains(h.Reason, "loki: its last job failed: "+why) || !strings.Contains(h.Reason, "object store: its last job failed: helm install runr-data/seaweedfs") {
		t.Fatalf("components with Loki's install failed: %s: %s", h.State, h.Reason)
	}
	if _, ok := h.Items["tracing"]; ok {
		t.Fatalf("tracing was never installed and has no verdict: %v", h.Items)
	}
	// Retried and installed: judged from its release's workloads again.
	r.Components.V["loki"] = store.ComponentState{Status: store.ComponentReady}
	r.DataServices.V.Object = store.DataService{}
	st := healthyLook()
	st.releases[key(observability.ObservabilityNamespace, observability.LokiRelease)] = []kube.Workload{{Kind: "StatefulSet", Namespace: observability.ObservabilityNamespace, Name: observability.LokiRelease}}
	st.statefuls[key(observability.ObservabilityNamespace, observability.LokiRelease)] = statefulSet(observability.ObservabilityNamespace, observability.LokiRelease, 1)
	if h := s.checkRegion(context.Background(), r, st, "").Health.Components; h.State != store.HealthOK || !strings.Contains(h.Reason, "loki") {
		t.Fatalf("Loki installed on a retry: %s: %s", h.State, h.Reason)
	}
}

// TestStatusJudgesDataServices: the object store and CloudNativePG are judged from their
// releases' workloads once installed; KV (on the region's Redis) adds nothing.
func TestStatusJudgesDataServices(t *testing.T) {
	s := &Service{Kit: &kit.Kit{Cfg: &config.Config{}}}
	r := judgedRegion()
	r.DataServices.V = store.DataServices{KV: store.DataService{Status: store.ComponentReady},
		Object: store.DataService{Status: store.ComponentReady}, Postgres: store.DataService{Status: store.ComponentReady}}
	st := healthyLook()
	st.releases[key(data.DataNamespace, data.SeaweedFSRelease)] = []kube.Workload{{Kind: "Deployment", Namespace: data.DataNamespace, Name: data.SeaweedAllInOne}}
	st.releases[key(data.CNPGNamespace, data.CNPGRelease)] = []kube.Workload{{Kind: "Deployment", Namespace: data.CNPGNamespace, Name: "cnpg-cloudnative-pg"}}
	st.deployments[key(data.DataNamespace, data.SeaweedAllInOne)] = readyDeployment(data.DataNamespace, data.SeaweedAllInOne)
	verdicts := func() map[string]componentCheck {
		out := map[string]componentCheck{}
		for _, c := range s.components(r, st) {
			out[c.name] = c
		}
		return out
	}
	got := verdicts()
	if !got["object store"].ok || got["postgres"].ok || !strings.Contains(got["postgres"].detail, "cnpg-system/cnpg-cloudnative-pg") {
		t.Fatalf("object store ready, CloudNativePG's Deployment missing: %+v", got)
	}
	if _, ok := got["kv"]; ok {
		t.Fatal("KV runs on the region's Redis and has no check of its own")
	}
	st.deployments[key(data.CNPGNamespace, "cnpg-cloudnative-pg")] = readyDeployment(data.CNPGNamespace, "cnpg-cloudnative-pg")
	if got := verdicts(); !got["postgres"].ok {
		t.Fatalf("CloudNativePG ready: %+v", got["postgres"])
	}
	r.DataServices.V = store.DataServices{}
	if got := verdicts(); len(got) != 4 {
		t.Fatalf("without data services nothing more is judged: %+v", got)
	}
}

// TestRegionsByClusterParts: a cluster of many regions is looked at once per sweepLook
// regions, each part under a breaker key of its own; another cluster keeps its look.
func TestRegionsByClusterParts(t *testing.T) {
	var rs []store.Region
	smalls := 0
	for i := range 2*sweepLook + 10 {
		rs = append(rs, store.Region{ID: fmt.Sprint("big-", i), ClusterKey: "https://big", Kubeconfig: "kc-big"})
		if i%50 == 0 {
			rs = append(rs, store.Region{ID: fmt.Sprint("small-", i), ClusterKey: "https://small", Kubeconfig: "kc-small"})
			smalls++
		}
	}
	looks := regionsByCluster(rs)
	sizes := map[string]int{}
	for _, l := range looks {
		if _, dup := sizes[l.key]; dup {
			t.Fatalf("two looks share the breaker key %s", l.key)
		}
		sizes[l.key] = len(l.regions)
	}
	big := "https://big|" + kit.ShortHash("kc-big")
	small := "https://small|" + kit.ShortHash("kc-small")
	if len(looks) != 4 || sizes[big] != sweepLook || sizes[big+"#2"] != sweepLook || sizes[big+"#3"] != 10 || sizes[small] != smalls {
		t.Fatalf("looks: %v", sizes)
	}
}
