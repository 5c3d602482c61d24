package apitest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"runr.dev/console/ops/observability"
	"runr.dev/console/ops/reconcile"
	"runr.dev/console/testcluster"
)

// observedVolumes is what a cluster shows of where RunR's Prometheus, Loki and Tempo keep
// their data: each StatefulSet's claims as "size/class" ("emptyDir" without), Prometheus's
// retention and Loki's.
type observedVolumes struct {
	prometheus, loki, tempo            string
	prometheusRetention, lokiRetention string
	retentionSize                      string
	// claims are the claims the three StatefulSets' pods use, as "size/class" ("none").
	claims string
}

func observeVolumes(t *testing.T, c *testcluster.Cluster) observedVolumes {
	t.Helper()
	ctx := context.Background()
	claims := func(sts string) string {
		s, err := c.Client.AppsV1().StatefulSets(observability.ObservabilityNamespace).Get(ctx, sts, metav1.GetOptions{})
		if err != nil {
			return "missing: " + err.Error()
		}
		if len(s.Spec.VolumeClaimTemplates) == 0 {
			return "emptyDir"
		}
		v := s.Spec.VolumeClaimTemplates[0]
		class := "default"
		if v.Spec.StorageClassName != nil && *v.Spec.StorageClassName != "" {
			class = *v.Spec.StorageClassName
		}
		size := v.Spec.Resources.Requests[corev1.ResourceStorage]
		return size.String() + "/" + class
	}
	var o observedVolumes
	o.prometheus, o.loki, o.tempo = claims(ownMonitoring[0]), claims(observability.LokiRelease), claims(observability.TempoRelease)
	dyn := dynamic.NewForConfigOrDie(c.REST)
	p, err := dyn.Resource(schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "prometheuses"}).
		Namespace(observability.ObservabilityNamespace).Get(ctx, "knative-kube-prometheus-st-prometheus", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Prometheus resource: %v", err)
	}
	spec, _ := p.Object["spec"].(map[string]any)
	o.prometheusRetention, o.retentionSize = fmt.Sprint(spec["retention"]), fmt.Sprint(spec["retentionSize"])
	sec, err := c.Client.CoreV1().Secrets(observability.ObservabilityNamespace).Get(ctx, observability.LokiRelease, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Loki's configuration: %v", err)
	}
	var cfg struct {
		Compactor    map[string]any `json:"compactor"`
		LimitsConfig map[string]any `json:"limits_config"`
	}
	if err := yaml.Unmarshal(sec.Data["loki.yaml"], &cfg); err != nil {
		t.Fatal(err)
	}
	o.lokiRetention = fmt.Sprintf("%v/%v", cfg.LimitsConfig["retention_period"], cfg.Compactor["retention_enabled"])
	var used []string
	for _, name := range []string{observability.PrometheusStatefulSet + "-db-" + observability.PrometheusStatefulSet + "-0", "storage-loki-stack-0", "storage-tempo-0"} {
		pvc, err := c.Client.CoreV1().PersistentVolumeClaims(observability.ObservabilityNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			used = append(used, "none")
			continue
		}
		size := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
		class := "?"
		if pvc.Spec.StorageClassName != nil {
			class = *pvc.Spec.StorageClassName
		}
		used = append(used, size.String()+"/"+class)
	}
	o.claims = strings.Join(used, " ")
	return o
}

