package realnode

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"runr.dev/console/config"
	"runr.dev/console/images"
	"runr.dev/console/ops/registry"
	"runr.dev/console/store"
	"runr.dev/console/testcluster"
	"runr.dev/console/web/webtest"
)

// functionImage is the test's function in the region's registry (Zot's own namespace, as
// a build would push it): the harness's echo program, which answers with what it received.
const functionImage = registry.InternalAddress + "/functions/hello:1"

// dataPath is a region whose function requests run for real: the real Knative Operator
// and Serving, a real Traefik with its Knative provider, and the function's pods, all on
// the real node, the region's registry (Zot's Service) answered by the cluster's registry.
type dataPath struct {
	c   *testcluster.Cluster
	e   *webtest.Env
	tok string
	r   *store.Region

	zone      *testcluster.Zone // the region's DNS records
	dnsInside string            // the zone's address inside the cluster's namespace

	servingPost time.Time       // just before the install-knative POST
	installJob  string          // the install-knative job
	figures     realPathFigures // what make bench reports (RUNR_REALPATH_FIGURES)
}

// realPathFigures are the real data path's times that `make bench` reports (bench/realpath.go
// runs this test with RUNR_REALPATH_FIGURES naming the file they are written to).
type realPathFigures struct {
	// ServingToFirstAnswer runs from the install-knative POST to the first 200 of a
	// function (the test deploys it once Serving is ready).
	ServingToFirstAnswer time.Duration `json:"serving_to_first_answer"`
	// DeployToReady runs from a deploy's POST to its job's end: Knative reports the new
	// revision ready and routed.
	DeployToReady time.Duration `json:"deploy_to_ready"`
	// InstallWall is the install-knative job's run; InstallWaits the time some named wait
	// of it was under way (overlapping waits of parallel steps counted once).
	InstallWall  time.Duration `json:"install_wall"`
	InstallWaits time.Duration `json:"install_waits"`
	// UpgradeProbes and UpgradeProbesFailed count the function probes during the
	// upgrade's reconcile.
	UpgradeProbes       int `json:"upgrade_probes"`
	UpgradeProbesFailed int `json:"upgrade_probes_failed"`
}

