// Package realnode runs what the console puts into a cluster on a real node
// (testcluster.Options.RealNode: a kubelet, containerd and runc in the cluster's private
// network namespace), from the images `make images` builds: the runr-agent, the node
// mirror, the pre-pull, the status responder, the domain alias proxy, containerd's restart
// and reconcile's move of them to a new version. Each test checks what the program did.
// The rest of a region (the stand-in charts) stays on simulated nodes beside the real one.
package realnode

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"runr.dev/console/config"
	"runr.dev/console/images"
	"runr.dev/console/ops/data"
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/observability"
	"runr.dev/console/ops/reconcile"
	"runr.dev/console/ops/registry"
	"runr.dev/console/store"
	"runr.dev/console/testcluster"
	"runr.dev/console/web/webtest"
)

// repo is the stand-in chart repository of the package.
var repo *testcluster.ChartRepo

// version stamps the console's images of this checkout for the suite.
const version = "0.0.0-realnode"

func TestMain(m *testing.M) {
	var err error
	if repo, err = testcluster.StartChartRepo(""); err != nil {
		fmt.Fprintln(os.Stderr, "realnode: chart repository:", err)
		os.Exit(1)
	}
	code := m.Run()
	repo.Close()
	os.Exit(code)
}

// realCluster is a cluster with a real node (beside the simulated nodes of opts.Nodes) whose
// registry holds the console's images at version.
func realCluster(t *testing.T, opts testcluster.Options) *testcluster.Cluster {
	t.Helper()
	if missing := testcluster.RealNodeMissing(); len(missing) > 0 {
		t.Fatalf("a real node needs the Debian packages %v (make test installs them)", missing)
	}
	built, err := testcluster.ConsoleImages(version)
	if err != nil {
		t.Fatal(err)
	}
	opts.RealNode = true
	c := testcluster.New(t, opts)
	if err := c.PushImages(context.Background(), built); err != nil {
		t.Fatal(err)
	}
	return c
}

// consoleOn starts a console for the cluster: its own images at version, the stand-in
// charts, and an address the cluster's pods reach it at (the agent's).
func consoleOn(t *testing.T, c *testcluster.Cluster, tweak func(*config.Config)) *webtest.Env {
	t.Helper()
	e := webtest.New(t, func(cfg *config.Config) {
		cfg.ChartMirror = repo.URL
		cfg.StorageTestTimeout = 20 * time.Second
		cfg.InstallTimeout = 2 * time.Minute
		cfg.StatusInterval = time.Hour
		cfg.AgentImage = config.OwnImage(images.Agent, version)
		cfg.ResponderImage = cfg.AgentImage
		if tweak != nil {
			tweak(cfg)
		}
	})
	e.Run()
	// The console pulls every image it installs through the cluster's registry as an
	// administrator's image mirror would have them (the product's own feature, nothing
	// of the console knows it is under test).
	mirror := testcluster.ImageMirror
	if err := e.Kube.Reconcile.UpdatePlatformSettings(context.Background(), kit.Actor{Email: "realnode@example.com"}, reconcile.PlatformSettingsInput{ImageMirror: &mirror}); err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(e.Listen(), "http://")
	_, port, _ := net.SplitHostPort(addr)
	var p int
	fmt.Sscan(port, &p)
	inside, err := c.Expose(addr, p)
	if err != nil {
		t.Fatal(err)
	}
	e.Cfg.AgentWSURL = "ws://" + inside
	clusters[e] = c
	t.Cleanup(func() { delete(clusters, e) })
	return e
}

// action posts to a region's route and waits for its job to end.
func action(t *testing.T, e *webtest.Env, tok, regionID, route string, body any) *store.Job {
	t.Helper()
	var ans struct {
		JobID  string `json:"job_id"`
		Error  string
		Fields map[string]string
	}
	if st := e.JSON("POST", "/api/knative-regions/"+regionID+"/"+route, tok, body, &ans); st != 202 {
		t.Fatalf("%s: %d %+v", route, st, ans)
	}
	return e.WaitJob(ans.JobID, 5*time.Minute)
}

// mustSucceed fails the test with the job's log, and what the pods of the console's
// namespaces on the real node do, when it did not succeed.
func mustSucceed(t *testing.T, e *webtest.Env, j *store.Job) {
	t.Helper()
	if j.Status != store.JobSucceeded {
		var pods strings.Builder
		if c := clusters[e]; c != nil {
			for _, ns := range []string{registry.Namespace, data.DataNamespace, observability.ObservabilityNamespace} {
				pods.WriteString(c.PodReport(ns, ""))
			}
		}
		t.Fatalf("%s: %s: %s\n%s\n%s", j.Kind, j.Status, j.Error, jobLog(t, e, j.ID), pods.String())
	}
}

// clusters are the clusters of the consoles (consoleOn), for the reports of failures.
var clusters = map[*webtest.Env]*testcluster.Cluster{}

// jobLog is a job's log, one event a line with its time.
func jobLog(t *testing.T, e *webtest.Env, id string) string {
	t.Helper()
	evs, err := e.Store.JobEvents(context.Background(), id, 0, 5000)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "%s %s\n", ev.CreatedAt.Format("15:04:05.000"), ev.Message)
	}
	return b.String()
}

// eventually waits for cond, failing with what after the timeout.
func eventually(t *testing.T, timeout time.Duration, what func() string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s: %s", timeout, what())
		}
		time.Sleep(250 * time.Millisecond)
	}
}
