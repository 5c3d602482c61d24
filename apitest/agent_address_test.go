package apitest

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/config"
	"runr.dev/console/kube"
	"runr.dev/console/ops/domains"
	"runr.dev/console/ops/observability"
	"runr.dev/console/ops/reconcile"
	"runr.dev/console/store"
	"runr.dev/console/testcluster"
	"runr.dev/console/web/webtest"
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
	e := console(t, func(c *config.Config) {
		c.OwnClusterUID, c.GatewayURL, c.ConsoleTLSSecret = uid, gateway, "runr/runr-tls"
	})
	owner, tok := e.User("owner")
	if err := e.Store.SetSetting(ctx, "base_domain", "example.test"); err != nil {
		t.Fatal(err)
	}
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
	consoleCertificate(t, e, owner.Email, tok, own, other, r)
}

// consoleCertificate: Function TLS's "use the console's certificate" takes the console's
// own Secret (RUNR_TLS_SECRET) for a region on its cluster, through the region's kubeconfig,
// when it covers the function domain; a refusal (no Secret, a certificate of other names, a
// region on another cluster) says why and changes nothing.
func consoleCertificate(t *testing.T, e *webtest.Env, email, tok string, own, other *testcluster.Cluster, r *store.Region) {
	ctx := context.Background()
	use := func(id string) (int, string) {
		t.Helper()
		return e.Raw("PUT", "/api/knative-regions/"+id+"/function-tls", tok, `{"use_console_certificate": true}`)
	}
	if st, body := use(r.ID); st != 422 || !strings.Contains(body, "runr/runr-tls") || !strings.Contains(body, "is not on the cluster") {
		t.Fatalf("without the console's Secret: %d %s", st, body)
	}
	if _, err := own.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "runr"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	put := func(names ...string) time.Time {
		t.Helper()
		notAfter := time.Now().Add(90 * 24 * time.Hour).Truncate(time.Second)
		cert, key := selfSigned(t, names, time.Now().Add(-time.Hour), notAfter)
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "runr-tls", Namespace: "runr"}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"tls.crt": []byte(cert), "tls.key": []byte(key)}}
		if _, err := own.Client.CoreV1().Secrets("runr").Update(ctx, sec, metav1.UpdateOptions{}); apierrors.IsNotFound(err) {
			_, err = own.Client.CoreV1().Secrets("runr").Create(ctx, sec, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
		} else if err != nil {
			t.Fatal(err)
		}
		return notAfter
	}
	put("runr.example.com")
	if st, body := use(r.ID); st != 422 || !strings.Contains(body, "use_console_certificate") || !strings.Contains(body, "cannot serve this region") {
		t.Fatalf("a console certificate of other names: %d %s", st, body)
	}
	if got, _ := e.Store.RegionByID(ctx, r.ID); got.FunctionTLSExpiresAt != nil {
		t.Fatal("a refused certificate was recorded")
	}
	notAfter := put("runr.example.com", "*.home.example.test")
	var ans struct {
		JobID string `json:"job_id"`
	}
	if st := e.JSON("PUT", "/api/knative-regions/"+r.ID+"/function-tls", tok, map[string]any{"use_console_certificate": true}, &ans); st != 202 || ans.JobID == "" {
		t.Fatalf("use the console's certificate: %d", st)
	}
	mustSucceed(t, e.WaitJob(ans.JobID, 2*time.Minute))
	// The General tab offers the same, and runs it.
	b := e.NewBrowser()
	b.Login(email, "password-of-owner")
	if _, page := b.Get("/regions/" + r.ID + "?tab=general"); !strings.Contains(page, `data-testid="console-tls-form"`) || !strings.Contains(page, "runr/runr-tls") {
		t.Fatalf("the General tab does not offer the console's certificate")
	}
	if resp, _ := b.PostForm("/regions/"+r.ID+"/function-tls", url.Values{"use_console_certificate": {"1"}}, true); resp.StatusCode != 303 && resp.StatusCode != 302 {
		t.Fatalf("the form's console certificate: %d", resp.StatusCode)
	}
	got, _ := e.Store.RegionByID(ctx, r.ID)
	if got.FunctionTLSExpiresAt == nil || !got.FunctionTLSExpiresAt.Equal(notAfter) {
		t.Fatalf("the region's certificate expires %v, want the console's %v", got.FunctionTLSExpiresAt, notAfter)
	}
	served, err := own.Client.CoreV1().Secrets(got.ServingNamespace).Get(ctx, domains.FunctionTLSSecret, metav1.GetOptions{})
	consoles, _ := own.Client.CoreV1().Secrets("runr").Get(ctx, "runr-tls", metav1.GetOptions{})
	if err != nil || string(served.Data["tls.crt"]) != string(consoles.Data["tls.crt"]) {
		t.Fatalf("Traefik's function certificate is not the console's: %v", err)
	}

	// A region on another cluster is refused, whatever its certificate would cover.
	away := &store.Region{Name: "away-tls", Kubeconfig: string(other.Kubeconfig())}
	if err := e.Store.CreateRegion(ctx, away); err != nil {
		t.Fatal(err)
	}
	// As if Serving were ready there (the refusal comes before any install).
	if _, err := e.Store.DB.Exec(`UPDATE regions SET serving_status = 'ready' WHERE id = $1`, away.ID); err != nil {
		t.Fatal(err)
	}
	if st, body := use(away.ID); st != 422 || !strings.Contains(body, "not on the cluster the console runs in") {
		t.Fatalf("a region on another cluster: %d %s", st, body)
	}
}