// newDataPath sets the region up through the console's API: its registry (Zot and the
// node mirror), then Knative (the operator chart upstream's, Serving as the operator
// installs it) with monitoring of the region's own (existing Prometheus and Loki, no
// tracing: their images are not built here).
func newDataPath(t *testing.T) *dataPath {
	t.Helper()
	if !testcluster.TraefikBuilt() || !testcluster.KnativeBuilt() {
		t.Skip("Traefik " + testcluster.TraefikVersion + " and Knative " + testcluster.KnativeRelease + " are not built on this machine: make test-real builds them (about 20 minutes once)")
	}
	ctx := context.Background()
	krepo, err := testcluster.StartUpstreamKnativeChartRepo("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { krepo.Close() })
	// One simulated node beside the real one takes what has no image here (Zot's pods).
	c := realCluster(t, testcluster.Options{InsideLoadBalancer: true, Nodes: []testcluster.NodeSpec{{Name: "sim-1", CPU: "4", Memory: "8Gi"}}})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the registry's pods:\n%s", c.PodReport(registry.Namespace, ""))
		}
	})
	if err := c.PushTraefik(ctx, os.Stderr); err != nil {
		t.Fatal(err)
	}
	if err := c.PushKnative(ctx, os.Stderr); err != nil {
		t.Fatal(err)
	}
	e := consoleOn(t, c, func(cfg *config.Config) {
		cfg.ChartMirror = krepo.URL
		cfg.TraefikImage = testcluster.TraefikImage
		cfg.TracingOff = true
		cfg.PrepullImages = []string{testcluster.EchoImage}
		cfg.InstallTimeout = 5 * time.Minute
	})
	_, tok := e.User("owner")
	if err := e.Store.SetSetting(ctx, "base_domain", "example.test"); err != nil {
		t.Fatal(err)
	}
	var setup struct {
		JobID string `json:"job_id"`
	}
	body := map[string]any{"name": "fn", "kubeconfig": string(c.Kubeconfig()), "nodes": []string{}, "redis_mode": "none",
		"prometheus_url": "http://prometheus.monitoring.svc:9090", "loki_url": "http://loki.monitoring.svc:3100",
		"registry_mode": "internal", "storage_type": "pvc", "pvc_config": map[string]any{"storageClass": "standard", "size": "5Gi"}}
	if st := e.JSON("POST", "/api/registry-setup/start", tok, body, &setup); st != 202 {
		t.Fatalf("registry setup: %d %+v", st, setup)
	}
	mustSucceed(t, e, e.WaitJob(setup.JobID, 5*time.Minute))
	r, err := e.Store.RegionByName(ctx, "fn")
	if err != nil {
		t.Fatal(err)
	}
	// Zot runs no container here: the cluster's registry answers behind its Service, and
	// holds the function's image in Zot's own namespace.
	if err := c.ServeRegistryAs(ctx, registry.Namespace, registry.ZotRelease); err != nil {
		t.Fatal(err)
	}
	if err := pushAs(ctx, c, "functions/hello:1", testcluster.EchoImage); err != nil {
		t.Fatal(err)
	}
	// From here on new pods run on the real node: the operator, Serving, Traefik, the agent
	// and the functions.
	if err := c.PreferRealNode(ctx); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	j := action(t, e, tok, r.ID, "install-knative", map[string]any{"version": "1.23"})
	installJob := j.ID
	if j.Status != store.JobSucceeded {
		t.Fatalf("install-knative: %s %s\n%s\n%s\n%s\n%s", j.Status, j.Error, jobLog(t, e, j.ID), c.PodReport("knative-operator", ""),
			c.PodReport("knative-serving", ""), podLog(t, c, "knative-operator", "app.kubernetes.io/name=knative-operator"))
	}
	t.Logf("Knative %s installed for real in %s", testcluster.KnativeRelease, time.Since(start).Round(time.Second))
	if r, err = e.Store.RegionByID(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	zone, err := testcluster.StartZone()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(zone.Close)
	_, zonePort, _ := net.SplitHostPort(zone.Addr)
	var port int
	fmt.Sscan(zonePort, &port)
	dnsInside, err := c.Expose(zone.Addr, port)
	if err != nil {
		t.Fatal(err)
	}
	d := &dataPath{c: c, e: e, tok: tok, r: r, zone: zone, dnsInside: dnsInside, servingPost: start, installJob: installJob}
	d.createRecord("fn.example.test")
	if file := os.Getenv("RUNR_REALPATH_FIGURES"); file != "" {
		t.Cleanup(func() { d.writeFigures(t, file) })
	}
	return d
}

// writeFigures adds the install-knative job's times and writes the figures.
func (d *dataPath) writeFigures(t *testing.T, file string) {
	j, err := d.e.Store.JobByID(context.Background(), d.installJob)
	if err != nil || j.StartedAt == nil || j.FinishedAt == nil {
		t.Errorf("the install job's times: %v", err)
		return
	}
	evs, err := d.e.Store.JobEvents(context.Background(), d.installJob, 0, 100000)
	if err != nil {
		t.Error(err)
		return
	}
	d.figures.InstallWall = j.FinishedAt.Sub(*j.StartedAt)
	d.figures.InstallWaits = waitedUnion(evs)
	raw, _ := json.MarshalIndent(d.figures, "", "  ")
	if err := os.WriteFile(file, raw, 0o644); err != nil {
		t.Error(err)
	}
}

// waitedUnion is the time during which at least one named wait of a job was under way,
// from the start and end events of its waits (JobContext.Wait, events of kind "wait").
func waitedUnion(evs []store.JobEvent) time.Duration {
	type span struct{ from, to time.Time }
	open := map[string]time.Time{}
	var spans []span
	for _, e := range evs {
		var w struct{ Phase, What string }
		if e.Kind != "wait" || json.Unmarshal(e.Data, &w) != nil {
			continue
		}
		k := fmt.Sprintf("%d|%s", e.StepIdx, w.What)
		switch w.Phase {
		case "start":
			open[k] = e.CreatedAt
		case "end":
			if from, ok := open[k]; ok {
				spans = append(spans, span{from, e.CreatedAt})
				delete(open, k)
			}
		}
	}
	slices.SortFunc(spans, func(a, b span) int { return a.from.Compare(b.from) })
	var total time.Duration
	var cur span
	for i, sp := range spans {
		switch {
		case i == 0:
			cur = sp
		case !sp.from.After(cur.to):
			if sp.to.After(cur.to) {
				cur.to = sp.to
			}
		default:
			total += cur.to.Sub(cur.from)
			cur = sp
		}
	}
	if len(spans) > 0 {
		total += cur.to.Sub(cur.from)
	}
	return total
}

