package apitest

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"runr.dev/console/ops/projects"
	"runr.dev/console/store"
	"runr.dev/console/testcluster"
	"runr.dev/console/web/webtest"
)

var kserviceGVR = schema.GroupVersionResource{Group: "serving.knative.dev", Version: "v1", Resource: "services"}

// kindProject creates a project of a kind through the API and returns its id and slug.
func kindProject(t *testing.T, e *webtest.Env, tok string, body map[string]any) (string, string) {
	t.Helper()
	var ans struct {
		Data   struct{ ID, Slug string }
		Fields map[string]string
	}
	if st := e.JSON("POST", "/api/projects", tok, body, &ans); st != 201 {
		t.Fatalf("create %v: %d %+v", body["kind"], st, ans)
	}
	return ans.Data.ID, ans.Data.Slug
}

// envOf is a container's env by name.
func envOf(c corev1.Container) map[string]corev1.EnvVar {
	out := map[string]corev1.EnvVar{}
	for _, v := range c.Env {
		out[v.Name] = v
	}
	return out
}

// gone reports a NotFound answer.
func gone(err error) bool { return apierrors.IsNotFound(err) }

// TestProjectKindsAndDemoProjects: queue workers and scheduled jobs validate, deploy,
// stop, resume and delete as their own workloads, with the region's Redis through a
// Secret only; the demo projects are refused (422 naming the missing prerequisite and
// creating nothing) while the region has no registry, install the four projects and the SMTP
// catcher, install again without duplicates, and are removed exactly (the user's
// projects stay).
func TestProjectKindsAndDemoProjects(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	e, tok, r, u := dataRegion(t, c, "demo")
	ctx := context.Background()
	ns := r.Name

	// Validation: each kind asks for what it needs.
	var bad struct {
		Fields map[string]string
	}
	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"kind": "queue_worker"}, "queue_stream"},
		{map[string]any{"kind": "queue_worker", "queue_stream": "no spaces"}, "queue_stream"},
		{map[string]any{"kind": "scheduled_job"}, "schedule"},
		{map[string]any{"kind": "scheduled_job", "schedule": "every day"}, "schedule"},
		{map[string]any{"kind": "http", "schedule": "0 3 * * *"}, "schedule"},
		{map[string]any{"kind": "batch"}, "kind"},
	} {
		tc.body["name"], tc.body["region_id"], tc.body["image"] = "x", r.ID, "ghcr.io/acme/x:1"
		if st := e.JSON("POST", "/api/projects", tok, tc.body, &bad); st != 422 || bad.Fields[tc.field] == "" {
			t.Errorf("%v: %d %+v, want 422 on %s", tc.body, st, bad, tc.field)
		}
	}
	if ps, _ := e.Store.ListProjects(ctx, r.ID); len(ps) != 0 {
		t.Fatalf("refused projects were recorded: %d", len(ps))
	}

	// A queue worker: a Deployment with the region's Redis through its Secret.
	worker, workerSlug := kindProject(t, e, tok, map[string]any{"name": "orders worker", "region_id": r.ID, "image": "ghcr.io/acme/worker:1",
		"kind": "queue_worker", "queue_stream": "orders"})
	projectAction(t, e, tok, worker, "deploy")
	d, err := c.Client.AppsV1().Deployments(ns).Get(ctx, workerSlug, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the queue worker's Deployment: %v", err)
	}
	env := envOf(d.Spec.Template.Spec.Containers[0])
	if env["QUEUE_STREAM"].Value != "orders" || env["REDIS_PASSWORD"].ValueFrom == nil || env["REDIS_PASSWORD"].ValueFrom.SecretKeyRef.Name != projects.QueueSecretName(workerSlug) {
		t.Fatalf("the worker's env: %+v", env)
	}
	sec, err := c.Client.CoreV1().Secrets(ns).Get(ctx, projects.QueueSecretName(workerSlug), metav1.GetOptions{})
	if err != nil || string(sec.Data["password"]) != r.RedisPassword || string(sec.Data["address"]) != r.RedisAddress {
		t.Fatalf("the worker's Redis Secret: %v", err)
	}
	if _, raw := e.Raw("GET", "/api/projects/"+worker, tok, ""); strings.Contains(raw, r.RedisPassword) || !strings.Contains(raw, `"kind":"queue_worker"`) {
		t.Fatalf("the worker's API answer: %s", raw)
	}
	if strings.Contains(e.Log.String(), r.RedisPassword) {
		t.Fatal("the console logged the region's Redis password")
	}
	projectAction(t, e, tok, worker, "stop")
	if _, err := c.Client.AppsV1().Deployments(ns).Get(ctx, workerSlug, metav1.GetOptions{}); !gone(err) {
		t.Fatalf("a stopped worker's Deployment: %v", err)
	}
	projectAction(t, e, tok, worker, "resume")
	if _, err := c.Client.AppsV1().Deployments(ns).Get(ctx, workerSlug, metav1.GetOptions{}); err != nil {
		t.Fatalf("a resumed worker's Deployment: %v", err)
	}

	// A scheduled job: a CronJob on its schedule, gone with the project.
	nightly, nightlySlug := kindProject(t, e, tok, map[string]any{"name": "nightly report", "region_id": r.ID, "image": "ghcr.io/acme/report:1",
		"kind": "scheduled_job", "schedule": "0 3 * * *"})
	projectAction(t, e, tok, nightly, "deploy")
	cj, err := c.Client.BatchV1().CronJobs(ns).Get(ctx, nightlySlug, metav1.GetOptions{})
	if err != nil || cj.Spec.Schedule != "0 3 * * *" {
		t.Fatalf("the scheduled job's CronJob: %v %+v", err, cj)
	}
	var del struct {
		JobID string `json:"job_id"`
	}
	if st := e.JSON("DELETE", "/api/projects/"+nightly, tok, nil, &del); st != 202 {
		t.Fatalf("delete the scheduled job: %d", st)
	}
	mustSucceed(t, e.WaitJob(del.JobID, 2*time.Minute))
	if _, err := c.Client.BatchV1().CronJobs(ns).Get(ctx, nightlySlug, metav1.GetOptions{}); !gone(err) {
		t.Fatalf("a deleted scheduled job's CronJob: %v", err)
	}

	// Demo projects: refused while the region has no registry, naming it, and nothing is made.
	var refused struct{ Error string }
	if st := e.JSON("POST", "/api/knative-regions/"+r.ID+"/demo-projects", tok, nil, &refused); st != 422 || !strings.Contains(refused.Error, "the registry (not installed)") {
		t.Fatalf("demo projects without a registry: %d %+v", st, refused)
	}
	cli := newCLIUser(t, e.Listen(), tok)
	if _, errOut, code := cli.run("regions", "demo", "install", "demo"); code == 0 || !strings.Contains(errOut, "the registry (not installed)") {
		t.Fatalf("runr regions demo install without a registry: exit %d: %s", code, errOut)
	}
	if ps, _ := e.Store.DemoProjects(ctx, r.ID); len(ps) != 0 {
		t.Fatalf("a refused demo install recorded %d projects", len(ps))
	}
	if _, err := c.Client.AppsV1().Deployments(ns).Get(ctx, projects.DemoSMTPName, metav1.GetOptions{}); !gone(err) {
		t.Fatalf("a refused demo install made the SMTP catcher: %v", err)
	}
	br := e.NewBrowser()
	br.Login(u.Email, "password-of-owner")
	if _, page := br.Get("/regions/" + r.ID + "/tabs/general"); !strings.Contains(page, `data-testid="demo-missing"`) ||
		!strings.Contains(page, "the registry (not installed)") || strings.Contains(page, "/demo-projects/install") {
		t.Fatalf("the General tab must say what the demos lack and offer no install:\n%s", page)
	}
	mustSucceed(t, action(t, e, tok, r.ID, "registry", map[string]any{"registry_mode": "internal", "storage_type": "pvc",
		"pvc_config": map[string]any{"storageClass": "standard", "size": "1Gi"}}))

	// Installed: the four projects of their kinds, running, and the SMTP catcher.
	demo := func() []struct {
		ID, Slug, Kind, State, Schedule string
		QueueStream                     string            `json:"queue_stream"`
		EnvVars                         map[string]string `json:"env_vars"`
	} {
		var ans struct {
			Data []struct {
				ID, Slug, Kind, State, Schedule string
				QueueStream                     string            `json:"queue_stream"`
				EnvVars                         map[string]string `json:"env_vars"`
			}
			Missing string
		}
		if st := e.JSON("GET", "/api/knative-regions/"+r.ID+"/demo-projects", tok, nil, &ans); st != 200 {
			t.Fatalf("demo projects: %d", st)
		}
		return ans.Data
	}
	install := func() {
		var ans struct {
			JobID string `json:"job_id"`
			Error string
		}
		if st := e.JSON("POST", "/api/knative-regions/"+r.ID+"/demo-projects", tok, nil, &ans); st != 202 {
			t.Fatalf("install the demo projects: %d %s", st, ans.Error)
		}
		mustSucceed(t, e.WaitJob(ans.JobID, 3*time.Minute))
	}
	install()
	ds := demo()
	var kinds []string
	for _, p := range ds {
		kinds = append(kinds, p.Kind)
		if p.State != string(store.ProjectRunning) || p.QueueStream != projects.DemoStream(r) {
			t.Errorf("demo project %s: %+v", p.Slug, p)
		}
	}
	sort.Strings(kinds)
	if strings.Join(kinds, ",") != "http,http,queue_worker,scheduled_job" {
		t.Fatalf("demo project kinds: %v", kinds)
	}
	var backend, frontend, mailer, stats, backendURL string
	for _, p := range ds {
		switch {
		case strings.Contains(p.Slug, "backend"):
			backend = p.Slug
		case strings.Contains(p.Slug, "frontend"):
			frontend, backendURL = p.Slug, p.EnvVars["BACKEND_URL"]
		case p.Kind == "queue_worker":
			mailer = p.Slug
		case p.Kind == "scheduled_job":
			stats = p.Slug
		}
	}
	if want := "http://" + backend + "." + ns + ".svc.cluster.local"; backendURL != want {
		t.Errorf("the frontend's BACKEND_URL: %q, want %q", backendURL, want)
	}
	for _, ks := range []string{backend, frontend} {
		if _, err := c.DynamicGet(ctx, kserviceGVR, ns, ks); err != nil {
			t.Errorf("demo Knative Service %s: %v", ks, err)
		}
	}
	md, err := c.Client.AppsV1().Deployments(ns).Get(ctx, mailer, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the demo mailer: %v", err)
	}
	if !strings.HasSuffix(envOf(md.Spec.Template.Spec.Containers[0])["SMTP_HOST"].Value, projects.DemoSMTPName+"."+ns+".svc.cluster.local") {
		t.Errorf("the mailer sends elsewhere: %+v", md.Spec.Template.Spec.Containers[0].Env)
	}
	if cj, err := c.Client.BatchV1().CronJobs(ns).Get(ctx, stats, metav1.GetOptions{}); err != nil || cj.Spec.Schedule != "*/5 * * * *" {
		t.Fatalf("the demo statistics: %v", err)
	}
	for _, get := range []func() error{
		func() error {
			_, err := c.Client.AppsV1().Deployments(ns).Get(ctx, projects.DemoSMTPName, metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := c.Client.CoreV1().Services(ns).Get(ctx, projects.DemoSMTPName, metav1.GetOptions{})
			return err
		},
	} {
		if err := get(); err != nil {
			t.Fatalf("the SMTP catcher: %v", err)
		}
	}

	if _, page := br.Get("/regions/" + r.ID + "/tabs/general"); strings.Count(page, "<td>Queue worker</td>") != 1 || strings.Count(page, "<td>Scheduled job</td>") != 1 ||
		!strings.Contains(page, "/demo-projects/remove") || strings.Contains(page, `data-testid="demo-missing"`) {
		t.Fatalf("the General tab lists the demo projects and offers their removal:\n%s", page)
	}

	// Installing again (here with the CLI) deploys the same four.
	cli.must("regions", "demo", "install", "demo", "--wait")
	if again := demo(); len(again) != 4 {
		t.Fatalf("a second install made %d demo projects", len(again))
	}

	// Removed: exactly what the demos created; the user's worker keeps running.
	var rm struct {
		JobID string `json:"job_id"`
	}
	if st := e.JSON("DELETE", "/api/knative-regions/"+r.ID+"/demo-projects", tok, nil, &rm); st != 202 {
		t.Fatalf("remove the demo projects: %d", st)
	}
	mustSucceed(t, e.WaitJob(rm.JobID, 3*time.Minute))
	if left := demo(); len(left) != 0 {
		t.Fatalf("demo projects left: %+v", left)
	}
	for _, ks := range []string{backend, frontend} {
		if _, err := c.DynamicGet(ctx, kserviceGVR, ns, ks); !gone(err) {
			t.Errorf("demo Knative Service %s after removal: %v", ks, err)
		}
	}
	if _, err := c.Client.AppsV1().Deployments(ns).Get(ctx, mailer, metav1.GetOptions{}); !gone(err) {
		t.Errorf("the demo mailer after removal: %v", err)
	}
	if _, err := c.Client.BatchV1().CronJobs(ns).Get(ctx, stats, metav1.GetOptions{}); !gone(err) {
		t.Errorf("the demo statistics after removal: %v", err)
	}
	if _, err := c.Client.AppsV1().Deployments(ns).Get(ctx, projects.DemoSMTPName, metav1.GetOptions{}); !gone(err) {
		t.Errorf("the SMTP catcher after removal: %v", err)
	}
	if _, err := c.Client.CoreV1().Secrets(ns).Get(ctx, projects.QueueSecretName(mailer), metav1.GetOptions{}); !gone(err) {
		t.Errorf("the mailer's Redis Secret after removal: %v", err)
	}
	if j, err := c.Client.BatchV1().Jobs(ns).Get(ctx, "runr-demo-forget", metav1.GetOptions{}); err != nil || j.Status.Succeeded != 1 {
		t.Errorf("the Job that deletes the demo's stream: %v", err)
	}
	if _, err := c.Client.AppsV1().Deployments(ns).Get(ctx, workerSlug, metav1.GetOptions{}); err != nil {
		t.Errorf("the user's worker after the demos' removal: %v", err)
	}
	if p, err := e.Store.ProjectByID(ctx, worker); err != nil || p.State != store.ProjectRunning {
		t.Errorf("the user's worker record after the demos' removal: %v", err)
	}
}
