// Package deploy holds the console's Helm chart (deploy/chart); its test installs the
// chart with the Helm SDK on a real node, with the console's image of this checkout.
package deploy

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	helmaction "helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/yaml"

	"runr.dev/console/config"
	"runr.dev/console/crypt"
	"runr.dev/console/images"
	"runr.dev/console/store"
	"runr.dev/console/store/storetest"
	"runr.dev/console/testcluster"
)

const ns = "runr"

// helmConfig is one Helm action configuration for the test cluster's namespace.
func helmConfig(t *testing.T, c *testcluster.Cluster) *helmaction.Configuration {
	t.Helper()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, c.Kubeconfig(), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &kc, new(string)
	*flags.Namespace = ns
	cfg := &helmaction.Configuration{}
	if err := cfg.Init(flags, ns, "secret", func(format string, v ...any) { t.Logf("helm: "+format, v...) }); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load("chart")
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// appKey reads APP_KEY from runr-secret.
func appKey(t *testing.T, c *testcluster.Cluster) string {
	t.Helper()
	s, err := c.Client.CoreV1().Secrets(ns).Get(context.Background(), "runr-secret", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return string(s.Data["APP_KEY"])
}

// hookRuns lists a release's hooks in the order they started, with their phases.
func hookRuns(rel *release.Release) []*release.Hook {
	hs := append([]*release.Hook(nil), rel.Hooks...)
	sort.SliceStable(hs, func(i, j int) bool { return hs[i].LastRun.StartedAt.Time.Before(hs[j].LastRun.StartedAt.Time) })
	return hs
}

// ownRegistry is the administrator's registry the chart's images come from (the cluster's
// registry, which the node reaches over HTTP).
const ownRegistry = testcluster.ImageMirror + "/runr"

// The chart's images: this checkout at one version, and at another for the upgrade.
const (
	installVersion = "0.0.0-chart"
	upgradeVersion = "0.0.0-chart-next"
)

// TestChartInstallAndUpgrade installs the chart with the console's image of this checkout
// on a real node: the migration Job migrates a PostgreSQL reachable from the pods, the
// console pods start the binary and pass /readyz, the bootstrap Job creates the first
// owner and runs reconcile, and the console answers through its Service. It checks the
// order of the hooks (runr-secret, then the migration Job before any console pod, then the
// bootstrap Job after the rollout), then upgrades with --reuse-values to an image of another
// version while a prober calls the console's API every 100 ms through its Service, and
// fails on a probe that failed outside the switch-over window (the first old pod ending →
// the last gone). It checks that APP_KEY survived, that a different secret.appKey is
// refused, and that the key survives an uninstall and a new install.
func TestChartInstallAndUpgrade(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{RealNode: true, InsideLoadBalancer: true, Nodes: []testcluster.NodeSpec{}})
	ctx := context.Background()
	// The charts the console installs, as its pods reach them (upstream's knative-operator).
	repo, err := testcluster.StartUpstreamKnativeChartRepo("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { repo.Close() })
	repoURL, _ := url.Parse(repo.URL)
	_, repoPort, _ := strings.Cut(repoURL.Host, ":")
	var port int
	fmt.Sscan(repoPort, &port)
	inside, err := c.Expose(repoURL.Host, port)
	if err != nil {
		t.Fatal(err)
	}
	chartMirror := "http://" + inside
	if err := repo.Rebase(chartMirror); err != nil {
		t.Fatal(err)
	}
	realPath := testcluster.TraefikBuilt() && testcluster.KnativeBuilt()
	// The images of this checkout in a registry of the administrator's own, as the README's
	// install from a checkout pushes them (`make images REGISTRY=…`).
	for _, v := range []string{installVersion, upgradeVersion} {
		built, err := testcluster.ConsoleImages(v)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range built {
			if err := images.Push(ctx, c.Registry.Addr+"/runr/"+b.Name+":"+v, b.Image); err != nil {
				t.Fatal(err)
			}
		}
	}
	dbURL := storetest.EmptyURL(t)
	podDB := exposeDatabase(t, c, dbURL)
	cfg := helmConfig(t, c)
	ch := loadChart(t)

	in := helmaction.NewInstall(cfg)
	in.ReleaseName, in.Namespace, in.CreateNamespace, in.Wait, in.Timeout = "runr", ns, true, true, 4*time.Minute
	env := functionEnv(chartMirror)
	env["RUNR_AGENT_IMAGE"] = ownRegistry + "/agent:" + installVersion
	vals := map[string]any{"appURL": "https://" + consoleHost,
		"image":    map[string]any{"repository": ownRegistry + "/console", "tag": installVersion},
		"database": map[string]any{"url": podDB},
		"env":      env}
	rel, err := in.RunWithContext(ctx, ch, vals)
	if err != nil {
		t.Fatalf("install: %v\n%s", err, c.PodReport(ns, ""))
	}
	checkInstalled(t, c, rel)
	key := appKey(t, c)
	if raw, err := base64.StdEncoding.DecodeString(key); err != nil || len(raw) != 32 {
		t.Fatalf("APP_KEY %q is not 32 random bytes in base64", key)
	}
	st := openStore(t, dbURL, key)
	checkRan(t, c, st)
	if v := consoleVersion(t, c); v != installVersion {
		t.Fatalf("the console answers version %q, want %q", v, installVersion)
	}

	// helm upgrade --reuse-values --set image.tag=<next> --set ingress.enabled=true, under a prober.
	owner, err := st.UserByEmail(ctx, "admin@runr.local")
	if err != nil {
		t.Fatal(err)
	}
	_, token, err := st.CreateAPIToken(ctx, owner.ID, "prober", []string{"*"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The spec's upgrade test: a function of a region the console runs is called every
	// second while the console's release is upgraded (and its bootstrap reconciles).
	var fp *functionProber
	if realPath {
		host := deployFunction(t, c, token)
		fp = waitFunction(t, c, host)
	} else {
		t.Log("no function probed during the upgrade: Traefik " + testcluster.TraefikVersion + " and Knative " + testcluster.KnativeRelease + " are not built on this machine (make test-real builds them)")
	}
	p := startProber(t, c, token)
	up := helmaction.NewUpgrade(cfg)
	up.Namespace, up.ReuseValues, up.Wait, up.Timeout = ns, true, true, 4*time.Minute
	started := time.Now()
	rel, err = up.RunWithContext(ctx, "runr", ch, map[string]any{"image": map[string]any{"tag": upgradeVersion},
		"env": map[string]any{"RUNR_AGENT_IMAGE": ownRegistry + "/agent:" + upgradeVersion}, "ingress": map[string]any{"enabled": true, "host": "runr.example.test"}})
	if err != nil {
		t.Fatalf("upgrade: %v\n%s", err, c.PodReport(ns, ""))
	}
	p.stop(t)
	if fp != nil {
		fp.stop(t)
		// The new version's bootstrap reconciled the region: its agent runs the new image.
		agent, err := c.Client.AppsV1().Deployments("observability").Get(ctx, "runr-agent", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if img := agent.Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(img, ":"+upgradeVersion) {
			t.Fatalf("the region's agent runs %s after the upgrade's reconcile, want version %s; the bootstrap's reconcile:\n%s", img, upgradeVersion, jobLogs(t, c, "runr-bootstrap", "reconcile"))
		}
	}
	if v := consoleVersion(t, c); v != upgradeVersion {
		t.Fatalf("after the upgrade the console answers version %q, want %q", v, upgradeVersion)
	}
	if got := appKey(t, c); got != key {
		t.Fatal("the upgrade changed APP_KEY")
	}
	if _, err := c.Client.NetworkingV1().Ingresses(ns).Get(ctx, "runr", metav1.GetOptions{}); err != nil {
		t.Fatalf("ingress after the upgrade: %v", err)
	}
	d, _ := c.Client.AppsV1().Deployments(ns).Get(ctx, "runr", metav1.GetOptions{})
	if env := envOf(d.Spec.Template.Spec.Containers[0].Env); env["RUNR_APP_URL"] != "https://runr.example.test" || env["RUNR_CHART_MIRROR"] != chartMirror {
		t.Fatalf("--reuse-values kept the install's values: %v", env)
	}
	for _, h := range rel.Hooks {
		if h.LastRun.StartedAt.Time.Before(started) || h.LastRun.Phase != release.HookPhaseSucceeded {
			t.Fatalf("hook %s did not run with the upgrade: %+v", h.Name, h.LastRun)
		}
	}
	checkHookOrder(t, rel, "pre-upgrade", "post-upgrade")
	checkRan(t, c, st)

	// A key that differs from the Secret's is refused, and nothing changes.
	up = helmaction.NewUpgrade(cfg)
	up.Namespace, up.ReuseValues = ns, true
	if _, err := up.RunWithContext(ctx, "runr", ch, map[string]any{"secret": map[string]any{"appKey": "bm90IHRoZSBrZXk="}}); err == nil || !strings.Contains(err.Error(), "differs from APP_KEY") {
		t.Fatalf("a new secret.appKey must be refused: %v", err)
	}

	// Uninstalled and installed again: the key is still the same.
	if _, err := helmaction.NewUninstall(cfg).Run("runr"); err != nil {
		t.Fatal(err)
	}
	if got := appKey(t, c); got != key {
		t.Fatal("the uninstall lost APP_KEY")
	}
	// (Without console pods and bootstrap this time: the key is what is checked.)
	in = helmaction.NewInstall(cfg)
	in.ReleaseName, in.Namespace, in.Wait, in.Timeout = "runr", ns, true, 4*time.Minute
	again := map[string]any{"replicaCount": 0, "bootstrap": map[string]any{"enabled": false}}
	for k, v := range vals {
		again[k] = v
	}
	if _, err := in.RunWithContext(ctx, ch, again); err != nil {
		t.Fatalf("install again: %v\n%s", err, c.PodReport(ns, ""))
	}
	if got := appKey(t, c); got != key {
		t.Fatal("a new install replaced APP_KEY")
	}
}

// exposeDatabase makes the test's PostgreSQL reachable from the cluster's pods and returns
// the database's URL as they reach it.
func exposeDatabase(t *testing.T, c *testcluster.Cluster, dbURL string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	inside, err := c.Expose(u.Host, 5432)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = inside
	return u.String()
}

// openStore opens the console's database with the release's APP_KEY.
func openStore(t *testing.T, dbURL, key string) *store.Store {
	t.Helper()
	cipher, err := crypt.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), dbURL, cipher)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// checkRan checks what the release's programs did: the migration Job migrated the database
// (no migration pending), the bootstrap Job made the first owner once and printed its
// password in the log of container first-admin, found nothing to encrypt, and ran
// reconcile, and both console pods run this release's image on the real node.
func checkRan(t *testing.T, c *testcluster.Cluster, st *store.Store) {
	t.Helper()
	ctx := context.Background()
	if n, err := st.PendingMigrations(ctx); err != nil || n != 0 {
		t.Fatalf("pending migrations after the migration Job: %d %v", n, err)
	}
	users, err := st.ListUsers(ctx)
	if err != nil || len(users) != 1 || users[0].Email != "admin@runr.local" || users[0].Role != "owner" {
		t.Fatalf("the bootstrap Job's owner: %v %+v", err, users)
	}
	migrate := jobLogs(t, c, "runr-migrate", "migrate")
	if !strings.Contains(strings.ToLower(migrate), "migrat") {
		t.Fatalf("the migration Job's log: %q", migrate)
	}
	if enc := jobLogs(t, c, "runr-bootstrap", "encrypt-secrets"); !strings.Contains(enc, "Encrypted 0 plaintext value(s)") {
		t.Fatalf("the bootstrap Job's secrets encrypt log: %q", enc)
	}
	if boot := jobLogs(t, c, "runr-bootstrap", "reconcile"); !strings.Contains(strings.ToLower(boot), "reconcile") {
		t.Fatalf("the bootstrap Job's reconcile log: %q", boot)
	}
	pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=runr,app.kubernetes.io/component!=migrate,app.kubernetes.io/component!=bootstrap"})
	if err != nil {
		t.Fatal(err)
	}
	running := 0
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Ready && p.DeletionTimestamp == nil && p.Spec.NodeName == testcluster.RealNodeName {
				running++
			}
		}
	}
	if running != 2 {
		t.Fatalf("%d console pods ready on the real node, want 2\n%s", running, c.PodReport(ns, ""))
	}
}

// jobLogs is the log of a container of a Job's pods.
func jobLogs(t *testing.T, c *testcluster.Cluster, job, container string) string {
	t.Helper()
	ctx := context.Background()
	pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, p := range pods.Items {
		raw, err := c.Client.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: container}).DoRaw(ctx)
		if err != nil {
			t.Fatalf("log of %s/%s: %v", p.Name, container, err)
		}
		b.Write(raw)
	}
	return b.String()
}