// pushAs copies an image of the cluster's registry to a path of its own (an image a
// build pushed into the region's registry).
func pushAs(ctx context.Context, c *testcluster.Cluster, path, from string) error {
	img, err := c.Registry.Image(from)
	if err != nil {
		return err
	}
	return images.Push(ctx, c.Registry.Addr+"/"+path, img)
}

// call sends a request for host to the region's external address (Traefik's
// LoadBalancer address inside the namespace) and returns the status, a header and the body.
func (d *dataPath) call(t *testing.T, host, path string) (*http.Response, []byte) {
	t.Helper()
	var last error
	for i := 0; i < 20; i++ {
		resp, err := d.client(15 * time.Second).Get("http://" + host + path)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp, body
		}
		last = err
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("GET http://%s%s: %v", host, path, last)
	return nil, nil
}

// client reaches the region's functions as a program in the cluster's namespace would: a
// name through the DNS records the administrator created (the test's zone, asked at its
// address inside the namespace), then Traefik's address.
func (d *dataPath) client(timeout time.Duration) *http.Client {
	base := d.c.InClusterHTTP().Transport.(*http.Transport)
	dial := base.DialContext
	res := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return dial(ctx, "tcp", d.dnsInside)
	}}
	tr := base.Clone()
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		ips, err := res.LookupHost(ctx, host)
		if err != nil {
			return nil, err
		}
		return dial(ctx, network, net.JoinHostPort(ips[0], port))
	}
	return &http.Client{Transport: tr, Timeout: timeout}
}

// createRecord creates the DNS record the console tells the administrator to create for
// a function domain: *.<domain> → the region's external address.
func (d *dataPath) createRecord(domain string) {
	d.zone.Set("*."+domain, d.r.ExternalIP)
}

// deploy creates and deploys an HTTP function of the image and waits for it.
func (d *dataPath) deploy(t *testing.T, name, image string) string {
	t.Helper()
	var ans struct {
		Data   struct{ ID string }
		Fields map[string]string
	}
	if st := d.e.JSON("POST", "/api/projects", d.tok, map[string]any{"name": name, "region_id": d.r.ID, "image": image}, &ans); st != 201 {
		t.Fatalf("create project: %d %+v", st, ans)
	}
	d.redeploy(t, ans.Data.ID)
	return ans.Data.ID
}

// redeploy deploys a project (again) and waits until its revision is ready.
func (d *dataPath) redeploy(t *testing.T, project string) {
	t.Helper()
	var dep struct {
		JobID string `json:"job_id"`
		Error string
	}
	if st := d.e.JSON("POST", "/api/projects/"+project+"/deploy", d.tok, nil, &dep); st != 202 {
		t.Fatalf("deploy: %d %+v", st, dep)
	}
	j := d.e.WaitJob(dep.JobID, 7*time.Minute)
	if j.Status != store.JobSucceeded {
		t.Fatalf("deploy: %s %s\n%s\n%s\n%s\n%s\n%s", j.Status, j.Error, jobLog(t, d.e, j.ID), d.knativeReport(d.r.Name), d.c.PodReport(d.r.Name, ""),
			d.c.PodReport("knative-serving", ""), podLog(t, d.c, "knative-serving", "app=controller"))
	}
}

// knativeReport says what Knative's objects of a namespace report (their conditions).
func (d *dataPath) knativeReport(ns string) string {
	dyn, err := dynamic.NewForConfig(d.c.REST)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, gvr := range []schema.GroupVersionResource{
		{Group: "serving.knative.dev", Version: "v1", Resource: "services"},
		{Group: "serving.knative.dev", Version: "v1", Resource: "configurations"},
		{Group: "serving.knative.dev", Version: "v1", Resource: "revisions"},
		{Group: "serving.knative.dev", Version: "v1", Resource: "routes"},
		{Group: "networking.internal.knative.dev", Version: "v1alpha1", Resource: "ingresses"},
		{Group: "networking.internal.knative.dev", Version: "v1alpha1", Resource: "serverlessservices"},
		{Group: "autoscaling.internal.knative.dev", Version: "v1alpha1", Resource: "podautoscalers"},
	} {
		list, err := dyn.Resource(gvr).Namespace(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", gvr.Resource, err)
			continue
		}
		for _, o := range list.Items {
			conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
			fmt.Fprintf(&b, "%s %s: %v\n", gvr.Resource, o.GetName(), conds)
		}
	}
	return b.String()
}