// waitVolumes waits until the cluster shows want (the operator replaces Prometheus's
// StatefulSet a round after its resource changed).
func waitVolumes(t *testing.T, c *testcluster.Cluster, want observedVolumes) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		got := observeVolumes(t, c)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("volumes and retention:\n got %+v\nwant %+v", got, want)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestObservabilityKeepsItsData: RunR's Prometheus, Loki and Tempo keep their data on
// volumes of the cluster's default class with RunR's sizes and retentions; the region's
// Monitoring settings change class, sizes and retentions (Loki's and Tempo's StatefulSets
// are replaced, as Kubernetes changes no volume claim in place); a class the cluster lacks
// is refused and changes nothing; on a cluster without a default class the data lives in
// emptyDir volumes and the job says so.
func TestObservabilityKeepsItsData(t *testing.T) {
	c, e, tok, r := readyRegion(t, "vols")
	ctx := context.Background()
	waitVolumes(t, c, observedVolumes{prometheus: "20Gi/default", loki: "10Gi/default", tempo: "10Gi/default",
		prometheusRetention: "10d", retentionSize: "17408MB", lokiRetention: "168h/true", claims: "20Gi/standard 10Gi/standard 10Gi/standard"})
	claims, err := c.Client.CoreV1().PersistentVolumeClaims(observability.ObservabilityNamespace).Get(ctx, "storage-loki-stack-0", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Loki's claim: %v", err)
	}
	if claims.Status.Phase != corev1.ClaimBound {
		t.Fatalf("Loki's claim is %s, want Bound", claims.Status.Phase)
	}

	var ans struct {
		JobID  string            `json:"job_id"`
		Fields map[string]string `json:"fields"`
	}
	before, _ := e.Store.RegionByID(ctx, r.ID)
	for body, field := range map[string]string{`{"storage_class":"gold"}`: "storage_class", `{"loki_size_gi":-1}`: "loki_size_gi",
		`{"prometheus_retention_days":"long"}`: "prometheus_retention_days", `{"tempo_size_gi":20000}`: "tempo_size_gi"} {
		st, text := e.Raw("PUT", "/api/knative-regions/"+r.ID+"/monitoring", tok, body)
		if st != 422 || !strings.Contains(text, field) {
			t.Fatalf("%s: %d %s, want 422 naming %s", body, st, text, field)
		}
	}
	if after, _ := e.Store.RegionByID(ctx, r.ID); after.Monitoring.V != before.Monitoring.V {
		t.Fatalf("a refused change changed the monitoring: %+v", after.Monitoring.V)
	}

	if st := e.JSON("PUT", "/api/knative-regions/"+r.ID+"/monitoring", tok, map[string]any{"storage_class": "fast-ssd", "prometheus_size_gi": 5,
		"prometheus_retention_days": 30, "loki_size_gi": 3, "loki_retention_days": 14, "tempo_size_gi": 2}, &ans); st != 200 || ans.JobID == "" {
		t.Fatalf("change the volumes: %d, job %q", st, ans.JobID)
	}
	mustSucceed(t, e.WaitJob(ans.JobID, 4*time.Minute))
	waitVolumes(t, c, observedVolumes{prometheus: "5Gi/fast-ssd", loki: "3Gi/fast-ssd", tempo: "2Gi/fast-ssd",
		prometheusRetention: "30d", retentionSize: "4352MB", lokiRetention: "336h/true", claims: "5Gi/fast-ssd 3Gi/fast-ssd 2Gi/fast-ssd"})
	if log := jobLogOf(t, e, ans.JobID); !strings.Contains(log, "Deleted StatefulSet observability/loki-stack to change its volumes") {
		t.Fatalf("the job does not say it replaced Loki's StatefulSet:\n%s", log)
	}

	// No default class: back to the default class, of which the cluster has none.
	std, err := c.Client.StorageV1().StorageClasses().Get(ctx, "standard", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(std.Annotations, "storageclass.kubernetes.io/is-default-class")
	if _, err := c.Client.StorageV1().StorageClasses().Update(ctx, std, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if st := e.JSON("PUT", "/api/knative-regions/"+r.ID+"/monitoring", tok, map[string]any{"storage_class": "", "prometheus_size_gi": nil, "loki_size_gi": nil}, &ans); st != 200 || ans.JobID == "" {
		t.Fatalf("back to the default class: %d, job %q", st, ans.JobID)
	}
	mustSucceed(t, e.WaitJob(ans.JobID, 4*time.Minute))
	waitVolumes(t, c, observedVolumes{prometheus: "emptyDir", loki: "emptyDir", tempo: "emptyDir",
		prometheusRetention: "30d", retentionSize: "<nil>", lokiRetention: "336h/true", claims: "none none none"})
	if log := jobLogOf(t, e, ans.JobID); !strings.Contains(log, "the cluster has no default StorageClass: Prometheus, Loki and Tempo keep their data in emptyDir volumes") {
		t.Fatalf("the job does not warn of the emptyDir volumes:\n%s", log)
	}
}

// TestCAdvisorBesideRunRsPrometheus: with RunR's Prometheus the Serving install runs
// cAdvisor on every node (host PID namespace, host paths, privileged; ClusterRole and
// binding cadvisor-runr) with a PodMonitor that this Prometheus selects and that selects
// cAdvisor's pods by their port; reconcile puts back a cAdvisor that is gone.
func TestCAdvisorBesideRunRsPrometheus(t *testing.T) {
	c, e, tok, r := readyRegion(t, "cadv")
	ctx := context.Background()
	ns := observability.ObservabilityNamespace
	ds, err := c.Client.AppsV1().DaemonSets(ns).Get(ctx, observability.CAdvisorName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("cAdvisor's DaemonSet: %v", err)
	}
	pod := ds.Spec.Template.Spec
	paths := map[string]bool{}
	for _, v := range pod.Volumes {
		if v.HostPath != nil {
			paths[v.HostPath.Path] = true
		}
	}
	ctr := pod.Containers[0]
	if !pod.HostPID || ctr.SecurityContext == nil || ctr.SecurityContext.Privileged == nil || !*ctr.SecurityContext.Privileged ||
		!paths["/"] || !paths["/sys"] || !paths["/var/run"] || ctr.Image != observability.CAdvisorImage || pod.ServiceAccountName != observability.CAdvisorName {
		t.Fatalf("cAdvisor's pods: hostPID %v, security %+v, host paths %v, image %s, account %s", pod.HostPID, ctr.SecurityContext, paths, ctr.Image, pod.ServiceAccountName)
	}
	if ds.Status.DesiredNumberScheduled == 0 || ds.Status.NumberReady != ds.Status.DesiredNumberScheduled {
		t.Fatalf("cAdvisor runs on %d of %d nodes", ds.Status.NumberReady, ds.Status.DesiredNumberScheduled)
	}
	crb, err := c.Client.RbacV1().ClusterRoleBindings().Get(ctx, observability.CAdvisorRole, metav1.GetOptions{})
	if err != nil || crb.RoleRef.Name != observability.CAdvisorRole || len(crb.Subjects) != 1 || crb.Subjects[0].Name != observability.CAdvisorName || crb.Subjects[0].Namespace != ns {
		t.Fatalf("ClusterRoleBinding cadvisor-runr: %v %+v", err, crb)
	}
	if _, err := c.Client.RbacV1().ClusterRoles().Get(ctx, observability.CAdvisorRole, metav1.GetOptions{}); err != nil {
		t.Fatalf("ClusterRole cadvisor-runr: %v", err)
	}

	// The PodMonitor: selected by the region's Prometheus, selecting cAdvisor's pods and port.
	dyn := dynamic.NewForConfigOrDie(c.REST)
	pm, err := dyn.Resource(schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "podmonitors"}).Namespace(ns).Get(ctx, observability.CAdvisorName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("cAdvisor's PodMonitor: %v", err)
	}
	prom, err := dyn.Resource(schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "prometheuses"}).Namespace(ns).Get(ctx, "knative-kube-prometheus-st-prometheus", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want, _, _ := unstructured.NestedStringMap(prom.Object, "spec", "podMonitorSelector", "matchLabels")
	if len(want) == 0 || !labels.SelectorFromSet(want).Matches(labels.Set(pm.GetLabels())) {
		t.Fatalf("the Prometheus selects PodMonitors %v; cAdvisor's is labelled %v", want, pm.GetLabels())
	}
	sel, _, _ := unstructured.NestedStringMap(pm.Object, "spec", "selector", "matchLabels")
	eps, _, _ := unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints")
	if len(sel) == 0 || !labels.SelectorFromSet(sel).Matches(labels.Set(ds.Spec.Template.Labels)) || len(eps) != 1 ||
		eps[0].(map[string]any)["port"] != ctr.Ports[0].Name {
		t.Fatalf("the PodMonitor selects %v on %v; cAdvisor's pods are %v with port %s", sel, eps, ds.Spec.Template.Labels, ctr.Ports[0].Name)
	}

	// Gone: reconcile's dry run names it, and reconcile puts it back.
	if err := c.Client.AppsV1().DaemonSets(ns).Delete(ctx, observability.CAdvisorName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var plan struct{ Data []reconcile.Change }
	if st := e.JSON("GET", "/api/reconcile?step="+reconcile.StepObservability+"&region="+r.Name, tok, nil, &plan); st != 200 || len(plan.Data) != 1 ||
		plan.Data[0].Result != reconcile.ResultChange || !strings.Contains(plan.Data[0].What, "install cAdvisor") {
		t.Fatalf("reconcile's dry run without cAdvisor: %d %+v", st, plan.Data)
	}
	var ans struct {
		JobID string `json:"job_id"`
	}
	if st := e.JSON("POST", "/api/reconcile", tok, map[string]any{"step": reconcile.StepObservability}, &ans); st != 202 {
		t.Fatalf("reconcile: %d", st)
	}
	mustSucceed(t, e.WaitJob(ans.JobID, 4*time.Minute))
	if _, err := c.Client.AppsV1().DaemonSets(ns).Get(ctx, observability.CAdvisorName, metav1.GetOptions{}); err != nil {
		t.Fatalf("reconcile did not put cAdvisor back: %v", err)
	}
}
