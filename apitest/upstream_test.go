package apitest

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/config"
	"runr.dev/console/kube"
	"runr.dev/console/ops/knative"
	"runr.dev/console/ops/registry"
	"runr.dev/console/store"
	"runr.dev/console/testcluster"
)

// A cluster without a load-balancer implementation: the Serving install says so within
// its short wait (not after the install timeout), and host-network Traefik then takes
// the region's address from a node.
func TestNoLoadBalancerThenHostNetwork(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{NoLoadBalancer: true})
	e := console(t, func(cfg *config.Config) { cfg.LoadBalancerWait = 5 * time.Second })
	_, tok := e.User("owner")
	ctx := context.Background()
	r := newRegion(t, e, tok, c, "bare", nil)
	mustSucceed(t, action(t, e, tok, r.ID, "install-operator", map[string]any{"version": "1.20"}))

	started := time.Now()
	j := action(t, e, tok, r.ID, "install-serving", map[string]any{"version": "1.20"})
	if j.Status != store.JobFailed || !strings.Contains(j.Error, "no load-balancer implementation") || !strings.Contains(j.Error, "host_network") {
		t.Fatalf("install on a cluster without load balancer: %s: %s", j.Status, j.Error)
	}
	if took := time.Since(started); took > 60*time.Second {
		t.Fatalf("the install took %s to notice: the wait must be short", took)
	}
	r, _ = e.Store.RegionByID(ctx, r.ID)
	if r.ServingStatus != store.ComponentError || !strings.Contains(r.KnativeMessage, "host-network Traefik") {
		t.Fatalf("region: %s %q", r.ServingStatus, r.KnativeMessage)
	}
	if st := e.JSON("POST", "/api/knative-regions/"+r.ID+"/install-serving", tok, map[string]any{"ingress_mode": "sideways"}, nil); st != 422 {
		t.Fatalf("an unknown ingress_mode: %d", st)
	}

	mustSucceed(t, action(t, e, tok, r.ID, "install-serving", map[string]any{"version": "1.20", "ingress_mode": "host_network"}))
	ds, err := c.Client.AppsV1().DaemonSets("knative-serving").Get(ctx, "traefik", metav1.GetOptions{})
	if err != nil || !ds.Spec.Template.Spec.HostNetwork {
		t.Fatalf("host-network Traefik DaemonSet: %v", err)
	}
	svc, err := c.Client.CoreV1().Services("knative-serving").Get(ctx, "traefik", metav1.GetOptions{})
	if err != nil || svc.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Fatalf("Traefik's Service: %v %v", err, svc.Spec.Type)
	}
	// The address is that of a node Traefik runs on.
	pods, _ := c.Client.CoreV1().Pods("knative-serving").List(ctx, metav1.ListOptions{LabelSelector: knative.TraefikPodSelector("knative-serving")})
	nodeAddrs := map[string]bool{}
	for _, p := range pods.Items {
		if n, err := c.Client.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{}); err == nil {
			nodeAddrs[kube.NodeAddress(n)] = true
		}
	}
	r, _ = e.Store.RegionByID(ctx, r.ID)
	if r.ServingStatus != store.ComponentReady || !nodeAddrs[r.ExternalIP] {
		t.Fatalf("after host-network Serving: %s, address %q (Traefik's nodes: %v)", r.ServingStatus, r.ExternalIP, nodeAddrs)
	}
	if err := e.Kube.Status.CheckNow(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	r, _ = e.Store.RegionByID(ctx, r.ID)
	if r.Health.V.External.State == store.HealthDown || r.ExternalIP == "" {
		t.Fatalf("the status check lost the node address: %+v (address %q)", r.Health.V.External, r.ExternalIP)
	}
}

