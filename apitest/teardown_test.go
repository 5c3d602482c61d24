package apitest

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/ops/knative"
	"runr.dev/console/ops/redis"
	"runr.dev/console/store"
	"runr.dev/console/testcluster"
)

// The removal page's second choice: one job removes what RunR installed, part after part
// in the order of the page's table, each step shown under its part, and then the
// region's record; a bad answer to the choice changes nothing.
func TestTeardownRemovesWhatRunRInstalled(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	e := console(t, nil)
	_, tok := e.User("owner")
	ctx := context.Background()
	r := newRegion(t, e, tok, c, "gone", map[string]any{"redis_mode": "managed"})
	mustSucceed(t, action(t, e, tok, r.ID, "install-knative", nil))
	if _, err := c.Client.AppsV1().Deployments(r.Name).Get(ctx, redis.RedisName, metav1.GetOptions{}); err != nil {
		t.Fatalf("the managed Redis is not there to remove: %v", err)
	}

	var bad struct{ Fields map[string]string }
	if st := e.JSON("DELETE", "/api/knative-regions/"+r.ID+"?teardown=maybe", tok, nil, &bad); st != 422 || bad.Fields["teardown"] == "" {
		t.Fatalf("teardown=maybe: %d %+v, want 422 on teardown", st, bad)
	}
	if _, err := e.Store.RegionByID(ctx, r.ID); err != nil {
		t.Fatalf("a refused removal removed the region: %v", err)
	}

	b := e.SignedIn("owner")
	if resp, body := b.Get("/regions/" + r.ID + "/remove"); resp.StatusCode != 200 || !strings.Contains(body, `data-testid="remove-teardown"`) {
		t.Fatalf("the removal page offers no teardown: %d", resp.StatusCode)
	}
	// A wrong name keeps the choice and changes nothing.
	_, jobsBefore, err := e.Store.ListJobsPage(ctx, r.ID, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	resp, body := b.PostForm("/regions/"+r.ID+"/delete", url.Values{"confirm_name": {"gon"}, "teardown": {"1"}}, true)
	if resp.StatusCode != 422 || !strings.Contains(body, `value="1" class="mt-1" checked`) {
		t.Fatalf("wrong name: %d, want 422 with the teardown still chosen", resp.StatusCode)
	}
	if _, n, _ := e.Store.ListJobsPage(ctx, r.ID, 1, 0); n != jobsBefore {
		t.Fatalf("a refused teardown queued a job: %d jobs, %d before", n, jobsBefore)
	}
	resp, _ = b.PostForm("/regions/"+r.ID+"/delete", url.Values{"confirm_name": {"gone"}, "teardown": {"1"}}, true)
	loc := resp.Header.Get("Location")
	if resp.StatusCode != 303 || !strings.HasPrefix(loc, "/jobs/") {
		t.Fatalf("teardown: %d to %q, want 303 to the job", resp.StatusCode, loc)
	}
	var steps []store.JobStep
	j := e.WaitJob(strings.TrimPrefix(loc, "/jobs/"), 4*time.Minute)
	mustSucceed(t, j)
	steps, err = e.Store.JobSteps(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, s := range steps {
		if s.Status != store.StepDone && s.Status != store.StepSkipped {
			t.Errorf("step %s (%s) ended %s", s.Name, s.Title, s.Status)
		}
		part, _, _ := strings.Cut(s.Title, ":")
		if len(parts) == 0 || parts[len(parts)-1] != part {
			parts = append(parts, part)
		}
	}
	if got := strings.Join(parts, ", "); got != "Redis, Knative, Remove the region's record" {
		t.Fatalf("the parts ran as %s", got)
	}
	if _, err := e.Store.RegionByID(ctx, r.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the region's record must be gone: %v", err)
	}
	if _, err := c.Client.AppsV1().Deployments(r.Name).Get(ctx, redis.RedisName, metav1.GetOptions{}); err == nil {
		t.Error("the managed Redis must be gone")
	}
	if _, err := c.APIExtGet(ctx, knative.ServingCRD); err == nil {
		t.Error("the Knative operator's CRDs must be gone")
	}
}

// Two regions on one cluster: the teardown of one keeps Knative, which the other uses,
// and says so on the removal page and in its job; the teardown of the last one removes it.
func TestTeardownKeepsWhatTheClusterShares(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	e := console(t, nil)
	_, tok := e.User("owner")
	ctx := context.Background()
	first := newRegion(t, e, tok, c, "first", nil)
	mustSucceed(t, action(t, e, tok, first.ID, "install-knative", nil))
	second := newRegion(t, e, tok, c, "second", map[string]any{"redis_mode": "managed"})
	mustSucceed(t, action(t, e, tok, second.ID, "install-knative", nil))

	b := e.SignedIn("owner")
	if resp, body := b.Get("/regions/" + second.ID + "/remove"); resp.StatusCode != 200 ||
		!strings.Contains(between(body, `data-testid="remove-shared"`, "</p>"), "also hosts first") {
		t.Fatalf("the removal page of second does not say that first shares its cluster: %d", resp.StatusCode)
	}

	teardown := func(r *store.Region) []store.JobStep {
		t.Helper()
		var ans struct {
			JobID string `json:"job_id"`
		}
		if st := e.JSON("DELETE", "/api/knative-regions/"+r.ID+"?teardown=true", tok, nil, &ans); st != 202 {
			t.Fatalf("teardown of %s: %d", r.Name, st)
		}
		mustSucceed(t, e.WaitJob(ans.JobID, 4*time.Minute))
		steps, err := e.Store.JobSteps(ctx, ans.JobID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Store.RegionByID(ctx, r.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the record of %s must be gone: %v", r.Name, err)
		}
		return steps
	}
	steps := teardown(second)
	var titles []string
	for _, s := range steps {
		titles = append(titles, s.Title)
	}
	if got := strings.Join(titles, " | "); strings.Contains(got, "Knative") || !strings.HasPrefix(got, "Keep what the cluster's other regions use") ||
		!strings.Contains(got, "Redis") {
		t.Fatalf("the teardown of second ran %s; want the kept note first, Redis, and no Knative", got)
	}
	if _, err := c.Client.AppsV1().Deployments(second.Name).Get(ctx, redis.RedisName, metav1.GetOptions{}); err == nil {
		t.Error("second's own Redis must be gone")
	}
	if _, err := c.APIExtGet(ctx, knative.ServingCRD); err != nil {
		t.Fatalf("Knative went with second although first uses it: %v", err)
	}
	if r, err := e.Store.RegionByID(ctx, first.ID); err != nil || r.ServingStatus != store.ComponentReady {
		t.Fatalf("first after second's teardown: %v, serving %v", err, r)
	}

	// first is now alone on the cluster: its teardown removes Knative.
	steps = teardown(first)
	if len(steps) == 0 || steps[0].Name == "kept" {
		t.Fatalf("the last region's teardown keeps something: %+v", steps)
	}
	if _, err := c.APIExtGet(ctx, knative.ServingCRD); err == nil {
		t.Error("the Knative operator's CRDs must go with the cluster's last region")
	}
}
