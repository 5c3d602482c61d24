// Package deploy holds the console's Helm chart (deploy/chart); its test installs the
// chart with the Helm SDK into a simulated cluster.
package deploy

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	helmaction "helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"

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

// TestChartInstallAndUpgrade installs the chart into a simulated cluster, checks its
// resources and the order of its hooks (runr-secret, then the migration Job before any
// console pod, then the bootstrap Job after the rollout), upgrades it with --reuse-values
// and checks that APP_KEY survived, that a different secret.appKey is refused, and that
// the key survives an uninstall and a new install.
func TestChartInstallAndUpgrade(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	cfg := helmConfig(t, c)
	ch := loadChart(t)
	ctx := context.Background()

	in := helmaction.NewInstall(cfg)
	in.ReleaseName, in.Namespace, in.CreateNamespace, in.Wait, in.Timeout = "runr", ns, true, true, 3*time.Minute
	vals := map[string]any{"appURL": "https://runr.example.test",
		"database": map[string]any{"url": "postgres://runr:pw@db.example.test:5432/runr?sslmode=require"},
		"env":      map[string]any{"RUNR_CHART_MIRROR": "https://charts.example.test"}}
	rel, err := in.RunWithContext(ctx, ch, vals)
	if err != nil {
		t.Fatalf("install: %v", err)
	}
	checkInstalled(t, c, rel)
	key := appKey(t, c)
	if raw, err := base64.StdEncoding.DecodeString(key); err != nil || len(raw) != 32 {
		t.Fatalf("APP_KEY %q is not 32 random bytes in base64", key)
	}

	// helm upgrade --reuse-values --set ingress.enabled=true
	up := helmaction.NewUpgrade(cfg)
	up.Namespace, up.ReuseValues, up.Wait, up.Timeout = ns, true, true, 3*time.Minute
	started := time.Now()
	rel, err = up.RunWithContext(ctx, "runr", ch, map[string]any{"ingress": map[string]any{"enabled": true, "host": "runr.example.test"}})
	if err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	if got := appKey(t, c); got != key {
		t.Fatal("the upgrade changed APP_KEY")
	}
	if _, err := c.Client.NetworkingV1().Ingresses(ns).Get(ctx, "runr", metav1.GetOptions{}); err != nil {
		t.Fatalf("ingress after the upgrade: %v", err)
	}
	d, _ := c.Client.AppsV1().Deployments(ns).Get(ctx, "runr", metav1.GetOptions{})
	if env := envOf(d.Spec.Template.Spec.Containers[0].Env); env["RUNR_APP_URL"] != "https://runr.example.test" || env["RUNR_CHART_MIRROR"] != "https://charts.example.test" {
		t.Fatalf("--reuse-values kept the install's values: %v", env)
	}
	for _, h := range rel.Hooks {
		if h.LastRun.StartedAt.Time.Before(started) || h.LastRun.Phase != release.HookPhaseSucceeded {
			t.Fatalf("hook %s did not run with the upgrade: %+v", h.Name, h.LastRun)
		}
	}
	checkHookOrder(t, rel, "pre-upgrade", "post-upgrade")

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
	in = helmaction.NewInstall(cfg)
	in.ReleaseName, in.Namespace, in.Wait, in.Timeout = "runr", ns, true, 3*time.Minute
	if _, err := in.RunWithContext(ctx, ch, vals); err != nil {
		t.Fatalf("install again: %v", err)
	}
	if got := appKey(t, c); got != key {
		t.Fatal("a new install replaced APP_KEY")
	}
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
	if err != nil || boot.Status.Succeeded != 1 || boot.Spec.Template.Spec.InitContainers[0].Args[0] != "user" || boot.Spec.Template.Spec.Containers[0].Args[0] != "reconcile" {
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
