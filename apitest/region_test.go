package apitest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"runr.dev/console/ops"
	"runr.dev/console/ops/domains"
	"runr.dev/console/ops/statusblock"
	"runr.dev/console/store"
	"runr.dev/console/testcluster"
	"runr.dev/console/web/webtest"
)

// readyRegion is a region with Knative Serving ready on a new cluster.
func readyRegion(t *testing.T, name string) (*testcluster.Cluster, *webtest.Env, string, *store.Region) {
	return readyRegionOn(t, name, testcluster.Options{})
}

// readyRegionOn is readyRegion on a cluster of these options.
func readyRegionOn(t *testing.T, name string, opts testcluster.Options) (*testcluster.Cluster, *webtest.Env, string, *store.Region) {
	c := testcluster.New(t, opts)
	e := console(t, nil)
	_, tok := e.User("owner")
	if err := e.Store.SetSetting(context.Background(), "base_domain", "example.test"); err != nil {
		t.Fatal(err)
	}
	r := newRegion(t, e, tok, c, name, nil)
	mustSucceed(t, action(t, e, tok, r.ID, "install-knative", nil))
	r, _ = e.Store.RegionByName(context.Background(), name)
	return c, e, tok, r
}

// selfSigned returns a PEM certificate and key for names, valid between from and to.
func selfSigned(t *testing.T, names []string, from, to time.Time) (string, string) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: names[0]},
		DNSNames: names, NotBefore: from, NotAfter: to, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}))
}

func TestSettingsReachTheCluster(t *testing.T) {
	c, e, tok, r := readyRegion(t, "eu-2")
	ctx := context.Background()
	var ans struct {
		JobID  string `json:"job_id"`
		Fields map[string]string
	}
	// Bad values: 422 with the field, nothing saved.
	if st := e.JSON("PUT", "/api/knative-regions/"+r.ID+"/settings", tok, map[string]any{"ingress_trusted_ips": []string{"10.0.0.0/33"}}, &ans); st != 422 || ans.Fields["ingress_trusted_ips"] == "" {
		t.Fatalf("bad CIDR: %d %+v", st, ans)
	}
	if st := e.JSON("PUT", "/api/knative-regions/"+r.ID+"/settings", tok, map[string]any{"request_timeout": 900, "ingress_trusted_ips": []string{"10.0.0.0/24"}}, &ans); st != 200 || ans.JobID == "" {
		t.Fatalf("settings: %d %+v", st, ans)
	}
	mustSucceed(t, e.WaitJob(ans.JobID, 2*time.Minute))
	tr, _ := c.Client.AppsV1().Deployments("knative-serving").Get(ctx, "traefik", metav1.GetOptions{})
	if args := strings.Join(tr.Spec.Template.Spec.Containers[0].Args, " "); !strings.Contains(args, "readTimeout=910s") || !strings.Contains(args, "writeTimeout=910s") {
		t.Fatalf("traefik timeouts: %s", args)
	}
	ks, _ := c.DynamicGet(ctx, ksGVR, "knative-serving", "knative-serving")
	if v, _, _ := unstructured.NestedString(ks.Object, "spec", "config", "defaults", "max-revision-timeout-seconds"); v != "900" {
		t.Fatalf("max-revision-timeout-seconds %q", v)
	}
	// Lowering the timeout lowers Traefik's, never Knative's maximum; the PUT changes only the keys sent.
	if st := e.JSON("PUT", "/api/knative-regions/"+r.ID+"/settings", tok, map[string]any{"request_timeout": 60}, &ans); st != 200 {
		t.Fatal(st)
	}
	mustSucceed(t, e.WaitJob(ans.JobID, 2*time.Minute))
	tr, _ = c.Client.AppsV1().Deployments("knative-serving").Get(ctx, "traefik", metav1.GetOptions{})
	if args := strings.Join(tr.Spec.Template.Spec.Containers[0].Args, " "); !strings.Contains(args, "readTimeout=120s") {
		t.Fatalf("traefik's floor is 120 s: %s", args)
	}
	ks, _ = c.DynamicGet(ctx, ksGVR, "knative-serving", "knative-serving")
	if v, _, _ := unstructured.NestedString(ks.Object, "spec", "config", "defaults", "max-revision-timeout-seconds"); v != "900" {
		t.Fatalf("never lowered: %q", v)
	}
	r, _ = e.Store.RegionByID(ctx, r.ID)
	if len(r.Settings.V.IngressTrustedIPs) != 1 || r.Settings.V.RequestTimeout != 60 {
		t.Fatalf("settings %+v", r.Settings.V)
	}

	// Every tab renders, for an owner with its forms and for a viewer without any.
	_, viewer := e.User("viewer")
	for _, tab := range []string{"general", "registry", "operator", "serving", "redis"} {
		for who, token := range map[string]string{"owner": tok, "viewer": viewer} {
			st, body := e.Raw("GET", "/regions/"+r.ID+"?tab="+tab, token, "")
			if st != 200 {
				t.Fatalf("tab %s as %s: %d", tab, who, st)
			}
			forms := strings.Count(body, `method="post"`) - 1 // the logout form
			if who == "viewer" && forms > 0 {
				t.Fatalf("tab %s offers a viewer %d forms", tab, forms)
			}
			if who == "owner" && (tab == "general" || tab == "serving" || tab == "redis") && forms == 0 {
				t.Fatalf("tab %s offers an owner no form", tab)
			}
		}
		if st, _ := e.Raw("GET", "/regions/"+r.ID+"/tabs/"+tab, tok, ""); st != 200 {
			t.Fatalf("tab fragment %s: %d", tab, st)
		}
	}
	if st, body := e.Raw("GET", "/regions", tok, ""); st != 200 || !strings.Contains(body, `data-region="eu-2"`) {
		t.Fatalf("regions list: %d", st)
	}
	// The region's job history: the install and the two settings jobs, newest first.
	if st, body := e.Raw("GET", "/jobs?region="+r.ID, viewer, ""); st != 200 || strings.Count(body, `data-testid="job-row"`) < 4 || !strings.Contains(body, "Apply the settings of eu-2") {
		t.Fatalf("job history page: %d", st)
	}
	var jobs struct {
		Data []struct{ Kind, Status string }
		Meta struct{ Total int }
	}
	e.JSON("GET", "/api/jobs?region_id="+r.ID, tok, nil, &jobs)
	if jobs.Meta.Total < 4 || jobs.Data[0].Kind != ops.KindApplySettings {
		t.Fatalf("job history API: %+v", jobs)
	}
}

