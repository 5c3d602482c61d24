package realnode

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"runr.dev/console/agent"
	"runr.dev/console/config"
	"runr.dev/console/imagemirror"
	"runr.dev/console/images"
	"runr.dev/console/ops/domains"
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/nodes"
	"runr.dev/console/ops/observability"
	"runr.dev/console/ops/reconcile"
	"runr.dev/console/ops/registry"
	"runr.dev/console/ops/statusblock"
	"runr.dev/console/store"
	"runr.dev/console/testcluster"
	"runr.dev/console/web/webtest"
)

// onRealNode makes a pod spec of the test's own run on the real node.
func onRealNode(spec corev1.PodSpec) corev1.PodSpec {
	spec.NodeSelector = map[string]string{"kubernetes.io/hostname": testcluster.RealNodeName}
	spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	return spec
}

// runEcho runs the harness's echo program of an image on the real node (a Deployment of one
// pod, labelled app=name) and returns its running pod.
func runEcho(t *testing.T, c *testcluster.Cluster, ns, name, image string, extraLabels map[string]string) *corev1.Pod {
	t.Helper()
	labels := map[string]string{"app": name}
	for k, v := range extraLabels {
		labels[k] = v
	}
	one := int32(1)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: onRealNode(corev1.PodSpec{
				Containers: []corev1.Container{{Name: "echo", Image: image, Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 8080}}}}})}}}
	if _, err := c.Client.AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return c.WaitRealPod(t, ns, "app="+name, 2*time.Minute)
}

// agentState is the region's runr-agent component as the console recorded it.
func agentState(e *webtest.Env, id string) store.ComponentState {
	r, err := e.Store.RegionByID(context.Background(), id)
	if err != nil {
		return store.ComponentState{}
	}
	return r.Component("agent")
}

