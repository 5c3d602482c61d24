package apitest

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/config"
	"runr.dev/console/ops/observability"
	"runr.dev/console/store"
	"runr.dev/console/testcluster"
)

// TestAgentNeedsAnAddress: a console without RUNR_APP_URL or RUNR_AGENT_WS_URL (as a bare
// `runr serve` starts) warns in step 1 of the wizard, and its Serving install refuses the
// agent step with the sentence that names the settings, installing no agent that could
// never connect; once the region has an agent address, a retry completes and the agent
// gets it.
func TestAgentNeedsAnAddress(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	ctx := context.Background()
	e := console(t, func(c *config.Config) { c.AppURL, c.AgentWSURL = "", "" })
	owner, tok := e.User("owner")
	b := e.NewBrowser()
	b.Login(owner.Email, "password-of-owner")
	if _, page := b.Get("/regions/new"); !strings.Contains(page, `data-testid="no-agent-address"`) || !strings.Contains(page, "RUNR_APP_URL") {
		t.Errorf("step 1 without an agent address: no warning")
	}
	r := newRegion(t, e, tok, c, "no-address", nil)
	j := action(t, e, tok, r.ID, "install-knative", nil)
	if j.Status != store.JobFailed || !strings.Contains(j.Error, "agent_ws_url") || !strings.Contains(j.Error, "RUNR_APP_URL") {
		t.Fatalf("install without an agent address: %s %q, want failed naming the settings", j.Status, j.Error)
	}
	if _, err := c.Client.AppsV1().Deployments(observability.ObservabilityNamespace).Get(ctx, observability.AgentName, metav1.GetOptions{}); err == nil {
		t.Fatal("an agent without an address was installed")
	}

	const address = "wss://console.example.test/api/internal/agent/ws"
	if st := e.JSON("PUT", "/api/knative-regions/"+r.ID+"/settings", tok, map[string]any{"agent_ws_url": address}, nil); st >= 300 {
		t.Fatalf("set the region's agent address: %d", st)
	}
	if st := e.JSON("POST", "/api/jobs/"+j.ID+"/retry", tok, nil, nil); st != 202 {
		t.Fatalf("retry: %d", st)
	}
	if j = e.WaitJob(j.ID, 3*time.Minute); j.Status != store.JobSucceeded {
		t.Fatalf("retry with an address: %s %s", j.Status, j.Error)
	}
	d, err := c.Client.AppsV1().Deployments(observability.ObservabilityNamespace).Get(ctx, observability.AgentName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, env := range d.Spec.Template.Spec.Containers[0].Env {
		if env.Name == "RUNR_AGENT_URL" && env.Value != address {
			t.Fatalf("the agent's address: %q, want %q", env.Value, address)
		}
	}

	// A console with an address does not warn.
	other := console(t, nil)
	u2, _ := other.User("owner")
	b2 := other.NewBrowser()
	b2.Login(u2.Email, "password-of-owner")
	if _, page := b2.Get("/regions/new"); strings.Contains(page, `data-testid="no-agent-address"`) {
		t.Error("step 1 warns although the console has an agent address")
	}
}