func TestFunctionTLS(t *testing.T) {
	c, e, tok, r := readyRegion(t, "tls")
	ctx := context.Background()
	now := time.Now()
	good, goodKey := selfSigned(t, []string{"*.tls.example.test"}, now.Add(-time.Hour), now.Add(90*24*time.Hour))
	other, otherKey := selfSigned(t, []string{"*.elsewhere.test"}, now.Add(-time.Hour), now.Add(90*24*time.Hour))
	expired, expiredKey := selfSigned(t, []string{"*.tls.example.test"}, now.Add(-48*time.Hour), now.Add(-24*time.Hour))
	cases := []struct{ name, cert, key, field, want string }{
		{"does not cover", other, otherKey, "certificate", "do not cover *.tls.example.test"},
		{"expired", expired, expiredKey, "certificate", "expired"},
		{"key mismatch", good, otherKey, "private_key", "does not match"},
		{"not PEM", "hello", goodKey, "certificate", "Not a PEM certificate"},
	}
	for _, tc := range cases {
		var ans struct{ Fields map[string]string }
		st := e.JSON("PUT", "/api/knative-regions/"+r.ID+"/function-tls", tok, map[string]any{"certificate": tc.cert, "private_key": tc.key}, &ans)
		if st != 422 || !strings.Contains(ans.Fields[tc.field], tc.want) {
			t.Fatalf("%s: %d %+v", tc.name, st, ans.Fields)
		}
	}
	// A default TLSStore that RunR did not create is replaced only on request.
	if err := c.ApplyYAML(ctx, "apiVersion: traefik.io/v1alpha1\nkind: TLSStore\nmetadata:\n  name: default\n  namespace: knative-serving\nspec: {}\n"); err != nil {
		t.Fatal(err)
	}
	put := func(replace bool) *store.Job {
		var ans struct {
			JobID string `json:"job_id"`
		}
		if st := e.JSON("PUT", "/api/knative-regions/"+r.ID+"/function-tls", tok, map[string]any{"certificate": good, "private_key": goodKey, "replace_existing": replace}, &ans); st != 202 {
			t.Fatalf("upload: %d", st)
		}
		return e.WaitJob(ans.JobID, time.Minute)
	}
	if j := put(false); j.Status != store.JobFailed || !strings.Contains(j.Error, "replace_existing") {
		t.Fatalf("a foreign TLSStore must stay without replace_existing: %s %s", j.Status, j.Error)
	}
	mustSucceed(t, put(true))
	sec, err := c.Client.CoreV1().Secrets("knative-serving").Get(ctx, domains.FunctionTLSSecret, metav1.GetOptions{})
	if err != nil || string(sec.Data["tls.crt"]) != good {
		t.Fatalf("Secret runr-function-tls: %v", err)
	}
	tlsStore := schema.GroupVersionResource{Group: "traefik.io", Version: "v1alpha1", Resource: "tlsstores"}
	st, err := c.DynamicGet(ctx, tlsStore, "knative-serving", "default")
	if name, _, _ := unstructured.NestedString(st.Object, "spec", "defaultCertificate", "secretName"); err != nil || name != domains.FunctionTLSSecret {
		t.Fatalf("TLSStore: %v %q", err, name)
	}
	r, _ = e.Store.RegionByID(ctx, r.ID)
	if r.FunctionTLSExpiresAt == nil || r.FunctionTLSExpiresAt.Before(now.Add(80*24*time.Hour)) {
		t.Fatalf("function_tls_expires_at %v", r.FunctionTLSExpiresAt)
	}
	if _, body := e.Raw("GET", "/api/knative-regions/"+r.ID, tok, ""); strings.Contains(body, "PRIVATE KEY") {
		t.Fatal("the key leaked into the API")
	}
	var ans struct {
		JobID string `json:"job_id"`
	}
	if st := e.JSON("DELETE", "/api/knative-regions/"+r.ID+"/function-tls", tok, nil, &ans); st != 202 {
		t.Fatalf("remove: %d", st)
	}
	mustSucceed(t, e.WaitJob(ans.JobID, time.Minute))
	if _, err := c.Client.CoreV1().Secrets("knative-serving").Get(ctx, domains.FunctionTLSSecret, metav1.GetOptions{}); err == nil {
		t.Fatal("the Secret must be gone")
	}
	if _, err := c.DynamicGet(ctx, tlsStore, "knative-serving", "default"); err == nil {
		t.Fatal("RunR's TLSStore must be gone")
	}
}