// An operator whose Helm release is broken is repaired in place: its CRDs belong to the
// release, and an uninstall would delete every KnativeServing with them.
func TestOperatorReinstallKeepsServing(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	e := console(t, nil)
	_, tok := e.User("owner")
	ctx := context.Background()
	r := newRegion(t, e, tok, c, "keep", nil)
	mustSucceed(t, action(t, e, tok, r.ID, "install-operator", map[string]any{"version": "1.20"}))
	mustSucceed(t, action(t, e, tok, r.ID, "install-serving", map[string]any{"version": "1.20"}))
	ks, err := c.DynamicGet(ctx, ksGVR, "knative-serving", "knative-serving")
	if err != nil {
		t.Fatal(err)
	}
	// The operator stops working: its Deployment is gone, the release remains.
	if err := c.Client.AppsV1().Deployments("knative-operator").Delete(ctx, "knative-operator", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	j := action(t, e, tok, r.ID, "install-operator", map[string]any{"version": "1.20"})
	mustSucceed(t, j)
	if _, err := c.Client.AppsV1().Deployments("knative-operator").Get(ctx, "knative-operator", metav1.GetOptions{}); err != nil {
		t.Fatalf("the operator was not repaired: %v\n%s", err, wkLog(t, e, j.ID))
	}
	after, err := c.DynamicGet(ctx, ksGVR, "knative-serving", "knative-serving")
	if err != nil || after.GetUID() != ks.GetUID() {
		t.Fatalf("the KnativeServing did not survive the operator's re-install: %v", err)
	}
	if log := wkLog(t, e, j.ID); !strings.Contains(log, "upgraded in place, not uninstalled") {
		t.Fatalf("the job must say what it did with the previous release:\n%s", log)
	}
}

// The rolling restart of containerd runs one pinned Job per node, in order, and waits
// for each node to be Ready again.
func TestContainerdRollingRestart(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	e := console(t, nil)
	_, tok := e.User("owner")
	ctx := context.Background()
	var ans setupAnswer
	if st := e.JSON("POST", "/api/registry-setup/start", tok, setupBody("eu-3", c.Kubeconfig(), nil), &ans); st != 202 {
		t.Fatalf("start: %d", st)
	}
	mustSucceed(t, e.WaitJob(ans.JobID, 3*time.Minute))
	r, _ := e.Store.RegionByName(ctx, "eu-3")
	ds, err := c.Client.AppsV1().DaemonSets(registry.Namespace).Get(ctx, registry.MirrorDaemonSet, metav1.GetOptions{})
	if err != nil || strings.Join(ds.Spec.Template.Spec.Containers[0].Args, " ") != "registry mirror --root /host" {
		t.Fatalf("the node mirror must run a command the binary has: %v %v", err, ds.Spec.Template.Spec.Containers)
	}

	j := action(t, e, tok, r.ID, "registry/rolling-restart", nil)
	mustSucceed(t, j)
	steps, _ := e.Store.JobSteps(ctx, j.ID)
	var titles []string
	for _, s := range steps {
		titles = append(titles, s.Title)
	}
	if strings.Join(titles, "|") != "Restart containerd on cp-1|Restart containerd on worker-1|Restart containerd on worker-2" {
		t.Fatalf("steps: %v", titles)
	}
	log := wkLog(t, e, j.ID)
	for _, n := range []string{"cp-1", "worker-1", "worker-2"} {
		if !strings.Contains(log, "containerd on "+n+" reads the node mirror's hosts.toml") {
			t.Errorf("no wait for %s:\n%s", n, log)
		}
	}
	// Each Job ran on its node and is gone.
	jobs, _ := c.Client.BatchV1().Jobs(registry.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "runr.dev/node"})
	if len(jobs.Items) != 0 {
		t.Fatalf("restart Jobs left: %d", len(jobs.Items))
	}
	// Without an internal registry there is nothing to restart for.
	other := newRegion(t, e, tok, c, "eu-4", nil)
	if st := e.JSON("POST", "/api/knative-regions/"+other.ID+"/registry/rolling-restart", tok, nil, nil); st != 422 {
		t.Fatalf("rolling restart without a registry: %d", st)
	}
}