// TestConsoleProgramsOnARealNode sets a region up on a cluster with a real node and runs
// each of the console's in-cluster programs there for real, from the console's images:
// the node mirror and the pre-pull (while the region's registry is set up), the runr-agent,
// containerd's rolling restart, the status responder, the domain alias proxy, and
// reconcile's move of the helpers to another version.
func TestConsoleProgramsOnARealNode(t *testing.T) {
	c := realCluster(t, testcluster.Options{})
	ctx := context.Background()
	// The pre-pull's images; the node mirror sends ghcr.io and Docker Hub to the region's
	// Zot, which runs no container here until ServeRegistryAs below: an image of another
	// registry, which the node has not pulled yet.
	prepulled := "quay.io/runr-testing/prepull:1"
	if err := c.PushEcho(ctx, prepulled); err != nil {
		t.Fatal(err)
	}
	// The region's Traefik: a real Traefik built from its Go module (testcluster.BuildTraefik)
	// when this machine has it (make test-real builds it).
	realTraefik := testcluster.TraefikBuilt()
	if realTraefik {
		if err := c.PushTraefik(ctx, os.Stderr); err != nil {
			t.Fatal(err)
		}
	}
	e := consoleOn(t, c, func(cfg *config.Config) {
		cfg.PrepullImages = []string{prepulled}
		if realTraefik {
			cfg.TraefikImage = testcluster.TraefikImage
		}
	})
	_, tok := e.User("owner")
	if err := e.Store.SetSetting(ctx, "base_domain", "example.test"); err != nil {
		t.Fatal(err)
	}
	var setup struct {
		JobID  string `json:"job_id"`
		Fields map[string]string
	}
	body := map[string]any{"name": "rn", "kubeconfig": string(c.Kubeconfig()), "nodes": []string{},
		"registry_mode": "internal", "storage_type": "pvc", "pvc_config": map[string]any{"storageClass": "standard", "size": "5Gi"}}
	if st := e.JSON("POST", "/api/registry-setup/start", tok, body, &setup); st != 202 {
		t.Fatalf("registry setup: %d %+v", st, setup)
	}
	setupJob := e.WaitJob(setup.JobID, 5*time.Minute)
	if setupJob.Status != store.JobSucceeded {
		t.Fatalf("registry setup: %s %s\n%s\n%s", setupJob.Status, setupJob.Error, jobLog(t, e, setupJob.ID),
			c.PodReport(registry.Namespace, ""))
	}
	r, err := e.Store.RegionByName(ctx, "rn")
	if err != nil {
		t.Fatal(err)
	}
	zot, err := c.Client.CoreV1().Services(registry.Namespace).Get(ctx, registry.ZotRelease, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	zotAddr := zot.Spec.ClusterIP + ":5000"

	t.Run("NodeMirror", func(t *testing.T) {
		// The DaemonSet's pod on the real node resolved the registry's Service through the
		// cluster's DNS and wrote containerd's hosts.toml into its config_path.
		c.WaitRealPod(t, registry.Namespace, "app.kubernetes.io/name="+registry.MirrorDaemonSet, time.Minute)
		regFile := filepath.Join(c.CertsDir(), registry.ZotRelease+"."+registry.Namespace+".svc.cluster.local:5000", "hosts.toml")
		raw, err := os.ReadFile(regFile)
		if err != nil || !strings.Contains(string(raw), "Written by RunR's node mirror") || !strings.Contains(string(raw), `[host."http://`+zotAddr+`"]`) {
			t.Fatalf("%s: %v\n%s", regFile, err, raw)
		}
		raw, _ = os.ReadFile(filepath.Join(c.CertsDir(), "ghcr.io", "hosts.toml"))
		if !strings.Contains(string(raw), `[host."http://`+zotAddr+`/v2/ghcr.io"]`) || !strings.Contains(string(raw), "override_path = true") {
			t.Fatalf("ghcr.io's hosts.toml does not send pulls to the region's Zot at %s:\n%s", zotAddr, raw)
		}
		logs := podLog(t, c, registry.Namespace, "app.kubernetes.io/name="+registry.MirrorDaemonSet)
		if !strings.Contains(logs, "hosts.toml written") || !strings.Contains(logs, "address="+zot.Spec.ClusterIP) {
			t.Fatalf("the node mirror's log:\n%s", logs)
		}
		// containerd's config already names the certs.d directory: nothing to restart for.
		cfg, _ := os.ReadFile(filepath.Join(filepath.Dir(c.CertsDir()), "config.toml"))
		if !strings.Contains(string(cfg), `config_path = "/etc/containerd/certs.d"`) {
			t.Fatalf("config.toml:\n%s", cfg)
		}

		// A pod of a ghcr.io image the node never pulled is pulled through the region's
		// registry: the registry behind Zot's Service saw the pull addressed to Zot.
		if err := c.ServeRegistryAs(ctx, registry.Namespace, registry.ZotRelease); err != nil {
			t.Fatal(err)
		}
		through := "ghcr.io/brf-tech/runr-testing/echo:through-the-mirror"
		if err := c.PushEcho(ctx, through); err != nil {
			t.Fatal(err)
		}
		runEcho(t, c, "default", "through-mirror", through, nil)
		var viaZot bool
		for _, q := range c.Registry.ManifestPulls(through) {
			viaZot = viaZot || q.Host == zotAddr
		}
		if !viaZot {
			t.Fatalf("the node did not pull %s through the region's registry %s: %+v", through, zotAddr, c.Registry.ManifestPulls(through))
		}
	})

	t.Run("Prepull", func(t *testing.T) {
		// The short-lived DaemonSet's pods completed their pulls on the real node (the
		// setup waited for it on every node), then it was deleted.
		if !strings.Contains(jobLog(t, e, setupJob.ID), "Pre-pulled 1 images on every node: "+prepulled) {
			t.Fatalf("setup log:\n%s", jobLog(t, e, setupJob.ID))
		}
		var fromNode bool
		for _, q := range c.Registry.ManifestPulls(prepulled) {
			fromNode = fromNode || q.Host == testcluster.NodeIP+":"+testcluster.RegistryPort
		}
		if !fromNode {
			t.Fatalf("the real node never pulled %s: %+v", prepulled, c.Registry.Requests())
		}
		evs, _ := c.Client.CoreV1().Events(registry.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "reason=Started"})
		var ran []string
		for _, ev := range evs.Items {
			if strings.HasPrefix(ev.InvolvedObject.Name, registry.PrepullDaemonSet) && ev.Source.Host == testcluster.RealNodeName {
				ran = append(ran, ev.InvolvedObject.FieldPath)
			}
		}
		if strings.Join(ran, " ") != "spec.initContainers{runr} spec.initContainers{pull-0} spec.containers{pause}" {
			t.Fatalf("the pre-pull's containers that started on the real node: %v", ran)
		}
		if _, err := c.Client.AppsV1().DaemonSets(registry.Namespace).Get(ctx, registry.PrepullDaemonSet, metav1.GetOptions{}); err == nil {
			t.Fatal("the pre-pull DaemonSet must be gone")
		}
	})

	// Knative Serving and the rest of the region on the simulated nodes; the agent with it.
	mustSucceed(t, e, action(t, e, tok, r.ID, "install-knative", nil))
	// From here on the console's Deployments run on the real node.
	if err := c.PreferRealNode(ctx); err != nil {
		t.Fatal(err)
	}

	t.Run("Agent", func(t *testing.T) {
		sel := "app.kubernetes.io/name=" + observability.AgentName
		if err := c.Client.CoreV1().Pods(observability.ObservabilityNamespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: sel}); err != nil {
			t.Fatal(err)
		}
		pod := c.WaitRealPod(t, observability.ObservabilityNamespace, sel, 2*time.Minute)
		if pod.Spec.NodeName != testcluster.RealNodeName || pod.Spec.Containers[0].Image != imagemirror.Map(testcluster.ImageMirror, e.Cfg.AgentImage) {
			t.Fatalf("agent pod on %s with %s", pod.Spec.NodeName, pod.Spec.Containers[0].Image)
		}
		// It read its token, reached the console over WebSocket and reported the cluster.
		connectedAfter := func(at time.Time) func() bool {
			return func() bool {
				st := agentState(e, r.ID)
				return st.Status == store.ComponentConnected && st.UpdatedAt.After(at)
			}
		}
		started := pod.CreationTimestamp.Time.Add(-time.Second)
		why := func() string {
			return fmt.Sprintf("agent state %+v (pod created %s)\n%s\nconsole: %s", agentState(e, r.ID), started, podLog(t, c, observability.ObservabilityNamespace, sel), agentLines(e))
		}
		eventually(t, time.Minute, why, connectedAfter(started))
		var snap agent.Snapshot
		eventually(t, time.Minute, func() string { return "no snapshot with the real node" }, func() bool {
			raw, _, _ := e.Store.LatestSnapshot(ctx, r.ID)
			snap = agent.Snapshot{}
			json.Unmarshal(raw, &snap)
			for _, n := range snap.Nodes {
				if n.Name == testcluster.RealNodeName && n.Pods > 0 {
					return true
				}
			}
			return false
		})
		if len(snap.Nodes) != 4 {
			t.Fatalf("the agent reported %d nodes: %+v", len(snap.Nodes), snap.Nodes)
		}
		// The region page shows what it reported.
		if st, page := e.Raw("GET", "/regions/"+r.ID, tok, ""); st != 200 || !strings.Contains(page, testcluster.RealNodeName) {
			t.Fatalf("the region page does not show the agent's report: %d", st)
		}
		// Killed, it is disconnected; started again, it reconnects.
		if err := c.KillContainer(ctx, pod, "agent"); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		eventually(t, time.Minute, why, func() bool { return agentState(e, r.ID).Status == store.ComponentDisconnected })
		eventually(t, 2*time.Minute, why, connectedAfter(killed))
		// The kubelet reports the restart in the pod's status on its own schedule, which may
		// come after the agent has reconnected.
		eventually(t, time.Minute, func() string { return "the killed agent's container was not started again" }, func() bool {
			restarted, err := c.Client.CoreV1().Pods(observability.ObservabilityNamespace).Get(ctx, pod.Name, metav1.GetOptions{})
			return err == nil && len(restarted.Status.ContainerStatuses) > 0 && restarted.Status.ContainerStatuses[0].RestartCount >= 1
		})
		// Its pod deleted, a replacement pod reconnects (perhaps before the old one's end is
		// seen: the region's agent stays connected then).
		zero := int64(0)
		if err := c.Client.CoreV1().Pods(observability.ObservabilityNamespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		deleted := time.Now()
		next := c.WaitRealPod(t, observability.ObservabilityNamespace, sel, 2*time.Minute)
		if next.Name == pod.Name {
			t.Fatalf("no replacement for %s", pod.Name)
		}
		eventually(t, time.Minute, why, connectedAfter(deleted))
		time.Sleep(2 * time.Second)
		if st := agentState(e, r.ID); st.Status != store.ComponentConnected {
			t.Fatalf("after the replacement connected the agent shows %+v", st)
		}
	})

	t.Run("NodeHeartbeat", func(t *testing.T) {
		// A real kubelet posts its Ready condition only on a change (or every 5 minutes)
		// and renews its Lease every 10 s: once the condition is older than the heartbeat
		// timeout, the Workers tab still shows the node ready.
		eventually(t, 2*time.Minute, func() string { return "the real node's Ready condition stays fresh" }, func() bool {
			n, err := c.Client.CoreV1().Nodes().Get(ctx, testcluster.RealNodeName, metav1.GetOptions{})
			if err != nil {
				return false
			}
			for _, cd := range n.Status.Conditions {
				if cd.Type == corev1.NodeReady {
					return time.Since(cd.LastHeartbeatTime.Time) > 35*time.Second
				}
			}
			return false
		})
		var nodes struct {
			Data []nodes.NodeView
		}
		if st := e.JSON("GET", "/api/knative-regions/"+r.ID+"/nodes", tok, nil, &nodes); st != 200 {
			t.Fatalf("nodes: %d", st)
		}
		for _, n := range nodes.Data {
			if n.Name == testcluster.RealNodeName && (n.Status != "ready" || n.HeartbeatAgeSeconds > 30) {
				t.Fatalf("the real node shows %s, heartbeat %d s old", n.Status, n.HeartbeatAgeSeconds)
			}
		}
	})

	t.Run("ContainerdRestart", func(t *testing.T) {
		j := action(t, e, tok, r.ID, "registry/rolling-restart", nil)
		mustSucceed(t, e, j)
		if n := c.ContainerdRestarts(); n != 1 {
			t.Fatalf("containerd restarted %d times on the real node\n%s", n, jobLog(t, e, j.ID))
		}
		if log := jobLog(t, e, j.ID); !strings.Contains(log, "containerd on "+testcluster.RealNodeName+" reads the node mirror's hosts.toml") {
			t.Fatalf("job log:\n%s", log)
		}
		// containerd is back: the node runs a new pod.
		runEcho(t, c, "default", "after-restart", testcluster.EchoImage, nil)
	})

	t.Run("StatusResponder", func(t *testing.T) {
		for _, tc := range []struct {
			status     string
			code       int
			retryAfter string
		}{{"maintenance", http.StatusServiceUnavailable, "300"}, {"inactive", http.StatusNotFound, ""}} {
			var ans struct {
				JobID string `json:"job_id"`
			}
			if st := e.JSON("PUT", "/api/knative-regions/"+r.ID, tok, map[string]any{"region_status": tc.status}, &ans); st != 200 || ans.JobID == "" {
				t.Fatalf("status %s: %d", tc.status, st)
			}
			mustSucceed(t, e, e.WaitJob(ans.JobID, 2*time.Minute))
			pod := c.WaitRealPod(t, r.ServingNamespace, "app.kubernetes.io/name="+statusblock.ResponderName, 2*time.Minute)
			if pod.Spec.NodeName != testcluster.RealNodeName {
				t.Fatalf("responder on %s", pod.Spec.NodeName)
			}
			// Called in the cluster as the region's Traefik calls it: through its Service,
			// with the header the block's Middleware adds.
			mw, err := c.DynamicGet(ctx, schema.GroupVersionResource{Group: "traefik.io", Version: "v1alpha1", Resource: "middlewares"}, r.ServingNamespace, statusblock.BlockName(r.Name))
			if err != nil {
				t.Fatal(err)
			}
			headers, _, _ := unstructured.NestedStringMap(mw.Object, "spec", "headers", "customRequestHeaders")
			svc, err := c.Client.CoreV1().Services(r.ServingNamespace).Get(ctx, statusblock.ResponderName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest("GET", "http://"+svc.Spec.ClusterIP+"/some/function", nil)
			req.Host = "fn.rn.example.test"
			for k, v := range headers {
				req.Header.Set(k, v)
			}
			resp, body := inCluster(t, c, req)
			if resp.StatusCode != tc.code || resp.Header.Get("Retry-After") != tc.retryAfter {
				t.Fatalf("%s: the responder answered %d (Retry-After %q): %s", tc.status, resp.StatusCode, resp.Header.Get("Retry-After"), body)
			}
		}
		var ans struct {
			JobID string `json:"job_id"`
		}
		if st := e.JSON("PUT", "/api/knative-regions/"+r.ID, tok, map[string]any{"region_status": "active"}, &ans); st != 200 {
			t.Fatalf("active: %d", st)
		}
		mustSucceed(t, e, e.WaitJob(ans.JobID, 2*time.Minute))
	})

	t.Run("TraefikRoutesTheBlock", func(t *testing.T) {
		// The region's Traefik (the console's chart values) runs on the real node and routes
		// the console's own objects: the region-block IngressRoute and its Middleware send a
		// function's request to the status responder while the region is in maintenance or
		// inactive, and nothing of the block is left once it is active again.
		if !realTraefik {
			t.Skip("Traefik " + testcluster.TraefikVersion + " is not built on this machine: make test-real builds it (about 10 minutes)")
		}
		sel := "app.kubernetes.io/name=traefik"
		if err := c.Client.CoreV1().Pods(r.ServingNamespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: sel}); err != nil {
			t.Fatal(err)
		}
		pod := c.WaitRealPod(t, r.ServingNamespace, sel, 3*time.Minute)
		svc, err := c.Client.CoreV1().Services(r.ServingNamespace).Get(ctx, kit.TraefikRelease, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		get := func() (*http.Response, []byte) {
			req, _ := http.NewRequest("GET", "http://"+svc.Spec.ClusterIP+"/orders", nil)
			req.Host = "shop.rn.example.test"
			return inCluster(t, c, req)
		}
		setStatus := func(status string) {
			var ans struct {
				JobID string `json:"job_id"`
			}
			if st := e.JSON("PUT", "/api/knative-regions/"+r.ID, tok, map[string]any{"region_status": status}, &ans); st != 200 || ans.JobID == "" {
				t.Fatalf("status %s: %d", status, st)
			}
			mustSucceed(t, e, e.WaitJob(ans.JobID, 2*time.Minute))
		}
		for _, tc := range []struct {
			status, says string
			code         int
			retryAfter   string
		}{{"maintenance", "in maintenance", http.StatusServiceUnavailable, "300"}, {"inactive", "not active", http.StatusNotFound, ""}} {
			setStatus(tc.status)
			var resp *http.Response
			var body []byte
			// Traefik applies what its providers saw within a moment.
			eventually(t, time.Minute, func() string {
				return fmt.Sprintf("%d %s\n%s", resp.StatusCode, body, podLog(t, c, r.ServingNamespace, sel))
			}, func() bool {
				resp, body = get()
				return resp.StatusCode == tc.code && resp.Header.Get("Retry-After") == tc.retryAfter && strings.Contains(string(body), tc.says)
			})
		}
		setStatus("active")
		eventually(t, time.Minute, func() string { return podLog(t, c, r.ServingNamespace, sel) }, func() bool {
			resp, body := get()
			// No function is deployed: Traefik itself answers, no longer the responder.
			return resp.StatusCode == http.StatusNotFound && strings.Contains(string(body), "404 page not found")
		})
		if pod.Spec.NodeName != testcluster.RealNodeName {
			t.Fatalf("Traefik ran on %s", pod.Spec.NodeName)
		}
	})

	t.Run("DomainAlias", func(t *testing.T) {
		// The region's Traefik is played by the echo program on the real node, behind
		// Traefik's own Service (the stand-in's pods run nowhere).
		runEcho(t, c, r.ServingNamespace, "traefik-echo", testcluster.EchoImage, nil)
		tr, err := c.Client.CoreV1().Services(r.ServingNamespace).Get(ctx, kit.TraefikRelease, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tr.Spec.Selector = map[string]string{"app": "traefik-echo"}
		if _, err := c.Client.CoreV1().Services(r.ServingNamespace).Update(ctx, tr, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if st := e.JSON("PATCH", "/api/settings", tok, map[string]any{"base_domain": "new.test"}, nil); st != 200 {
			t.Fatalf("base domain: %d", st)
		}
		eventually(t, 2*time.Minute, func() string { return c.PodReport(r.Name, "app.kubernetes.io/name="+domains.AliasName) }, func() bool {
			pods, _ := c.Client.CoreV1().Pods(r.Name).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + domains.AliasName})
			return pods != nil && len(pods.Items) == 2 && podsReady(pods.Items)
		})
		svc, err := c.Client.CoreV1().Services(r.Name).Get(ctx, domains.AliasName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("GET", "http://"+svc.Spec.ClusterIP+"/hello", nil)
		req.Host = "shop.rn.new.test"
		resp, body := inCluster(t, c, req)
		var echoed struct {
			Host, Path string
			Headers    map[string][]string
		}
		json.Unmarshal(body, &echoed)
		if resp.StatusCode != 200 || echoed.Host != "shop.rn.example.test" || echoed.Path != "/hello" || strings.Join(echoed.Headers["X-Forwarded-Host"], "") != "shop.rn.new.test" {
			t.Fatalf("the alias proxy forwarded %d %s", resp.StatusCode, body)
		}
	})

	t.Run("ReconcileMovesHelpers", func(t *testing.T) {
		// The console of the next version (the same program under another tag): reconcile's
		// dry run lists every helper it would move, the run moves them, and they run again.
		built, err := testcluster.ConsoleImages(version)
		if err != nil {
			t.Fatal(err)
		}
		next := config.OwnImage(images.Agent, version+"-next")
		for _, b := range built {
			if b.Name == images.Agent {
				if err := c.Registry.Push(ctx, next, b.Image); err != nil {
					t.Fatal(err)
				}
			}
		}
		old := e.Cfg.AgentImage
		e.Cfg.AgentImage, e.Cfg.ResponderImage = next, next
		var plan struct {
			Data []reconcile.Change
		}
		if st := e.JSON("GET", "/api/reconcile?step=agent", tok, nil, &plan); st != 200 {
			t.Fatalf("dry run: %d", st)
		}
		var what []string
		for _, ch := range plan.Data {
			what = append(what, ch.What)
		}
		all := strings.Join(what, "\n")
		// Both through the console's image mirror.
		old, next = imagemirror.Map(testcluster.ImageMirror, old), imagemirror.Map(testcluster.ImageMirror, next)
		for _, want := range []string{
			"agent image " + old + " → " + next,
			"DaemonSet " + registry.Namespace + "/" + registry.MirrorDaemonSet + " image " + old + " → " + next,
			"Deployment " + r.Name + "/" + domains.AliasName + " image " + old + " → " + next,
		} {
			if !strings.Contains(all, want) {
				t.Fatalf("the dry run does not list %q:\n%s", want, all)
			}
		}
		var ans struct {
			JobID string `json:"job_id"`
		}
		if st := e.JSON("POST", "/api/reconcile", tok, map[string]any{"step": "agent"}, &ans); st != 202 {
			t.Fatalf("reconcile: %d", st)
		}
		mustSucceed(t, e, e.WaitJob(ans.JobID, 5*time.Minute))
		for _, h := range []struct{ ns, sel string }{
			{registry.Namespace, "app.kubernetes.io/name=" + registry.MirrorDaemonSet},
			{observability.ObservabilityNamespace, "app.kubernetes.io/name=" + observability.AgentName},
			{r.Name, "app.kubernetes.io/name=" + domains.AliasName},
		} {
			eventually(t, 2*time.Minute, func() string { return c.PodReport(h.ns, h.sel) }, func() bool {
				pods, _ := c.Client.CoreV1().Pods(h.ns).List(ctx, metav1.ListOptions{LabelSelector: h.sel, FieldSelector: "spec.nodeName=" + testcluster.RealNodeName})
				if pods == nil || len(pods.Items) == 0 || !podsReady(pods.Items) {
					return false
				}
				for _, p := range pods.Items {
					if p.Spec.Containers[0].Image != next {
						return false
					}
				}
				return true
			})
		}
		if st := e.JSON("GET", "/api/reconcile?step=agent", tok, nil, &plan); st != 200 {
			t.Fatalf("dry run: %d", st)
		}
		for _, ch := range plan.Data {
			if ch.Result == reconcile.ResultChange {
				t.Fatalf("still to change after the reconcile: %+v", ch)
			}
		}
	})
}

// agentLines are the console's log lines about agents.
func agentLines(e *webtest.Env) string {
	var out []string
	for _, l := range strings.Split(e.Log.String(), "\n") {
		if strings.Contains(l, "agent") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func podsReady(pods []corev1.Pod) bool {
	for _, p := range pods {
		ready := false
		for _, c := range p.Status.Conditions {
			ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
		}
		if !ready || p.DeletionTimestamp != nil {
			return false
		}
	}
	return true
}

// inCluster sends a request from inside the cluster's namespace.
func inCluster(t *testing.T, c *testcluster.Cluster, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	var last error
	for i := 0; i < 20; i++ {
		resp, err := c.InClusterHTTP().Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp, body
		}
		last = err
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("%s %s: %v", req.Method, req.URL, last)
	return nil, nil
}

// podLog is the log of the pods of a selector, through the API server and the kubelet.
func podLog(t *testing.T, c *testcluster.Cluster, ns, sel string) string {
	t.Helper()
	pods, err := c.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: sel, FieldSelector: "spec.nodeName=" + testcluster.RealNodeName})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		raw, err := c.Client.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(context.Background())
		fmt.Fprintf(&b, "--- %s (%v)\n%s", p.Name, err, raw)
	}
	return b.String()
}
