package apitest

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/config"
	"runr.dev/console/kube"
	"runr.dev/console/ops/observability"
	"runr.dev/console/ops/reconcile"
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

// TestAgentOnTheConsolesOwnCluster: the console recognises the cluster it runs in by its
// kube-system namespace UID; a region there gets an agent that connects to the in-cluster
// gateway, which reconcile keeps (no change found); on any other cluster the agent keeps
// the console's public address.
func TestAgentOnTheConsolesOwnCluster(t *testing.T) {
	own, other := testcluster.New(t, testcluster.Options{}), testcluster.New(t, testcluster.Options{})
	ctx := context.Background()
	uid, err := kube.ClusterUID(ctx, own.Client)
	if err != nil || uid == "" {
		t.Fatalf("the cluster's identity: %q %v", uid, err)
	}
	const gateway = "http://runr.runr.svc:80"
	e := console(t, func(c *config.Config) { c.OwnClusterUID, c.GatewayURL = uid, gateway })
	_, tok := e.User("owner")
	r := newRegion(t, e, tok, own, "home", nil)
	mustSucceed(t, action(t, e, tok, r.ID, "install-knative", nil))
	d, err := own.Client.AppsV1().Deployments(observability.ObservabilityNamespace).Get(ctx, observability.AgentName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	address := ""
	for _, env := range d.Spec.Template.Spec.Containers[0].Env {
		if env.Name == "RUNR_AGENT_URL" {
			address = env.Value
		}
	}
	if address != "ws://runr.runr.svc:80"+observability.AgentPath {
		t.Fatalf("the agent on the console's own cluster connects to %q, want the gateway", address)
	}
	var plan struct{ Data []reconcile.Change }
	if st := e.JSON("GET", "/api/reconcile?step="+reconcile.StepAgent+"&region=home", tok, nil, &plan); st != 200 || len(plan.Data) != 1 || plan.Data[0].Result != reconcile.ResultUpToDate {
		t.Fatalf("reconcile's agent check on the own cluster: %d %+v", st, plan.Data)
	}

	// Another cluster is not the console's: its regions' agents use the public address.
	kc, err := kube.ParseKubeconfig(other.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	kc.AllowLoopback = true
	oc, err := kube.NewCluster(kc)
	if err != nil {
		t.Fatal(err)
	}
	away := &store.Region{Name: "away"}
	if e.Kube.Observability.OwnCluster(ctx, oc) || e.Kube.Observability.AgentAddress(ctx, oc, away) != e.Kube.Observability.AgentWSURL(away, false) ||
		strings.Contains(e.Kube.Observability.AgentAddress(ctx, oc, away), "runr.runr.svc") {
		t.Fatalf("another cluster is taken for the console's own: %q", e.Kube.Observability.AgentAddress(ctx, oc, away))
	}
}
