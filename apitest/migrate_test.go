package apitest

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"runr.dev/console/config"
	"runr.dev/console/ops/domains"
	"runr.dev/console/ops/nodes"
	"runr.dev/console/ops/redis"
	"runr.dev/console/store"
	"runr.dev/console/testcluster"
	"runr.dev/console/web/webtest"
)

func createProject(t *testing.T, e *webtest.Env, tok, regionID, name string, deploy bool) string {
	t.Helper()
	var ans struct {
		Data   struct{ ID, Slug string }
		Fields map[string]string
	}
	body := map[string]any{"name": name, "region_id": regionID, "image": "ghcr.io/acme/" + name + ":1",
		"env_vars": map[string]string{"MODE": "prod"}, "secret_env_vars": map[string]string{"API_TOKEN": "SECRET-OF-" + name}}
	if st := e.JSON("POST", "/api/projects", tok, body, &ans); st != 201 {
		t.Fatalf("create project: %d %+v", st, ans)
	}
	if deploy {
		projectAction(t, e, tok, ans.Data.ID, "deploy")
	}
	return ans.Data.ID
}

func projectAction(t *testing.T, e *webtest.Env, tok, id, action string) {
	t.Helper()
	var ans struct {
		JobID string `json:"job_id"`
		Error string
	}
	if st := e.JSON("POST", "/api/projects/"+id+"/"+action, tok, nil, &ans); st != 202 {
		t.Fatalf("%s: %d %s", action, st, ans.Error)
	}
	mustSucceed(t, e.WaitJob(ans.JobID, 2*time.Minute))
}

func migrate(t *testing.T, e *webtest.Env, tok, regionID string, kc []byte, extra map[string]any) *store.Job {
	t.Helper()
	body := map[string]any{"kubeconfig": string(kc)}
	for k, v := range extra {
		body[k] = v
	}
	var ans struct {
		JobID string `json:"job_id"`
		Error string
	}
	if st := e.JSON("POST", "/api/knative-regions/"+regionID+"/migrate", tok, body, &ans); st != 202 {
		t.Fatalf("migrate: %d %s", st, ans.Error)
	}
	// A second move while this one runs is refused.
	if st := e.JSON("POST", "/api/knative-regions/"+regionID+"/migrate", tok, body, nil); st != 422 {
		t.Fatalf("a second move: %d, want 422", st)
	}
	return e.WaitJob(ans.JobID, 4*time.Minute)
}