func TestMaintenanceBlockAndRemoval(t *testing.T) {
	c, e, tok, r := readyRegion(t, "blk")
	ctx := context.Background()
	ir := schema.GroupVersionResource{Group: "traefik.io", Version: "v1alpha1", Resource: "ingressroutes"}
	mw := schema.GroupVersionResource{Group: "traefik.io", Version: "v1alpha1", Resource: "middlewares"}
	setStatus := func(s string) {
		var ans struct {
			JobID string `json:"job_id"`
		}
		if st := e.JSON("PUT", "/api/knative-regions/"+r.ID, tok, map[string]any{"region_status": s}, &ans); st != 200 || ans.JobID == "" {
			t.Fatalf("status %s: %d", s, st)
		}
		mustSucceed(t, e.WaitJob(ans.JobID, time.Minute))
	}
	// The region's hosts outside its function domain: a Knative Service whose URL is under
	// another domain (a tenant's own base domain) and a project's custom domain
	// (DomainMapping); one under the function domain needs no rule of its own.
	dyn, err := dynamic.NewForConfig(c.REST)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "blk"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	ksvc := schema.GroupVersionResource{Group: "serving.knative.dev", Version: "v1", Resource: "services"}
	for name, u := range map[string]string{"shop": "http://shop.acme.test", "api": "http://api.blk.example.test"} {
		o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "serving.knative.dev/v1", "kind": "Service",
			"metadata": map[string]any{"name": name, "namespace": "blk", "labels": map[string]any{"runr.dev/region": "blk"}},
			"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"image": "example.test/shop:1"}}}}}}}
		if _, err := dyn.Resource(ksvc).Namespace("blk").Create(ctx, o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// Once the simulated Serving reported the revision, Knative's URL under the
		// Service's domain.
		deadline := time.Now().Add(time.Minute)
		for {
			got, err := dyn.Resource(ksvc).Namespace("blk").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok, _ := unstructured.NestedInt64(got.Object, "status", "observedGeneration"); ok {
				_ = unstructured.SetNestedField(got.Object, u, "status", "url")
				if _, err := dyn.Resource(ksvc).Namespace("blk").UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("Knative Service %s has no status", name)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	mapping := func(host string) {
		dm := schema.GroupVersionResource{Group: "serving.knative.dev", Version: "v1beta1", Resource: "domainmappings"}
		o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "serving.knative.dev/v1beta1", "kind": "DomainMapping",
			"metadata": map[string]any{"name": host, "namespace": "blk"},
			"spec":     map[string]any{"ref": map[string]any{"name": "shop", "kind": "Service", "apiVersion": "serving.knative.dev/v1"}}}}
		if _, err := dyn.Resource(dm).Namespace("blk").Create(ctx, o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mapping("shop.example.org")
	blockMatch := func() string {
		route, err := c.DynamicGet(ctx, ir, "knative-serving", "runr-region-block-blk")
		if err != nil {
			t.Fatalf("IngressRoute: %v", err)
		}
		routes, _, _ := unstructured.NestedSlice(route.Object, "spec", "routes")
		if routes[0].(map[string]any)["priority"] == nil {
			t.Fatalf("route %v", routes[0])
		}
		return routes[0].(map[string]any)["match"].(string)
	}
	setStatus("maintenance")
	match := blockMatch()
	if !strings.Contains(match, `blk\.example\.test`) || !strings.Contains(match, "Host(`shop.acme.test`)") || !strings.Contains(match, "Host(`shop.example.org`)") ||
		strings.Contains(match, "api.blk") {
		t.Fatalf("the block matches %s", match)
	}
	// A custom domain added later: the status check applies the block again.
	mapping("www.example.org")
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(blockMatch(), "Host(`www.example.org`)") {
		if time.Now().After(deadline) {
			t.Fatalf("the block was not applied again with the new host: %s", blockMatch())
		}
		if err := e.Kube.Status.CheckNow(ctx, r.ID); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
	}
	m, err := c.DynamicGet(ctx, mw, "knative-serving", "runr-region-block-blk")
	if err != nil {
		t.Fatalf("Middleware: %v", err)
	}
	if h, _, _ := unstructured.NestedString(m.Object, "spec", "headers", "customRequestHeaders", statusblock.StatusHeader); h != "maintenance" {
		t.Fatalf("middleware header %q", h)
	}
	d, err := c.Client.AppsV1().Deployments("knative-serving").Get(ctx, statusblock.ResponderName, metav1.GetOptions{})
	if err != nil || d.Spec.Template.Spec.Containers[0].Resources.Requests.Cpu().String() != "10m" || d.Spec.Template.Spec.Containers[0].Resources.Requests.Memory().String() != "16Mi" {
		t.Fatalf("responder: %v", err)
	}
	setStatus("active")
	if _, err := c.DynamicGet(ctx, ir, "knative-serving", "runr-region-block-blk"); err == nil {
		t.Fatal("the IngressRoute must go when the region is active")
	}
	if _, err := c.DynamicGet(ctx, mw, "knative-serving", "runr-region-block-blk"); err == nil {
		t.Fatal("the Middleware must go when the region is active")
	}
	if st := e.JSON("PUT", "/api/knative-regions/"+r.ID, tok, map[string]any{"region_status": "paused"}, nil); st != 422 {
		t.Fatalf("bad status: %d", st)
	}

	// The console's removal page is not offered while projects remain, and its form
	// refuses, changing nothing; the API removes the record, keeps the project without a
	// region and turns the agent away (the spec's "Removing a region").
	if _, err := e.Store.DB.Exec(`INSERT INTO projects (id, name, slug, region_id) VALUES ('p1', 'Shop', 'shop', $1)`, r.ID); err != nil {
		t.Fatal(err)
	}
	b := e.SignedIn("owner")
	if resp, body := b.Get("/regions/" + r.ID + "/remove"); resp.StatusCode != 422 || strings.Contains(body, `data-testid="remove-form"`) {
		t.Fatalf("the removal page is offered with a project: %d", resp.StatusCode)
	}
	if resp, body := b.PostForm("/regions/"+r.ID+"/delete", url.Values{"confirm_name": {r.Name}}, true); resp.StatusCode != 422 || !strings.Contains(body, "still has 1 project") {
		t.Fatalf("the console's removal with a project: %d", resp.StatusCode)
	}
	if _, err := e.Store.RegionByID(ctx, r.ID); err != nil {
		t.Fatalf("a refused removal must keep the region: %v", err)
	}
	if st := e.JSON("DELETE", "/api/knative-regions/"+r.ID, tok, nil, nil); st != 204 {
		t.Fatalf("remove with a project: %d", st)
	}
	var kept struct {
		Data struct {
			Slug     string  `json:"slug"`
			RegionID *string `json:"region_id"`
		}
	}
	if st := e.JSON("GET", "/api/projects/p1", tok, nil, &kept); st != 200 || kept.Data.Slug != "shop" || kept.Data.RegionID != nil {
		t.Fatalf("the removed region's project must stay, without a region: %d %+v", st, kept.Data)
	}
	if _, err := e.Store.RegionsByAgentToken(ctx, r.AgentToken); err == nil {
		t.Fatal("the removed region's agent token must be turned away")
	}
	// Nothing was removed from the cluster.
	if _, err := c.Client.AppsV1().Deployments("knative-serving").Get(ctx, "traefik", metav1.GetOptions{}); err != nil {
		t.Fatal("removing a region removes nothing from the cluster")
	}
}

// TestDeploysWaitForAnActiveRegion: a region that is not active takes no deploy, resume or
// running project moved in (422 naming its status, nothing queued or changed), while its
// running projects keep running and can stop; once active again it deploys.
func TestDeploysWaitForAnActiveRegion(t *testing.T) {
	c, e, tok, r := readyRegion(t, "dep-1")
	ctx := context.Background()
	off := newRegion(t, e, tok, c, "dep-2", map[string]any{"is_active": false})
	p, _ := kindProject(t, e, tok, map[string]any{"name": "web", "region_id": r.ID, "image": "ghcr.io/acme/web:1"})
	projectAction(t, e, tok, p, "deploy")
	setStatus := func(s string) {
		t.Helper()
		var ans struct {
			JobID string `json:"job_id"`
		}
		if st := e.JSON("PUT", "/api/knative-regions/"+r.ID, tok, map[string]any{"region_status": s}, &ans); st != 200 {
			t.Fatalf("status %s: %d", s, st)
		}
		if ans.JobID != "" {
			mustSucceed(t, e.WaitJob(ans.JobID, time.Minute))
		}
	}
	jobs := func() int {
		js, err := e.Store.ListJobs(ctx, r.ID, 1000)
		if err != nil {
			t.Fatal(err)
		}
		return len(js)
	}
	refused := func(method, path string, body any, field, status string) {
		t.Helper()
		before := jobs()
		var ans struct {
			Error  string
			Fields map[string]string
		}
		st := e.JSON(method, path, tok, body, &ans)
		msg := ans.Error
		if field != "" {
			msg = ans.Fields[field]
		}
		if st != 422 || !strings.Contains(msg, "is "+status) {
			t.Fatalf("%s %s: %d %+v, want 422 naming %s", method, path, st, ans, status)
		}
		if jobs() != before {
			t.Fatalf("%s %s queued a job", method, path)
		}
	}

	setStatus("maintenance")
	refused("POST", "/api/projects/"+p+"/deploy", nil, "", "maintenance")
	projectAction(t, e, tok, p, "stop") // what runs may still stop
	refused("POST", "/api/projects/"+p+"/resume", nil, "", "maintenance")
	if got, _ := e.Store.ProjectByID(ctx, p); got.State != store.ProjectStopped {
		t.Fatalf("the refused resume changed the project: %s", got.State)
	}
	setStatus("active")
	projectAction(t, e, tok, p, "resume")
	// A running project moved into a region that is not active would be deployed there.
	refused("PUT", "/api/projects/"+p, map[string]any{"region_id": off.ID}, "region_id", "inactive")
	if got, _ := e.Store.ProjectByID(ctx, p); got.Region() != r.ID || got.State != store.ProjectRunning {
		t.Fatalf("the refused move changed the project: %s %s", got.Region(), got.State)
	}
}