// TestFunctionThroughTheRegionsIngress: a function deployed by the console answers through
// the region's Traefik and Knative, all running for real; the region's status blocks it
// (503 with Retry-After in maintenance, 404 inactive) and lets it through again without
// restarting its pods.
func TestFunctionThroughTheRegionsIngress(t *testing.T) {
	d := newDataPath(t)
	ctx := context.Background()
	if d.r.ExternalIP != testcluster.InsideLBAddress {
		t.Fatalf("the region's external address is %q, want Traefik's load balancer %s", d.r.ExternalIP, testcluster.InsideLBAddress)
	}
	project := d.deploy(t, "hello", functionImage)
	host := "hello.fn.example.test"
	var body []byte
	var resp *http.Response
	eventually(t, 2*time.Minute, func() string {
		return fmt.Sprintf("%v %s\n%s", resp != nil && resp.StatusCode == 200, body, podLog(t, d.c, d.r.ServingNamespace, "app.kubernetes.io/name=traefik"))
	}, func() bool {
		resp, body = d.call(t, host, "/orders?id=7")
		return resp.StatusCode == http.StatusOK
	})
	d.figures.ServingToFirstAnswer = time.Since(d.servingPost)
	d.captureBaseline(t, host)
	var echo struct {
		Host, Path string
		Headers    map[string][]string
	}
	if err := json.Unmarshal(body, &echo); err != nil || echo.Host != host || !strings.HasPrefix(echo.Path, "/orders") {
		t.Fatalf("the function's answer: %v %s", err, body)
	}
	// The function ran on the real node, from the region's registry through the node mirror.
	pods, err := d.c.Client.CoreV1().Pods(d.r.Name).List(ctx, metav1.ListOptions{LabelSelector: "serving.knative.dev/service=hello"})
	if err != nil || len(pods.Items) == 0 || pods.Items[0].Spec.NodeName != testcluster.RealNodeName {
		t.Fatalf("the function's pods: %v %+v", err, pods)
	}
	restarts := func() string {
		pods, _ := d.c.Client.CoreV1().Pods(d.r.Name).List(ctx, metav1.ListOptions{LabelSelector: "serving.knative.dev/service=hello"})
		var ids []string
		for _, p := range pods.Items {
			ids = append(ids, string(p.UID))
			for _, cs := range p.Status.ContainerStatuses {
				ids = append(ids, fmt.Sprint(cs.RestartCount))
			}
		}
		return strings.Join(ids, ",")
	}
	before := restarts()

	setStatus := func(status string) {
		var ans struct {
			JobID string `json:"job_id"`
		}
		if st := d.e.JSON("PUT", "/api/knative-regions/"+d.r.ID, d.tok, map[string]any{"region_status": status}, &ans); st != 200 || ans.JobID == "" {
			t.Fatalf("status %s: %d", status, st)
		}
		mustSucceed(t, d.e, d.e.WaitJob(ans.JobID, 2*time.Minute))
	}
	for _, tc := range []struct {
		status, says string
		code         int
		retryAfter   string
	}{{"maintenance", "in maintenance", http.StatusServiceUnavailable, "300"}, {"inactive", "not active", http.StatusNotFound, ""}} {
		setStatus(tc.status)
		eventually(t, time.Minute, func() string { return fmt.Sprintf("%d %s", resp.StatusCode, body) }, func() bool {
			resp, body = d.call(t, host, "/orders")
			return resp.StatusCode == tc.code && resp.Header.Get("Retry-After") == tc.retryAfter && strings.Contains(string(body), tc.says)
		})
	}
	setStatus("active")
	eventually(t, time.Minute, func() string { return fmt.Sprintf("%d %s", resp.StatusCode, body) }, func() bool {
		resp, body = d.call(t, host, "/again")
		return resp.StatusCode == http.StatusOK && strings.Contains(string(body), `"/again"`)
	})
	if after := restarts(); after != before {
		t.Fatalf("the function's pods restarted while the region was blocked: %s → %s", before, after)
	}

	// A new base domain: the function answers on both through the alias proxy, then, once
	// the move is completed, on the new one only.
	if st := d.e.JSON("PATCH", "/api/settings", d.tok, map[string]any{"base_domain": "new.test"}, nil); st != 200 {
		t.Fatalf("base domain: %d", st)
	}
	d.waitDomainMove(t, store.MigrationDNSCheck)
	d.createRecord("fn.new.test")
	newHost := "hello.fn.new.test"
	for _, h := range []string{newHost, host} {
		eventually(t, 2*time.Minute, func() string { return fmt.Sprintf("%s: %d %s", h, resp.StatusCode, body) }, func() bool {
			resp, body = d.call(t, h, "/both")
			return resp.StatusCode == http.StatusOK && strings.Contains(string(body), `"/both"`)
		})
	}
	resp, body = d.call(t, newHost, "/alias")
	if err := json.Unmarshal(body, &echo); err != nil || echo.Host != host {
		t.Fatalf("through the alias the function got: %v %s", err, body)
	}
	var ans struct {
		JobID string `json:"job_id"`
	}
	if st := d.e.JSON("POST", "/api/knative-regions/"+d.r.ID+"/complete-domain-migration", d.tok, nil, &ans); st != 202 {
		t.Fatalf("complete the domain move: %d", st)
	}
	mustSucceed(t, d.e, d.e.WaitJob(ans.JobID, 2*time.Minute))
	eventually(t, 2*time.Minute, func() string { return fmt.Sprintf("%d %s", resp.StatusCode, body) }, func() bool {
		resp, body = d.call(t, newHost, "/new")
		old, _ := d.call(t, host, "/old")
		return resp.StatusCode == http.StatusOK && strings.Contains(string(body), `"/new"`) && old.StatusCode == http.StatusNotFound
	})
	if err := json.Unmarshal(body, &echo); err != nil || echo.Host != newHost {
		t.Fatalf("after the move the function got host %q: %s", echo.Host, body)
	}

	// request_timeout 60 gives Traefik's entry points 120 s (their floor); 900 rolls Traefik
	// to 910 s and raises Knative's max-revision-timeout-seconds, and the function deployed
	// again (timeoutSeconds 900) answers a request longer than Traefik's previous timeout.
	d.setRequestTimeout(t, 60)
	d.setRequestTimeout(t, 900)
	redeploy := time.Now()
	d.redeploy(t, project)
	d.figures.DeployToReady = time.Since(redeploy)
	t.Logf("Knative reports the new revision ready and routed %s after the deploy's POST", d.figures.DeployToReady.Round(time.Millisecond))
	// Right after Traefik's rollout, kube-proxy may still send a new connection to the old
	// pod, which is shutting down (a 1-replica Deployment rolls with a short gap): the long
	// request goes once the new Traefik answers.
	eventually(t, time.Minute, func() string { return "the rolled Traefik does not answer" }, func() bool {
		resp, _ := d.call(t, newHost, "/rolled")
		return resp.StatusCode == http.StatusOK
	})
	began := time.Now()
	lr, err := d.client(4 * time.Minute).Get("http://" + newHost + "/sleep?for=130s")
	if err != nil {
		t.Fatalf("a request of 130 s, after %s: %v", time.Since(began).Round(time.Second), err)
	}
	lbody, _ := io.ReadAll(lr.Body)
	lr.Body.Close()
	if lr.StatusCode != http.StatusOK || !strings.Contains(string(lbody), `"slept":"2m10s"`) {
		t.Fatalf("a request of 130 s after %s: %d %s", time.Since(began).Round(time.Second), lr.StatusCode, lbody)
	}

	d.upgradeUnderProbe(t, newHost)
}