func TestRegionMove(t *testing.T) {
	a := testcluster.New(t, testcluster.Options{})
	b := testcluster.New(t, testcluster.Options{})
	z := newZone(t)
	e := console(t, func(c *config.Config) { c.DNSResolver, c.Billing = z.Addr, true })
	_, tok := e.User("owner")
	ctx := context.Background()
	e.Store.SetSetting(ctx, "base_domain", "example.test")
	r := newRegion(t, e, tok, a, "mv", nil)
	mustSucceed(t, action(t, e, tok, r.ID, "install-knative", nil))

	p1 := createProject(t, e, tok, r.ID, "shop", true)
	p2 := createProject(t, e, tok, r.ID, "blog", true)
	p3 := createProject(t, e, tok, r.ID, "cron", true)
	projectAction(t, e, tok, p3, "stop")
	createProject(t, e, tok, r.ID, "idle", false)
	// Billing: analytics (400m) runs, then the region becomes fixed with 200m, less than
	// its three running projects hold (600m). They keep running; the move's redeploy, in
	// name order, refuses analytics (blog and shop hold the 200m) and deploys the others.
	var big struct{ Data struct{ ID string } }
	if st := e.JSON("POST", "/api/projects", tok, map[string]any{"name": "analytics", "region_id": r.ID, "image": "ghcr.io/acme/analytics:1", "cpu_m": 400}, &big); st != 201 {
		t.Fatalf("create analytics: %d", st)
	}
	projectAction(t, e, tok, big.Data.ID, "deploy")
	if st := e.JSON("PUT", "/api/knative-regions/"+r.ID+"/billing", tok, map[string]any{"type": "fixed", "fixed_price": "99",
		"allocation_cpu_m": 200, "allocation_memory_mi": 4096}, nil); st != 200 {
		t.Fatalf("fixed billing: %d", st)
	}

	// The secret env var is referenced, never inlined.
	ks, err := a.DynamicGet(ctx, ksvcGVR, "mv", "shop")
	if err != nil {
		t.Fatal(err)
	}
	if raw, _ := ks.MarshalJSON(); strings.Contains(string(raw), "SECRET-OF-shop") || !strings.Contains(string(raw), "shop-secret-env") {
		t.Fatalf("the Knative Service must reference the Secret: %s", raw)
	}
	sec, _ := a.Client.CoreV1().Secrets("mv").Get(ctx, "shop-secret-env", metav1.GetOptions{})
	if string(sec.Data["API_TOKEN"]) != "SECRET-OF-shop" {
		t.Fatal("the secret env var must be in <slug>-secret-env")
	}

	// A function certificate, and a default TLSStore on the new cluster that RunR did not
	// create: the certificate step fails there, is logged, and the move goes on.
	now := time.Now()
	cert, key := selfSigned(t, []string{"*.mv.example.test"}, now.Add(-time.Hour), now.Add(30*24*time.Hour))
	var tlsAns struct {
		JobID string `json:"job_id"`
	}
	e.JSON("PUT", "/api/knative-regions/"+r.ID+"/function-tls", tok, map[string]any{"certificate": cert, "private_key": key}, &tlsAns)
	mustSucceed(t, e.WaitJob(tlsAns.JobID, time.Minute))
	if err := b.ApplyYAML(ctx, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: knative-serving\n"); err != nil {
		t.Fatal(err)
	}

	// A data location: the move stays within it.
	e.Store.DB.Exec(`UPDATE regions SET data_location = 'eu-central' WHERE id = $1`, r.ID)
	var ref struct{ Fields map[string]string }
	if st := e.JSON("POST", "/api/knative-regions/"+r.ID+"/migrate", tok, map[string]any{"kubeconfig": string(b.Kubeconfig()), "data_location": "us-east"}, &ref); st != 422 || ref.Fields["data_location"] == "" {
		t.Fatalf("data-location mismatch: %d %+v", st, ref)
	}
	tlsStoreWatch := make(chan struct{})
	go func() {
		// Once Traefik's CRDs exist on the new cluster, put a foreign default TLSStore there.
		defer close(tlsStoreWatch)
		for i := 0; i < 600; i++ {
			if b.ApplyYAML(ctx, "apiVersion: traefik.io/v1alpha1\nkind: TLSStore\nmetadata:\n  name: default\n  namespace: knative-serving\nspec: {}\n") == nil {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	// Dedicated workers: the one the new cluster has is labelled and tainted there, the one
	// it lacks leaves the selection.
	if err := e.Store.SetRegionNodes(ctx, r.ID, []string{"worker-2", "gone-9"}); err != nil {
		t.Fatal(err)
	}
	j := migrate(t, e, tok, r.ID, b.Kubeconfig(), map[string]any{"data_location": "eu-central"})
	<-tlsStoreWatch
	mustSucceed(t, j)
	r, _ = e.Store.RegionByID(ctx, r.ID)
	if r.MigrationStatus != store.MigrationDNSCheck || r.ExternalIP != b.LBAddress || r.OldExternalIP != a.LBAddress || r.ClusterServer != b.Server {
		t.Fatalf("after the move: %s ip %s old %s server %s", r.MigrationStatus, r.ExternalIP, r.OldExternalIP, r.ClusterServer)
	}
	if r.Settings.V.KnativeDomain != "mv.example.test" || r.Name != "mv" {
		t.Fatal("the move keeps the name and the function domain")
	}
	ksB, err := b.DynamicGet(ctx, ksGVR, "knative-serving", "knative-serving")
	if err != nil {
		t.Fatal(err)
	}
	if dom, _, _ := unstructured.NestedMap(ksB.Object, "spec", "config", "domain"); dom["mv.example.test"] == nil {
		t.Fatalf("the new cluster's Knative domain configuration lacks the function domain: %v", dom)
	}
	if w, _ := b.Client.CoreV1().Nodes().Get(ctx, "worker-2", metav1.GetOptions{}); len(r.Nodes) != 1 || r.Nodes[0] != "worker-2" ||
		w.Labels[nodes.DedicatedKey] != nodes.DedicatedValue || len(w.Spec.Taints) == 0 {
		t.Fatalf("the workers on the new cluster: selection %v, worker-2 %v %v", r.Nodes, w.Labels, w.Spec.Taints)
	}
	failed := false
	for _, s := range r.MigrationDetail.V.Steps {
		if s.Name == "function TLS" && s.Status == "failed" && strings.Contains(s.Message, "replace_existing") {
			failed = true
		}
	}
	if !failed {
		t.Fatalf("the failing component must be logged in the move's detail: %+v", r.MigrationDetail.V.Steps)
	}
	for _, slug := range []string{"shop", "blog"} {
		if _, err := b.DynamicGet(ctx, ksvcGVR, "mv", slug); err != nil {
			t.Fatalf("%s must run on the new cluster: %v", slug, err)
		}
	}
	for _, slug := range []string{"cron", "idle", "analytics"} {
		if _, err := b.DynamicGet(ctx, ksvcGVR, "mv", slug); err == nil {
			t.Fatalf("%s must not run on the new cluster", slug)
		}
	}
	if p, _ := e.Store.ProjectByID(ctx, big.Data.ID); p.State != store.ProjectNone || !strings.Contains(p.Message, "fixed resources") || !strings.Contains(p.Message, "free") {
		t.Fatalf("the project beyond the fixed allocation is shut down with the reason: %s %q", p.State, p.Message)
	}
	if p, _ := e.Store.ProjectByID(ctx, p3); p.State != store.ProjectStopped {
		t.Fatalf("a stopped project stays stopped: %s", p.State)
	}
	// The banner shows the move with its countdown.
	if _, body := e.Raw("GET", "/regions", tok, ""); !strings.Contains(body, `data-testid="migration-banner"`) || !strings.Contains(body, "data-countdown") {
		t.Fatal("the migration banner must show while the move is in dns_check")
	}
	var ms struct {
		MigrationStatus string `json:"migration_status"`
		Steps           []struct{ Name, Status string }
	}
	e.JSON("GET", "/api/knative-regions/"+r.ID+"/migration-status", tok, nil, &ms)
	if ms.MigrationStatus != "dns_check" || len(ms.Steps) != 11 {
		t.Fatalf("migration-status %+v", ms)
	}

	// Completion by DNS: dns-check.<domain> reaches the new address.
	e.Kube.Status.Periodic(ctx)
	if r, _ = e.Store.RegionByID(ctx, r.ID); r.MigrationStatus != store.MigrationDNSCheck {
		t.Fatal("without the DNS record the move waits")
	}
	z.Set("dns-check.mv.example.test", b.LBAddress)
	e.Kube.Status.Periodic(ctx)
	r, _ = e.Store.RegionByID(ctx, r.ID)
	if r.MigrationStatus != store.MigrationCompleted || r.OldKubeconfig != "" || r.OldExternalIP != "" {
		t.Fatalf("completion by DNS: %s old %q", r.MigrationStatus, r.OldExternalIP)
	}
	if st := e.JSON("POST", "/api/knative-regions/"+r.ID+"/complete-migration", tok, nil, nil); st != 422 {
		t.Fatalf("complete outside dns_check: %d", st)
	}

	// Back to A, whose nodes the selection does not name: it is cleared. Then a rollback:
	// the region uses B again, its projects run there.
	if err := e.Store.SetRegionNodes(ctx, r.ID, []string{"gone-9"}); err != nil {
		t.Fatal(err)
	}
	mustSucceed(t, migrate(t, e, tok, r.ID, a.Kubeconfig(), map[string]any{"data_location": "eu-central"}))
	if r, _ = e.Store.RegionByID(ctx, r.ID); len(r.Nodes) != 0 {
		t.Fatalf("a selection of nodes the new cluster lacks must be cleared: %v", r.Nodes)
	}
	var rb struct {
		JobID string `json:"job_id"`
	}
	if st := e.JSON("POST", "/api/knative-regions/"+r.ID+"/rollback-migration", tok, nil, &rb); st != 202 {
		t.Fatalf("rollback: %d", st)
	}
	mustSucceed(t, e.WaitJob(rb.JobID, 2*time.Minute))
	r, _ = e.Store.RegionByID(ctx, r.ID)
	if r.MigrationStatus != store.MigrationRolledBack || r.ClusterServer != b.Server || r.ExternalIP != b.LBAddress {
		t.Fatalf("rollback: %s server %s ip %s", r.MigrationStatus, r.ClusterServer, r.ExternalIP)
	}

	// In maintenance, once more to A: the status block comes along, and 48 hours in
	// dns_check complete the move without the DNS record.
	var st struct {
		JobID string `json:"job_id"`
	}
	if code := e.JSON("PUT", "/api/knative-regions/"+r.ID, tok, map[string]any{"region_status": "maintenance"}, &st); code != 200 {
		t.Fatalf("maintenance: %d", code)
	}
	mustSucceed(t, e.WaitJob(st.JobID, time.Minute))
	mj := migrate(t, e, tok, r.ID, a.Kubeconfig(), map[string]any{"data_location": "eu-central"})
	mustSucceed(t, mj)
	// The deploy checks apply to the move's redeploy: a region in maintenance deploys
	// nothing, and the projects it ran are shut down with the reason.
	for _, id := range []string{p1, p2} {
		if p, _ := e.Store.ProjectByID(ctx, id); p.State != store.ProjectNone || !strings.Contains(p.Message, "is maintenance") {
			t.Fatalf("%s in a region in maintenance that moves: %s %q", p.Slug, p.State, p.Message)
		}
	}
	if !strings.Contains(jobLogOf(t, e, mj.ID), "shop is refused: Region mv is maintenance") {
		t.Fatal("the move's log must say why shop is not deployed")
	}
	ir := schema.GroupVersionResource{Group: "traefik.io", Version: "v1alpha1", Resource: "ingressroutes"}
	if _, err := a.DynamicGet(ctx, ir, "knative-serving", "runr-region-block-mv"); err != nil {
		t.Fatalf("the status block of a region in maintenance must come with its move: %v", err)
	}
	e.Kube.Status.Periodic(ctx)
	if r, _ = e.Store.RegionByID(ctx, r.ID); r.MigrationStatus != store.MigrationDNSCheck {
		t.Fatalf("without the DNS record and before 48 hours the move waits: %s", r.MigrationStatus)
	}
	if _, err := e.Store.DB.Exec(`UPDATE regions SET migration_dns_check_at = now() - interval '49 hours' WHERE id = $1`, r.ID); err != nil {
		t.Fatal(err)
	}
	e.Kube.Status.Periodic(ctx)
	if r, _ = e.Store.RegionByID(ctx, r.ID); r.MigrationStatus != store.MigrationCompleted || r.OldKubeconfig != "" {
		t.Fatalf("48 hours in dns_check must complete the move: %s", r.MigrationStatus)
	}

	// And once more, completed by hand.
	mustSucceed(t, migrate(t, e, tok, r.ID, b.Kubeconfig(), map[string]any{"data_location": "eu-central"}))
	if st := e.JSON("POST", "/api/knative-regions/"+r.ID+"/complete-migration", tok, nil, nil); st != 200 {
		t.Fatalf("complete by hand: %d", st)
	}
	r, _ = e.Store.RegionByID(ctx, r.ID)
	if r.MigrationStatus != store.MigrationCompleted || r.ClusterServer != b.Server {
		t.Fatalf("completion by hand: %s", r.MigrationStatus)
	}
}

func TestBaseDomainChanges(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	z := newZone(t)
	e := console(t, func(cfg *config.Config) { cfg.DNSResolver = z.Addr })
	_, tok := e.User("owner")
	ctx := context.Background()
	r := newRegion(t, e, tok, c, "bd", nil)
	mustSucceed(t, action(t, e, tok, r.ID, "install-knative", nil))
	patch := func(domain string) {
		t.Helper()
		if st := e.JSON("PATCH", "/api/settings", tok, map[string]any{"base_domain": domain}, nil); st != 200 {
			t.Fatalf("base domain %q: %d", domain, st)
		}
		waitIdle(t, e, r.ID)
	}
	domainConfig := func() map[string]any {
		ks, _ := c.DynamicGet(ctx, ksGVR, "knative-serving", "knative-serving")
		m, _, _ := unstructured.NestedMap(ks.Object, "spec", "config", "domain")
		return m
	}
	if st := e.JSON("PATCH", "/api/settings", tok, map[string]any{"base_domain": "Not A Domain"}, nil); st != 422 {
		t.Fatalf("bad domain: %d", st)
	}
	// The first base domain gives the region its function domain.
	patch("old.test")
	r, _ = e.Store.RegionByID(ctx, r.ID)
	if r.Settings.V.KnativeDomain != "bd.old.test" || domainConfig()["bd.old.test"] == nil {
		t.Fatalf("first base domain: %q %v", r.Settings.V.KnativeDomain, domainConfig())
	}
	// A change starts a domain migration with the alias proxy.
	patch("new.test")
	r, _ = e.Store.RegionByID(ctx, r.ID)
	if r.DomainMigrationStatus != store.MigrationDNSCheck || r.DomainMigrationTarget != "bd.new.test" || r.Settings.V.KnativeDomain != "bd.old.test" {
		t.Fatalf("domain migration: %s %s %s", r.DomainMigrationStatus, r.DomainMigrationTarget, r.Settings.V.KnativeDomain)
	}
	alias, err := c.Client.AppsV1().Deployments("bd").Get(ctx, domains.AliasName, metav1.GetOptions{})
	if err != nil || *alias.Spec.Replicas != 2 || !strings.Contains(strings.Join(alias.Spec.Template.Spec.Containers[0].Args, " "), "--from bd.new.test --to bd.old.test") {
		t.Fatalf("alias: %v", err)
	}
	if q := alias.Spec.Template.Spec.Containers[0].Resources.Requests; q.Cpu().String() != "10m" || q.Memory().String() != "32Mi" {
		t.Fatalf("alias requests %v", q)
	}
	var got struct{ Data map[string]any }
	e.JSON("GET", "/api/knative-regions/"+r.ID, tok, nil, &got)
	if got.Data["domain_migration_target"] != "bd.new.test" {
		t.Fatalf("domain_migration_target %v", got.Data["domain_migration_target"])
	}
	// A third base domain moves the alias on.
	patch("third.test")
	r, _ = e.Store.RegionByID(ctx, r.ID)
	alias, _ = c.Client.AppsV1().Deployments("bd").Get(ctx, domains.AliasName, metav1.GetOptions{})
	if r.DomainMigrationTarget != "bd.third.test" || !strings.Contains(strings.Join(alias.Spec.Template.Spec.Containers[0].Args, " "), "--from bd.third.test") {
		t.Fatalf("third base domain: %s", r.DomainMigrationTarget)
	}
	// Back to the old one: the migration ends.
	patch("old.test")
	r, _ = e.Store.RegionByID(ctx, r.ID)
	if r.DomainMigrationStatus != "" || r.Settings.V.KnativeDomain != "bd.old.test" {
		t.Fatalf("rollback: %q %q", r.DomainMigrationStatus, r.Settings.V.KnativeDomain)
	}
	if _, err := c.Client.AppsV1().Deployments("bd").Get(ctx, domains.AliasName, metav1.GetOptions{}); err == nil {
		t.Fatal("the alias must go when the migration ends")
	}
	// An uploaded certificate of the old and the new domain.
	cert, key := selfSigned(t, []string{"*.bd.old.test", "*.bd.new.test"}, time.Now().Add(-time.Hour), time.Now().Add(90*24*time.Hour))
	var tlsAns struct {
		JobID string `json:"job_id"`
	}
	if st := e.JSON("PUT", "/api/knative-regions/"+r.ID+"/function-tls", tok, map[string]any{"certificate": cert, "private_key": key}, &tlsAns); st != 202 {
		t.Fatalf("function TLS: %d", st)
	}
	mustSucceed(t, e.WaitJob(tlsAns.JobID, time.Minute))
	tlsSecret := func() bool {
		_, err := c.Client.CoreV1().Secrets("knative-serving").Get(ctx, domains.FunctionTLSSecret, metav1.GetOptions{})
		return err == nil
	}
	// Through to completion: DNS of the new domain reaches the region.
	patch("new.test")
	z.Set("dns-check.bd.new.test", c.LBAddress)
	e.Kube.Status.Periodic(ctx)
	waitIdle(t, e, r.ID)
	r, _ = e.Store.RegionByID(ctx, r.ID)
	if r.Settings.V.KnativeDomain != "bd.new.test" || r.DomainMigrationStatus != "" {
		t.Fatalf("completion: %q %q", r.Settings.V.KnativeDomain, r.DomainMigrationStatus)
	}
	// The certificate of both domains keeps serving.
	if r.FunctionTLSCert != cert || !tlsSecret() {
		t.Fatal("the completion removed a certificate that covers the new domain")
	}
	dc := domainConfig()
	if dc["bd.new.test"] == nil || dc["bd.old.test"] != nil {
		t.Fatalf("Knative's domain configuration after completion: %v", dc)
	}
	// Completed by hand, without DNS: on the Migration tab (the button is the owner's
	// only) and over the API; with no migration under way the API refuses and the tab
	// shows none.
	patch("fourth.test")
	owner, viewer := e.SignedIn("owner"), e.SignedIn("viewer")
	tab := func(b *webtest.Browser) *goquery.Selection {
		t.Helper()
		resp, page := b.Get("/regions/" + r.ID + "?tab=migration")
		doc, err := goquery.NewDocumentFromReader(strings.NewReader(page))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("the Migration tab: %d %v", resp.StatusCode, err)
		}
		return doc.Find(`[data-testid="domain-migration"]`)
	}
	if sec := tab(owner); !strings.Contains(sec.Text(), "bd.new.test") || !strings.Contains(sec.Text(), "bd.fourth.test") || sec.Find(`[data-testid="complete-domain-migration"]`).Length() != 1 {
		t.Fatalf("the owner's Migration tab during a domain migration: %q", sec.Text())
	}
	if sec := tab(viewer); sec.Length() != 1 || sec.Find("form").Length() != 0 {
		t.Fatalf("the viewer's Migration tab: %d sections, %d forms", sec.Length(), sec.Find("form").Length())
	}
	if resp, _ := owner.PostForm("/regions/"+r.ID+"/migration/complete-domain", url.Values{}, true); resp.StatusCode != 303 {
		t.Fatalf("Complete Domain Migration: %d", resp.StatusCode)
	}
	waitIdle(t, e, r.ID)
	r, _ = e.Store.RegionByID(ctx, r.ID)
	if dc := domainConfig(); r.Settings.V.KnativeDomain != "bd.fourth.test" || r.DomainMigrationStatus != "" || dc["bd.fourth.test"] == nil || dc["bd.new.test"] != nil {
		t.Fatalf("completed on the tab: %q %q %v", r.Settings.V.KnativeDomain, r.DomainMigrationStatus, dc)
	}
	if tab(owner).Length() != 0 {
		t.Fatal("the Migration tab shows a domain migration after its completion")
	}
	// The certificate of bd.old.test and bd.new.test does not cover bd.fourth.test: the
	// completion replaced it with Traefik's default, and its job says so.
	if r.FunctionTLSCert != "" || r.FunctionTLSExpiresAt != nil || tlsSecret() {
		t.Fatal("a certificate that does not cover the new domain was kept after the completion")
	}
	if js, _ := e.Store.ListJobs(ctx, r.ID, 1); len(js) == 0 || !strings.Contains(jobLogOf(t, e, js[0].ID), "does not cover *.bd.fourth.test: it is removed") {
		t.Fatal("the completion's job does not say why the certificate went")
	}
	if st := e.JSON("POST", "/api/knative-regions/"+r.ID+"/complete-domain-migration", tok, nil, nil); st != 422 && st != 409 {
		t.Fatalf("completing a domain migration that is not under way: %d", st)
	}
	patch("fifth.test")
	var ans struct {
		JobID string `json:"job_id"`
	}
	if st := e.JSON("POST", "/api/knative-regions/"+r.ID+"/complete-domain-migration", tok, nil, &ans); st != 202 || ans.JobID == "" {
		t.Fatalf("complete-domain-migration: %d", st)
	}
	mustSucceed(t, e.WaitJob(ans.JobID, time.Minute))
	if r, _ = e.Store.RegionByID(ctx, r.ID); r.Settings.V.KnativeDomain != "bd.fifth.test" || r.DomainMigrationStatus != "" {
		t.Fatalf("completed over the API: %q %q", r.Settings.V.KnativeDomain, r.DomainMigrationStatus)
	}
	// A cleared base domain removes the function domain.
	patch("")
	r, _ = e.Store.RegionByID(ctx, r.ID)
	if r.Settings.V.KnativeDomain != "" || domainConfig()["bd.fifth.test"] != nil {
		t.Fatalf("cleared: %q %v", r.Settings.V.KnativeDomain, domainConfig())
	}
}

// waitIdle waits until the region has no queued or running job.
func waitIdle(t *testing.T, e *webtest.Env, regionID string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if _, err := e.Store.ActiveJob(context.Background(), regionID, ""); err != nil {
			js, _ := e.Store.ListJobs(context.Background(), regionID, 1)
			if len(js) > 0 && js[0].Status == store.JobFailed {
				t.Fatalf("job %s failed: %s", js[0].Kind, js[0].Error)
			}
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the region's jobs did not finish")
}

// TestMoveWithoutDNSToWaitFor: a region without a function domain reaches dns_check and
// says plainly that there is no DNS to wait for (job log, API, Migration tab), instead of
// an instruction for a record that cannot exist; Complete Migration ends it.
func TestMoveWithoutDNSToWaitFor(t *testing.T) {
	a := testcluster.New(t, testcluster.Options{})
	b := testcluster.New(t, testcluster.Options{})
	e := console(t, nil)
	_, tok := e.User("owner")
	ctx := context.Background()
	r := newRegion(t, e, tok, a, "nodns", nil)
	// Its Redis runs in the cluster (mode in_cluster): the move keeps the address and
	// installs no managed Redis on the new cluster.
	mustSucceed(t, action(t, e, tok, r.ID, "redis", map[string]any{"mode": "in_cluster", "address": "redis.queues.svc:6379", "password": "QUEUE-PW"}))
	j := migrate(t, e, tok, r.ID, b.Kubeconfig(), nil)
	mustSucceed(t, j)
	evs, err := e.Store.JobEvents(ctx, j.ID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	said, kept := false, false
	for _, ev := range evs {
		said = said || strings.Contains(ev.Message, "The region has no function domain (Knative Serving is not installed): there is no DNS record to wait for")
		kept = kept || strings.Contains(ev.Message, "The Redis in the cluster keeps its address redis.queues.svc:6379")
	}
	if !said {
		t.Fatal("the dns_check step must say that there is no DNS to wait for")
	}
	moved, err := e.Store.RegionByID(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !kept || moved.RedisMode != store.RedisInCluster || moved.RedisAddress != "redis.queues.svc:6379" || moved.RedisPassword != "QUEUE-PW" {
		t.Fatalf("the moved region's Redis: %s %q (said it kept it: %v)", moved.RedisMode, moved.RedisAddress, kept)
	}
	if _, err := b.Client.AppsV1().Deployments(r.Name).Get(ctx, redis.RedisName, metav1.GetOptions{}); err == nil {
		t.Fatal("the move installed a managed Redis beside the region's Redis in the cluster")
	}
	var ms struct {
		MigrationStatus string `json:"migration_status"`
		NoDNS           string `json:"no_dns_to_wait_for"`
	}
	if st := e.JSON("GET", "/api/knative-regions/"+r.ID+"/migration-status", tok, nil, &ms); st != 200 || ms.MigrationStatus != "dns_check" || ms.NoDNS == "" {
		t.Fatalf("migration status: %d %+v", st, ms)
	}
	if st, body := e.Raw("GET", "/regions/"+r.ID+"?tab=migration", tok, ""); st != 200 || !strings.Contains(body, `data-testid="migration-no-dns"`) || strings.Contains(body, "Point the wildcard record") {
		t.Fatalf("migration tab: %d, says no DNS: %v", st, strings.Contains(body, `data-testid="migration-no-dns"`))
	}
	if st := e.JSON("POST", "/api/knative-regions/"+r.ID+"/complete-migration", tok, nil, nil); st != 200 {
		t.Fatalf("complete by hand: %d", st)
	}
}
