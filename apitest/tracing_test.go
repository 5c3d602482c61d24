package apitest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/config"
	"runr.dev/console/helm"
	"runr.dev/console/ops/observability"
	"runr.dev/console/store"
	"runr.dev/console/testcluster"
	"runr.dev/console/web/webtest"
)

// TestTracingModePerRegion: a region's tracing mode (the spec's DELETE and choosing a
// mode): removing the backend sets the region's mode off and reconcile does not bring
// it back; on a cluster shared with a region that keeps tracing on, the backend stays
// for that region; once no region wants it, it goes; choosing "on" brings it back. A bad
// mode is refused and changes nothing.
func TestTracingModePerRegion(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	e := console(t, nil)
	_, tok := e.User("owner")
	ctx := context.Background()
	first := newRegion(t, e, tok, c, "tr1", nil)
	mustSucceed(t, action(t, e, tok, first.ID, "install-knative", nil))
	second := newRegion(t, e, tok, c, "tr2", nil)
	mustSucceed(t, action(t, e, tok, second.ID, "install-knative", nil))
	cl, err := e.Kube.ClusterFor(c.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	backend := func() (tempo, otel bool) {
		t.Helper()
		a, err := helm.Status(cl, observability.ObservabilityNamespace, observability.TempoRelease)
		if err != nil {
			t.Fatal(err)
		}
		b, err := helm.Status(cl, observability.ObservabilityNamespace, observability.OtelRelease)
		if err != nil {
			t.Fatal(err)
		}
		return a != nil, b != nil
	}
	if tempo, otel := backend(); !tempo || !otel {
		t.Fatalf("the Serving install's tracing backend: tempo %v, collector %v", tempo, otel)
	}
	set := func(method, id string, body any) *store.Job {
		t.Helper()
		var ans struct {
			JobID string `json:"job_id"`
		}
		if st := e.JSON(method, "/api/observability/regions/"+id+"/tracing", tok, body, &ans); st != 202 {
			t.Fatalf("%s tracing: %d", method, st)
		}
		j := e.WaitJob(ans.JobID, 2*time.Minute)
		mustSucceed(t, j)
		return j
	}
	var refused struct{ Fields map[string]string }
	if st := e.JSON("PUT", "/api/observability/regions/"+first.ID+"/tracing", tok, map[string]any{"mode": "sometimes"}, &refused); st != 422 || refused.Fields["mode"] == "" {
		t.Fatalf("a bad tracing mode: %d %+v", st, refused)
	}
	if r, _ := e.Store.RegionByID(ctx, first.ID); r.TracingMode != store.TracingDefault {
		t.Fatalf("the refused mode changed the region's: %q", r.TracingMode)
	}

	// The first region removes it: the second still has tracing on, so the backend stays.
	j := set("DELETE", first.ID, nil)
	if tempo, otel := backend(); !tempo || !otel {
		t.Fatal("the backend went although the other region of the cluster has tracing on")
	}
	if log := jobLogOf(t, e, j.ID); !strings.Contains(log, "the backend stays for tr2") {
		t.Fatalf("the removal does not say why the backend stays:\n%s", log)
	}
	var got struct{ Data map[string]any }
	e.JSON("GET", "/api/knative-regions/"+first.ID, tok, nil, &got)
	if got.Data["tracing_mode"] != "off" {
		t.Fatalf("tracing_mode %v", got.Data["tracing_mode"])
	}
	// The second turns it off too: the backend goes, and reconcile does not install it again.
	set("PUT", second.ID, map[string]any{"mode": "off"})
	if tempo, otel := backend(); tempo || otel {
		t.Fatalf("no region has tracing on, yet tempo %v, collector %v", tempo, otel)
	}
	if r, _ := e.Store.RegionByID(ctx, second.ID); r.Component("tracing").Status != store.ComponentNotInstalled {
		t.Fatalf("the tracing component after its removal: %s", r.Component("tracing").Status)
	}
	var rec struct {
		JobID string `json:"job_id"`
	}
	if st := e.JSON("POST", "/api/reconcile", tok, map[string]any{"step": "tracing"}, &rec); st != 202 {
		t.Fatalf("reconcile: %d", st)
	}
	mustSucceed(t, e.WaitJob(rec.JobID, 2*time.Minute))
	if tempo, otel := backend(); tempo || otel {
		t.Fatal("reconcile installed the tracing backend where every region has tracing off")
	}
	// Choosing a mode brings it back.
	set("PUT", first.ID, map[string]any{"mode": "on"})
	if tempo, otel := backend(); !tempo || !otel {
		t.Fatalf("tracing on again: tempo %v, collector %v", tempo, otel)
	}
	if r, _ := e.Store.RegionByID(ctx, first.ID); r.TracingMode != store.TracingOn || r.Component("tracing").Status != store.ComponentReady {
		t.Fatalf("the first region after tracing on: %q %s", r.TracingMode, r.Component("tracing").Status)
	}

	// Retention: the cluster's first region with tracing on decides the backend's.
	retention := func() string {
		t.Helper()
		rel, err := helm.Status(cl, observability.ObservabilityNamespace, observability.TempoRelease)
		if err != nil || rel == nil {
			t.Fatalf("tempo release: %v", err)
		}
		tempo, _ := rel.Config["tempo"].(map[string]any)
		return fmt.Sprint(tempo["retention"])
	}
	set("PUT", second.ID, map[string]any{"mode": "on", "retention_hours": 200})
	if got := retention(); got != "72h" {
		t.Fatalf("the second region's retention decided the backend's (%s): the first region with tracing on decides", got)
	}
	set("PUT", first.ID, map[string]any{"retention_hours": 120})
	if got := retention(); got != "120h" {
		t.Fatalf("Tempo's retention after the deciding region's 120 h: %s", got)
	}
	if r, _ := e.Store.RegionByID(ctx, first.ID); r.TracingMode != store.TracingOn || r.TracingRetentionHours != 120 {
		t.Fatalf("a retention alone changed the mode or was not kept: %q %d", r.TracingMode, r.TracingRetentionHours)
	}
	if st := e.JSON("PUT", "/api/observability/regions/"+first.ID+"/tracing", tok, map[string]any{"retention_hours": 9000}, &refused); st != 422 || refused.Fields["retention_hours"] == "" {
		t.Fatalf("a retention over a year: %d %+v", st, refused)
	}
	if r, _ := e.Store.RegionByID(ctx, first.ID); r.TracingRetentionHours != 120 {
		t.Fatalf("the refused retention changed the region's: %d", r.TracingRetentionHours)
	}
	// Reconcile keeps the deciding region's retention.
	if st := e.JSON("POST", "/api/reconcile", tok, map[string]any{"step": "tracing"}, &rec); st != 202 {
		t.Fatalf("reconcile: %d", st)
	}
	mustSucceed(t, e.WaitJob(rec.JobID, 2*time.Minute))
	if got := retention(); got != "120h" {
		t.Fatalf("reconcile changed Tempo's retention to %s", got)
	}
}

// jobLogOf is a job's log, one event a line.
func jobLogOf(t *testing.T, e *webtest.Env, id string) string {
	t.Helper()
	evs, err := e.Store.JobEvents(context.Background(), id, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, ev := range evs {
		b.WriteString(ev.Message + "\n")
	}
	return b.String()
}

// TestTracingStatusUntilThePodsRun: turning tracing on shows the region's tracing as
// installing until the backend's pods run; when they never do (no node takes them), the
// job fails and the status says why; once the cluster can run them, the same request
// completes it.
func TestTracingStatusUntilThePodsRun(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	e := console(t, func(cfg *config.Config) { cfg.TracingOff, cfg.InstallTimeout = true, 15*time.Second })
	_, tok := e.User("owner")
	ctx := context.Background()
	r := newRegion(t, e, tok, c, "tr", nil)
	mustSucceed(t, action(t, e, tok, r.ID, "install-knative", nil))
	state := func() store.ComponentState {
		t.Helper()
		x, err := e.Store.RegionByID(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		return x.Component("tracing")
	}
	if st := state(); st.Status != store.ComponentNotInstalled {
		t.Fatalf("tracing off by default, yet %s", st.Status)
	}
	// No node takes new pods.
	full := corev1.Taint{Key: "runr.test/full", Effect: corev1.TaintEffectNoSchedule}
	taint := func(on bool) {
		t.Helper()
		nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes.Items {
			var ts []corev1.Taint
			for _, x := range n.Spec.Taints {
				if x.Key != full.Key {
					ts = append(ts, x)
				}
			}
			if on {
				ts = append(ts, full)
			}
			n.Spec.Taints = ts
			if _, err := c.Client.CoreV1().Nodes().Update(ctx, &n, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	taint(true)
	turnOn := func() string {
		t.Helper()
		var ans struct {
			JobID string `json:"job_id"`
		}
		if st := e.JSON("PUT", "/api/observability/regions/"+r.ID+"/tracing", tok, map[string]any{"mode": "on"}, &ans); st != 202 {
			t.Fatalf("tracing on: %d", st)
		}
		return ans.JobID
	}
	id := turnOn()
	deadline := time.Now().Add(10 * time.Second)
	for state().Status != store.ComponentInstalling {
		if time.Now().After(deadline) {
			t.Fatalf("while the backend's pods wait, the tracing status is %s", state().Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if j := e.WaitJob(id, time.Minute); j.Status != store.JobFailed {
		t.Fatalf("the install whose pods never run: %s", j.Status)
	}
	if st := state(); st.Status != store.ComponentError || st.Message == "" {
		t.Fatalf("after the failed install the tracing status is %s %q", st.Status, st.Message)
	}
	taint(false)
	mustSucceed(t, e.WaitJob(turnOn(), 2*time.Minute))
	if st := state(); st.Status != store.ComponentReady {
		t.Fatalf("after the retry the tracing status is %s %q", st.Status, st.Message)
	}
}