// upgradeUnderProbe: the console's side of an upgrade reaches the region (reconcile with a
// new version's images moves the agent, the status responder and the alias proxy, and
// checks Traefik, Knative and the rest) while a prober calls the function every second;
// not one call fails.
func (d *dataPath) upgradeUnderProbe(t *testing.T, host string) {
	ctx := context.Background()
	built, err := testcluster.ConsoleImages(version)
	if err != nil {
		t.Fatal(err)
	}
	next := config.OwnImage(images.Agent, version+"-next")
	for _, b := range built {
		if b.Name == images.Agent {
			if err := d.c.Registry.Push(ctx, next, b.Image); err != nil {
				t.Fatal(err)
			}
		}
	}
	d.e.Cfg.AgentImage, d.e.Cfg.ResponderImage = next, next

	// A probe fails when it gets an error or another status than 200. It waits up to 30 s,
	// a client's patience: in two fresh-clone make test runs (three test packages at once
	// on two CPUs) one probe of about ten gave up at 5 s during this reconcile, which
	// passes alone and under CPU load. A longer wait tells a slow answer from a connection a
	// roll cut (that one never answers); each probe's time is logged, and on a failure the
	// pods that came or went and the reconcile's timeline.
	type probe struct {
		at   time.Time
		took time.Duration
		code int
		err  error
	}
	var probes []probe
	stop, done := make(chan struct{}), make(chan struct{})
	client := d.client(30 * time.Second)
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			p := probe{at: time.Now()}
			if resp, err := client.Get("http://" + host + "/probe"); err != nil {
				p.err = err
			} else {
				p.code = resp.StatusCode
				resp.Body.Close()
			}
			p.took = time.Since(p.at)
			probes = append(probes, p)
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	var ans struct {
		JobID string `json:"job_id"`
	}
	before := d.podsNow(t)
	began := time.Now()
	if st := d.e.JSON("POST", "/api/reconcile", d.tok, map[string]any{}, &ans); st != 202 {
		t.Fatalf("reconcile: %d", st)
	}
	j := d.e.WaitJob(ans.JobID, 10*time.Minute)
	time.Sleep(3 * time.Second)
	close(stop)
	<-done
	mustSucceed(t, d.e, j)
	log := jobLog(t, d.e, j.ID)
	if !strings.Contains(log, next) {
		t.Fatalf("reconcile did not move the helpers to %s:\n%s", next, log)
	}
	var failed []string
	var slowest time.Duration
	for _, p := range probes {
		slowest = max(slowest, p.took)
		if p.err != nil || p.code != http.StatusOK {
			failed = append(failed, fmt.Sprintf("%s after %s: %d %v", p.at.Format("15:04:05.000"), p.took.Round(time.Millisecond), p.code, p.err))
		}
	}
	d.figures.UpgradeProbes, d.figures.UpgradeProbesFailed = len(probes), len(failed)
	t.Logf("reconcile to %s took %s; the function answered %d of %d probes, the slowest in %s; pods that came or went:\n%s", next, time.Since(began).Round(time.Second),
		len(probes)-len(failed), len(probes), slowest.Round(time.Millisecond), podChanges(before, d.podsNow(t)))
	if len(failed) > 0 || len(probes) < 5 {
		t.Fatalf("function probes failed during the upgrade's reconcile: %v\nreconcile:\n%s", failed, jobLog(t, d.e, j.ID))
	}
}