// consoleHost is the host of the chart's appURL: the API answers only for it.
const consoleHost = "runr.example.test"

// consoleRequest is a request to the console's Service as the cluster reaches it, for
// the console's host.
func consoleRequest(t *testing.T, c *testcluster.Cluster, method, path string, body io.Reader) *http.Request {
	t.Helper()
	svc, err := c.Client.CoreV1().Services(ns).Get(context.Background(), "runr", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, "http://"+svc.Spec.ClusterIP+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = consoleHost
	return req
}

// consoleVersion asks the console through its Service for its version.
func consoleVersion(t *testing.T, c *testcluster.Cluster) string {
	t.Helper()
	resp, err := c.InClusterHTTP().Do(consoleRequest(t, c, "GET", "/api/version", nil))
	if err != nil {
		t.Fatalf("the console through its Service: %v", err)
	}
	defer resp.Body.Close()
	var v struct{ Version string }
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != 200 {
		t.Fatalf("/api/version: %d %v", resp.StatusCode, err)
	}
	return v.Version
}

// prober calls the console's API through its Service every 100 ms with a token, while it
// watches the console's pods for the switch-over window.
type prober struct {
	done   chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex
	probes []probe
	// first old pod ending, last old pod gone
	windowFrom, windowTo time.Time
}

type probe struct {
	at  time.Time
	err string
}

func startProber(t *testing.T, c *testcluster.Cluster, token string) *prober {
	t.Helper()
	p := &prober{done: make(chan struct{})}
	client := c.InClusterHTTP()
	client.Timeout = 2 * time.Second
	ctx := context.Background()
	before, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=runr,!app.kubernetes.io/component"})
	if err != nil {
		t.Fatal(err)
	}
	old := map[string]bool{}
	for _, pod := range before.Items {
		old[pod.Name] = true
	}
	p.wg.Add(2)
	go func() {
		defer p.wg.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-tick.C:
			}
			at := time.Now()
			req := consoleRequest(t, c, "GET", "/api/me", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			pr := probe{at: at}
			if resp, err := client.Do(req); err != nil {
				pr.err = err.Error()
			} else {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					pr.err = resp.Status
				}
			}
			p.mu.Lock()
			p.probes = append(p.probes, pr)
			p.mu.Unlock()
		}
	}()
	go func() {
		defer p.wg.Done()
		for {
			select {
			case <-p.done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=runr,!app.kubernetes.io/component"})
			if err != nil {
				continue
			}
			left, ending := 0, false
			for _, pod := range pods.Items {
				if old[pod.Name] {
					left++
					ending = ending || pod.DeletionTimestamp != nil
				}
			}
			p.mu.Lock()
			if ending && p.windowFrom.IsZero() {
				p.windowFrom = time.Now()
			}
			if left == 0 && p.windowTo.IsZero() {
				p.windowTo = time.Now()
			}
			p.mu.Unlock()
		}
	}()
	return p
}