// Removing the registry waits until its namespace is gone, so that setting it up again
// right away works.
func TestRegistryRemovedThenSetUpAgain(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	e := console(t, nil)
	_, tok := e.User("owner")
	ctx := context.Background()
	var ans setupAnswer
	if st := e.JSON("POST", "/api/registry-setup/start", tok, setupBody("eu-5", c.Kubeconfig(), nil), &ans); st != 202 {
		t.Fatalf("start: %d", st)
	}
	mustSucceed(t, e.WaitJob(ans.JobID, 3*time.Minute))
	r, _ := e.Store.RegionByName(ctx, "eu-5")

	var del struct {
		JobID string `json:"job_id"`
	}
	if st := e.JSON("DELETE", "/api/knative-regions/"+r.ID+"/registry", tok, nil, &del); st != 202 {
		t.Fatalf("remove the registry: %d", st)
	}
	rm := e.WaitJob(del.JobID, 3*time.Minute)
	mustSucceed(t, rm)
	if _, err := c.Client.CoreV1().Namespaces().Get(ctx, registry.Namespace, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the removal ended before namespace %s was gone: %v", registry.Namespace, err)
	}
	if log := wkLog(t, e, rm.ID); !strings.Contains(log, "namespace runr-registry to be deleted") {
		t.Fatalf("the removal's wait must be named:\n%s", log)
	}
	body := map[string]any{"registry_mode": "internal", "storage_type": "pvc", "pvc_config": map[string]any{"storageClass": "standard", "size": "1Gi"}}
	mustSucceed(t, action(t, e, tok, r.ID, "registry", body))
	if _, err := c.Client.AppsV1().StatefulSets(registry.Namespace).Get(ctx, registry.ZotRelease, metav1.GetOptions{}); err != nil {
		t.Fatalf("Zot after the second setup: %v", err)
	}
}

// A registry on S3: the bucket is checked from a pod first (list, write, delete with
// SigV4), then Zot runs with the S3 storage of its own config file and the keys from its
// environment (the zot chart has no s3 values).
func TestSetupZotOnS3(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	e := console(t, nil)
	_, tok := e.User("owner")
	ctx := context.Background()
	body := setupBody("eu-s3", c.Kubeconfig(), map[string]any{"storage_type": "s3", "pvc_config": nil,
		"s3_config": map[string]any{"endpoint": "https://s3.eu-1.example.test", "bucket": "runr-images", "region": "eu-1",
			"access_key": "AKIATEST", "secret_key": "S3-SECRET-KEY-VALUE"}})
	var ans setupAnswer
	if st := e.JSON("POST", "/api/registry-setup/start", tok, body, &ans); st != 202 {
		t.Fatalf("start: %d", st)
	}
	j := e.WaitJob(ans.JobID, 3*time.Minute)
	mustSucceed(t, j)
	if log := wkLog(t, e, j.ID); !strings.Contains(log, "Job runr-registry/registry-test to reach the bucket https://s3.eu-1.example.test/runr-images") ||
		!strings.Contains(log, "listed, wrote and deleted in the bucket") {
		t.Fatalf("the bucket must be checked from a pod:\n%s", log)
	}
	d, err := c.Client.AppsV1().Deployments(registry.Namespace).Get(ctx, registry.ZotRelease, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Zot on S3 runs as the chart's Deployment: %v", err)
	}
	env := map[string]string{}
	for _, v := range d.Spec.Template.Spec.Containers[0].Env {
		if v.ValueFrom != nil && v.ValueFrom.SecretKeyRef != nil {
			env[v.Name] = v.ValueFrom.SecretKeyRef.Name + "/" + v.ValueFrom.SecretKeyRef.Key
		}
	}
	if env["AWS_ACCESS_KEY_ID"] != registry.ZotS3Secret+"/accessKey" || env["AWS_SECRET_ACCESS_KEY"] != registry.ZotS3Secret+"/secretKey" {
		t.Fatalf("Zot's S3 keys: %v", env)
	}
	cm, err := c.Client.CoreV1().ConfigMaps(registry.Namespace).Get(ctx, registry.ZotRelease+"-config", metav1.GetOptions{})
	if err != nil || !strings.Contains(cm.Data["config.json"], `"name": "s3"`) || !strings.Contains(cm.Data["config.json"], `"bucket": "runr-images"`) ||
		strings.Contains(cm.Data["config.json"], "S3-SECRET-KEY-VALUE") {
		t.Fatalf("Zot's config file: %v %s", err, cm.Data["config.json"])
	}
	if sec, err := c.Client.CoreV1().Secrets(registry.Namespace).Get(ctx, registry.ZotS3Secret, metav1.GetOptions{}); err != nil || string(sec.Data["secretKey"]) != "S3-SECRET-KEY-VALUE" {
		t.Fatalf("the S3 keys Secret: %v", err)
	}
}