// podsNow lists the cluster's pods by namespace/name with their UID, creation and deletion
// times, for what a step changed.
func (d *dataPath) podsNow(t *testing.T) map[string]string {
	t.Helper()
	pods, err := d.c.Client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		gone := ""
		if p.DeletionTimestamp != nil {
			gone = " deleting since " + p.DeletionTimestamp.Format("15:04:05")
		}
		out[p.Namespace+"/"+p.Name] = fmt.Sprintf("%s created %s on %s%s", p.UID, p.CreationTimestamp.Format("15:04:05"), p.Spec.NodeName, gone)
	}
	return out
}

// podChanges says which pods are new, gone or changed between two podsNow lists.
func podChanges(before, after map[string]string) string {
	var b strings.Builder
	for k, v := range after {
		if before[k] != v {
			fmt.Fprintf(&b, "  now %s: %s\n", k, v)
		}
	}
	for k, v := range before {
		if _, ok := after[k]; !ok {
			fmt.Fprintf(&b, "  gone %s: %s\n", k, v)
		}
	}
	return b.String()
}

// setRequestTimeout saves the region's request_timeout and waits for its job (Traefik's
// timeouts, Knative's maximum).
func (d *dataPath) setRequestTimeout(t *testing.T, seconds int) {
	t.Helper()
	var ans struct {
		JobID string `json:"job_id"`
	}
	if st := d.e.JSON("PUT", "/api/knative-regions/"+d.r.ID+"/settings", d.tok, map[string]any{"request_timeout": seconds}, &ans); st != 200 || ans.JobID == "" {
		t.Fatalf("request_timeout %d: %d %+v", seconds, st, ans)
	}
	mustSucceed(t, d.e, d.e.WaitJob(ans.JobID, 4*time.Minute))
}

// waitDomainMove waits for the region's domain migration to reach a state.
func (d *dataPath) waitDomainMove(t *testing.T, want store.MigrationStatus) {
	t.Helper()
	var got store.MigrationStatus
	eventually(t, 3*time.Minute, func() string { return "domain migration " + string(got) }, func() bool {
		r, err := d.e.Store.RegionByID(context.Background(), d.r.ID)
		if err == nil {
			got = r.DomainMigrationStatus
		}
		return got == want
	})
}