// stop ends the prober, reports the window and fails on a probe that failed outside it.
func (p *prober) stop(t *testing.T) {
	t.Helper()
	// Helm's wait ends with the new pods ready and the hooks done; the old pods may still
	// be draining (a console finishing a job it runs): the probes go on until they are gone.
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		p.mu.Lock()
		gone := !p.windowTo.IsZero()
		p.mu.Unlock()
		if gone {
			break
		}
	}
	close(p.done)
	p.wg.Wait()
	if p.windowFrom.IsZero() || p.windowTo.IsZero() {
		t.Fatalf("the old console pods did not end during the upgrade (window %v → %v)", p.windowFrom, p.windowTo)
	}
	failedIn := 0
	for _, pr := range p.probes {
		if pr.err == "" {
			continue
		}
		if pr.at.Before(p.windowFrom) || pr.at.After(p.windowTo) {
			t.Errorf("a probe at %s failed outside the switch-over window (%s → %s): %s",
				pr.at.Format("15:04:05.000"), p.windowFrom.Format("15:04:05.000"), p.windowTo.Format("15:04:05.000"), pr.err)
		} else {
			failedIn++
		}
	}
	t.Logf("chart upgrade: %d probes, switch-over window %s (first old pod ending → last gone), %d probes failed in it",
		len(p.probes), p.windowTo.Sub(p.windowFrom).Round(time.Millisecond), failedIn)
}

func envOf(env []corev1.EnvVar) map[string]string {
	out := map[string]string{}
	for _, e := range env {
		out[e.Name] = e.Value
	}
	return out
}

// checkInstalled checks the release's resources on the cluster.
func checkInstalled(t *testing.T, c *testcluster.Cluster, rel *release.Release) {
	t.Helper()
	ctx := context.Background()
	d, err := c.Client.AppsV1().Deployments(ns).Get(ctx, "runr", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ct := d.Spec.Template.Spec.Containers[0]
	if *d.Spec.Replicas != 2 || d.Status.ReadyReplicas != 2 || ct.ReadinessProbe.HTTPGet.Path != "/readyz" || ct.LivenessProbe.HTTPGet.Path != "/healthz" ||
		ct.Resources.Requests.Cpu().IsZero() || ct.Resources.Requests.Memory().IsZero() {
		t.Fatalf("deployment: replicas %d ready %d, container %+v", *d.Spec.Replicas, d.Status.ReadyReplicas, ct)
	}
	env := map[string]bool{}
	for _, e := range ct.Env {
		env[e.Name] = true
		if e.Name == "RUNR_APP_KEY" && (e.ValueFrom == nil || e.ValueFrom.SecretKeyRef.Name != "runr-secret") {
			t.Fatal("APP_KEY must come from runr-secret")
		}
	}
	if !env["DATABASE_URL"] || !env["RUNR_APP_KEY"] || !env["RUNR_SECURE_COOKIES"] {
		t.Fatalf("env: %v", env)
	}
	if _, err := c.Client.CoreV1().Services(ns).Get(ctx, "runr", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	pdb, err := c.Client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "runr", metav1.GetOptions{})
	if err != nil || pdb.Spec.MinAvailable.IntValue() != 1 {
		t.Fatalf("pdb: %v", err)
	}
	if _, err := c.Client.NetworkingV1().Ingresses(ns).Get(ctx, "runr", metav1.GetOptions{}); err == nil {
		t.Fatal("no Ingress by default")
	}
	mig, err := c.Client.BatchV1().Jobs(ns).Get(ctx, "runr-migrate", metav1.GetOptions{})
	if err != nil || *mig.Spec.ActiveDeadlineSeconds != 300 || mig.Status.Succeeded != 1 || mig.Spec.Template.Spec.Containers[0].Args[0] != "migrate" {
		t.Fatalf("migration job: %v", err)
	}
	if mig.CreationTimestamp.After(d.CreationTimestamp.Time) {
		t.Fatal("the migration Job must run before the Deployment exists")
	}
	boot, err := c.Client.BatchV1().Jobs(ns).Get(ctx, "runr-bootstrap", metav1.GetOptions{})
	if err != nil || boot.Status.Succeeded != 1 || boot.Spec.Template.Spec.InitContainers[0].Args[0] != "secrets" || boot.Spec.Template.Spec.InitContainers[1].Args[0] != "user" || boot.Spec.Template.Spec.Containers[0].Args[0] != "reconcile" {
		t.Fatalf("bootstrap job: %v", err)
	}
	checkHookOrder(t, rel, "pre-install", "post-install")
}

// checkHookOrder: runr-secret, then the migration Job (finished), both before the
// release's resources; the bootstrap Job after them.
func checkHookOrder(t *testing.T, rel *release.Release, pre, post release.HookEvent) {
	t.Helper()
	var names []string
	for _, h := range hookRuns(rel) {
		names = append(names, h.Kind+"/"+h.Name)
	}
	want := []string{"Secret/runr-secret", "Job/runr-migrate", "Job/runr-bootstrap"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("hooks ran in the order %v, want %v", names, want)
	}
	hs := hookRuns(rel)
	if !hs[1].LastRun.CompletedAt.Time.Before(hs[2].LastRun.StartedAt.Time) {
		t.Fatal("the bootstrap Job started before the migrations finished")
	}
	for i, ev := range []release.HookEvent{pre, pre, post} {
		found := false
		for _, e := range hs[i].Events {
			found = found || e == ev
		}
		if !found {
			t.Fatalf("hook %s runs on %v, want %s", hs[i].Name, hs[i].Events, ev)
		}
	}
}

// render renders the chart without a cluster (helm template), with extra API versions.
func render(t *testing.T, vals map[string]any, apiVersions ...string) (string, error) {
	t.Helper()
	in := helmaction.NewInstall(&helmaction.Configuration{})
	in.ReleaseName, in.Namespace, in.DryRun, in.ClientOnly, in.Replace = "runr", ns, true, true, true
	in.KubeVersion = &chartutil.KubeVersion{Version: "v1.36.3", Major: "1", Minor: "36"}
	in.APIVersions = append(chartutil.VersionSet{}, apiVersions...)
	rel, err := in.Run(loadChart(t), vals)
	if err != nil {
		return "", err
	}
	return rel.Manifest + hooksManifest(rel), nil
}

func hooksManifest(rel *release.Release) string {
	var b strings.Builder
	for _, h := range rel.Hooks {
		b.WriteString("\n---\n" + h.Manifest)
	}
	return b.String()
}

// TestChartRendering: the database choices and secret.create=false, as `helm template` renders them.
func TestChartRendering(t *testing.T) {
	if _, err := render(t, nil); err == nil || !strings.Contains(err.Error(), "database.url is required") {
		t.Fatalf("no database: %v", err)
	}
	if _, err := render(t, map[string]any{"postgresql": map[string]any{"bundled": true}}); err == nil || !strings.Contains(err.Error(), "CloudNativePG") {
		t.Fatalf("bundled without the operator: %v", err)
	}
	out, err := render(t, map[string]any{"postgresql": map[string]any{"bundled": true}}, "postgresql.cnpg.io/v1/Cluster")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "kind: Cluster") || !strings.Contains(out, "name: runr-postgres-app") || strings.Contains(out, "DATABASE_URL:") {
		t.Fatalf("bundled PostgreSQL:\n%s", out)
	}
	out, err = render(t, map[string]any{"secret": map[string]any{"create": false, "name": "my-runr"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "kind: Secret") || !strings.Contains(out, "name: my-runr") {
		t.Fatalf("secret.create=false:\n%s", out)
	}
	// Without cluster access a given key is used as it is.
	out, err = render(t, map[string]any{"secret": map[string]any{"appKey": "a2V5"}, "database": map[string]any{"url": "postgres://x"}})
	if err != nil || !strings.Contains(out, "APP_KEY: "+`"`+base64.StdEncoding.EncodeToString([]byte("a2V5"))+`"`) {
		t.Fatalf("secret.appKey: %v", err)
	}
}

// TestChartSpecValues: the values the spec names (knative.minK8sMinor, knative.traefikImage,
// quota.cpu, quota.memoryGiB, observability.tracing.* with the backend's images and chart
// versions, observability.replay.ingestUrl) reach the console's container as the
// environment it reads, and the console reads them as those settings.
func TestChartSpecValues(t *testing.T) {
	vals := map[string]any{"database": map[string]any{"url": "postgres://x"},
		"knative": map[string]any{"minK8sMinor": 31, "traefikImage": "registry.example.com/traefik:v3.7.4"},
		"quota":   map[string]any{"cpu": 24, "memoryGiB": 96.5},
		"observability": map[string]any{"tracing": map[string]any{"installWithServing": false, "tempoRetentionHours": 24,
			"collectorImage": "registry.example.com/mirror/opentelemetry-collector-contrib:0.162.0", "tempoImage": "registry.example.com/mirror/tempo:3.1.0",
			// 0.175.1, the chart of 0.5.0's, counts as empty; 3.3.0 pins Tempo's.
			"collectorChartVersion": "0.175.1", "tempoChartVersion": "3.3.0"},
			"replay": map[string]any{"ingestUrl": "https://replay.example.test/ingest"}}}
	out, err := render(t, vals)
	if err != nil {
		t.Fatal(err)
	}
	var env []corev1.EnvVar
	for _, doc := range strings.Split(out, "\n---") {
		var d appsv1.Deployment
		if yaml.Unmarshal([]byte(doc), &d) == nil && d.Kind == "Deployment" && len(d.Spec.Template.Spec.Containers) > 0 {
			env = d.Spec.Template.Spec.Containers[0].Env
		}
	}
	for _, e := range env {
		if e.ValueFrom == nil {
			t.Setenv(e.Name, e.Value)
		}
	}
	t.Setenv("RUNR_APP_KEY", base64.StdEncoding.EncodeToString(make([]byte, 32)))
	cfg, err := config.FromEnv()
	if err != nil {
		t.Fatalf("the console reads the chart's environment: %v", err)
	}
	if cfg.MinK8sMinor != 31 || cfg.TraefikImage != "registry.example.com/traefik:v3.7.4" || cfg.QuotaCPU != 24 || cfg.QuotaMemoryGiB != 96.5 ||
		!cfg.TracingOff || cfg.TracingRetentionHours != 24 || cfg.ReplayIngestURL != "https://replay.example.test/ingest" ||
		cfg.TracingCollectorImage != "registry.example.com/mirror/opentelemetry-collector-contrib:0.162.0" || cfg.TracingTempoImage != "registry.example.com/mirror/tempo:3.1.0" ||
		cfg.TracingCollectorChartVersion != "" || cfg.TracingTempoChartVersion != "3.3.0" {
		t.Fatalf("settings from the chart's values: %+v (env %v)", cfg, env)
	}
	// The defaults set nothing the console would not choose itself.
	out, err = render(t, map[string]any{"database": map[string]any{"url": "postgres://x"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"RUNR_MIN_K8S_MINOR", "RUNR_TRAEFIK_IMAGE", "RUNR_QUOTA_CPU", "RUNR_QUOTA_MEMORY_GIB", "RUNR_TRACING_DEFAULT_MODE", "RUNR_REPLAY_INGEST_URL",
		"RUNR_TRACING_COLLECTOR_IMAGE", "RUNR_TRACING_TEMPO_IMAGE", "RUNR_TRACING_COLLECTOR_CHART_VERSION", "RUNR_TRACING_TEMPO_CHART_VERSION"} {
		if strings.Contains(out, "name: "+name+"\n") {
			t.Errorf("the default values set %s", name)
		}
	}
}

// TestChartBranding: branding.* values reach the console's pods (names, a logo from a
// Secret key mounted as a file, a favicon data: URI, the 300–900 scale, the login texts),
// the console reads them back, and contradicting values stop the rendering.
func TestChartBranding(t *testing.T) {
	svg := `<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8" height="8" fill="#0f766e"/></svg>`
	favicon := "data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString([]byte(svg))
	palette := map[string]any{"300": "#5eead4", "400": "#2dd4bf", "500": "#14b8a6", "600": "#0d9488", "700": "#0f766e", "800": "#115e59", "900": "#134e4a"}
	vals := map[string]any{"database": map[string]any{"url": "postgres://x"},
		"branding": map[string]any{"productName": "Acme Cloud", "companyName": "Acme Inc.",
			"logo":    map[string]any{"secretKeyRef": map[string]any{"name": "acme-brand", "key": "logo.svg"}},
			"favicon": map[string]any{"url": favicon},
			"palette": palette,
			"login":   map[string]any{"title": "Welcome to Acme Cloud", "text": "Use your Acme account."}}}
	out, err := render(t, vals)
	if err != nil {
		t.Fatal(err)
	}
	var pod corev1.PodSpec
	for _, doc := range strings.Split(out, "\n---") {
		var d appsv1.Deployment
		if yaml.Unmarshal([]byte(doc), &d) == nil && d.Kind == "Deployment" {
			pod = d.Spec.Template.Spec
		}
		var j struct {
			Kind string `json:"kind"`
		}
		if yaml.Unmarshal([]byte(doc), &j) == nil && j.Kind == "Job" && strings.Contains(doc, "RUNR_BRANDING_") {
			t.Errorf("a Job gets the branding settings (it renders no page, and has no logo mounted):\n%s", doc)
		}
	}
	var mount *corev1.VolumeMount
	for i, m := range pod.Containers[0].VolumeMounts {
		if m.Name == "branding-logo" {
			mount = &pod.Containers[0].VolumeMounts[i]
		}
	}
	var vol *corev1.Volume
	for i, v := range pod.Volumes {
		if v.Name == "branding-logo" {
			vol = &pod.Volumes[i]
		}
	}
	if mount == nil || vol == nil || vol.Secret == nil || vol.Secret.SecretName != "acme-brand" || len(vol.Secret.Items) != 1 ||
		vol.Secret.Items[0].Key != "logo.svg" || mount.MountPath != "/etc/runr/branding/logo" {
		t.Fatalf("the logo's Secret key is mounted: mount %+v volume %+v", mount, vol)
	}
	// The console in the pod reads the mounted key: the same file under a test directory.
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "logo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "logo", vol.Secret.Items[0].Path), []byte(svg), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, e := range pod.Containers[0].Env {
		if e.ValueFrom == nil {
			t.Setenv(e.Name, strings.Replace(e.Value, "file:/etc/runr/branding", "file:"+dir, 1))
		}
	}
	t.Setenv("RUNR_APP_KEY", base64.StdEncoding.EncodeToString(make([]byte, 32)))
	cfg, err := config.FromEnv()
	if err != nil {
		t.Fatalf("the console reads the chart's branding: %v", err)
	}
	b := cfg.Branding
	if b.ProductName != "Acme Cloud" || b.CompanyName != "Acme Inc." || b.LoginTitle != "Welcome to Acme Cloud" || b.LoginText != "Use your Acme account." ||
		string(b.Logo.Data) != svg || b.Logo.ContentType != "image/svg+xml" || string(b.Favicon.Data) != svg || b.Palette == nil {
		t.Fatalf("branding from the chart: %+v", b)
	}
	for i, shade := range config.Shades {
		if want, ok := palette[fmt.Sprint(shade)]; ok && b.Palette[i].Hex() != want {
			t.Errorf("shade %d: %s, want %s", shade, b.Palette[i].Hex(), want)
		}
	}
	// One base colour or the scale, not both; a referenced logo needs its key.
	vals["branding"].(map[string]any)["primaryColor"] = "#0d9488"
	if _, err := render(t, vals); err == nil || !strings.Contains(err.Error(), "primaryColor or palette") {
		t.Fatalf("primaryColor and palette both set: %v", err)
	}
	if _, err := render(t, map[string]any{"database": map[string]any{"url": "postgres://x"},
		"branding": map[string]any{"logo": map[string]any{"configMapKeyRef": map[string]any{"name": "brand"}}}}); err == nil || !strings.Contains(err.Error(), "branding.logo.configMapKeyRef.key") {
		t.Fatalf("a ConfigMap reference without a key: %v", err)
	}
	// The defaults set none of it.
	out, err = render(t, map[string]any{"database": map[string]any{"url": "postgres://x"}})
	if err != nil || strings.Contains(out, "RUNR_BRANDING_") || strings.Contains(out, "branding-") {
		t.Fatalf("the default values brand the console: %v", err)
	}
}

// TestChartGateway: the console's pods name its Service as the in-cluster gateway (the
// agents of regions on its own cluster connect there) unless env sets another; without
// cluster access (helm template) the cluster's identity is left to the console.
func TestChartGateway(t *testing.T) {
	gateway := func(vals map[string]any) string {
		t.Helper()
		out, err := render(t, vals)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, "RUNR_CLUSTER_UID") {
			t.Fatal("a rendering without a cluster names a cluster identity")
		}
		for _, doc := range strings.Split(out, "\n---") {
			var d appsv1.Deployment
			if yaml.Unmarshal([]byte(doc), &d) == nil && d.Kind == "Deployment" {
				for _, e := range d.Spec.Template.Spec.Containers[0].Env {
					if e.Name == "RUNR_GATEWAY_URL" {
						return e.Value
					}
				}
			}
		}
		return ""
	}
	if got := gateway(map[string]any{"database": map[string]any{"url": "postgres://x"}}); got != "http://runr.runr.svc:80" {
		t.Fatalf("the default gateway: %q", got)
	}
	if got := gateway(map[string]any{"database": map[string]any{"url": "postgres://x"}, "env": map[string]any{"RUNR_GATEWAY_URL": "http://gw.internal:8080"}}); got != "http://gw.internal:8080" {
		t.Fatalf("a gateway of one's own: %q", got)
	}
}

// TestChartConsoleCertificate: with an Ingress with TLS the console learns its own
// certificate's Secret (RUNR_TLS_SECRET, namespace/name), which Function TLS offers to the
// regions on its cluster; without TLS it has none.
func TestChartConsoleCertificate(t *testing.T) {
	secret := func(vals map[string]any) string {
		t.Helper()
		out, err := render(t, vals)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(out, "\n---") {
			var d appsv1.Deployment
			if yaml.Unmarshal([]byte(doc), &d) == nil && d.Kind == "Deployment" {
				for _, e := range d.Spec.Template.Spec.Containers[0].Env {
					if e.Name == "RUNR_TLS_SECRET" {
						return e.Value
					}
				}
			}
		}
		return ""
	}
	db := map[string]any{"url": "postgres://x"}
	if got := secret(map[string]any{"database": db}); got != "" {
		t.Fatalf("without an Ingress: %q", got)
	}
	tls := map[string]any{"enabled": true, "host": "runr.example.com", "tls": []any{map[string]any{"secretName": "runr-tls", "hosts": []any{"runr.example.com"}}}}
	if got := secret(map[string]any{"database": db, "ingress": tls}); got != "runr/runr-tls" {
		t.Fatalf("with the Ingress's TLS: %q, want runr/runr-tls", got)
	}
	if got := secret(map[string]any{"database": db, "ingress": map[string]any{"enabled": true, "host": "runr.example.com"}}); got != "" {
		t.Fatalf("an Ingress without TLS: %q", got)
	}
}

// TestChartBilling: billing.enabled, billing.webhookUrl and billing.webhookSecret reach the
// console as RUNR_BILLING, RUNR_BILLING_WEBHOOK_URL and, through the chart's Secret,
// RUNR_BILLING_WEBHOOK_SECRET; the console reads them; the defaults set none of them.
func TestChartBilling(t *testing.T) {
	const hook, secret = "https://billing.example.test/runr-events", "whsec-chart-0123456789"
	out, err := render(t, map[string]any{"database": map[string]any{"url": "postgres://x"},
		"billing": map[string]any{"enabled": true, "webhookUrl": hook, "webhookSecret": secret}})
	if err != nil {
		t.Fatal(err)
	}
	var env []corev1.EnvVar
	var sealed []byte
	for _, doc := range strings.Split(out, "\n---") {
		var d appsv1.Deployment
		if yaml.Unmarshal([]byte(doc), &d) == nil && d.Kind == "Deployment" && len(d.Spec.Template.Spec.Containers) > 0 {
			env = d.Spec.Template.Spec.Containers[0].Env
		}
		var s corev1.Secret
		if yaml.Unmarshal([]byte(doc), &s) == nil && s.Kind == "Secret" {
			sealed = s.Data["BILLING_WEBHOOK_SECRET"]
		}
	}
	if string(sealed) != secret {
		t.Fatalf("the chart's Secret holds the webhook secret as %q", sealed)
	}
	fromSecret := false
	for _, e := range env {
		switch {
		case e.ValueFrom == nil:
			t.Setenv(e.Name, e.Value)
		case e.Name == "RUNR_BILLING_WEBHOOK_SECRET" && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Key == "BILLING_WEBHOOK_SECRET":
			fromSecret = true
			t.Setenv(e.Name, string(sealed))
		}
		if strings.Contains(e.Value, secret) {
			t.Fatalf("the webhook secret is in the Deployment as %s", e.Name)
		}
	}
	if !fromSecret {
		t.Fatalf("RUNR_BILLING_WEBHOOK_SECRET does not come from the Secret: %v", env)
	}
	t.Setenv("RUNR_APP_KEY", base64.StdEncoding.EncodeToString(make([]byte, 32)))
	cfg, err := config.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Billing || cfg.BillingWebhookURL != hook || cfg.BillingWebhookSecret != secret {
		t.Fatalf("billing settings from the chart: %v %q", cfg.Billing, cfg.BillingWebhookURL)
	}
	out, err = render(t, map[string]any{"database": map[string]any{"url": "postgres://x"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"RUNR_BILLING", "RUNR_BILLING_WEBHOOK_URL", "RUNR_BILLING_WEBHOOK_SECRET", "BILLING_WEBHOOK_SECRET"} {
		if strings.Contains(out, name+"\n") || strings.Contains(out, name+":") {
			t.Errorf("the default values set %s", name)
		}
	}
}
