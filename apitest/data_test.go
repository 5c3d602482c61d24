package apitest

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"runr.dev/console/ops/data"
	"runr.dev/console/ops/projects"
	"runr.dev/console/ops/redis"
	"runr.dev/console/store"
	"runr.dev/console/testcluster"
	"runr.dev/console/web/webtest"
)

var (
	cnpgClusterGVR  = schema.GroupVersionResource{Group: "postgresql.cnpg.io", Version: "v1", Resource: "clusters"}
	cnpgDatabaseGVR = schema.GroupVersionResource{Group: "postgresql.cnpg.io", Version: "v1", Resource: "databases"}
	cnpgRoleGVR     = schema.GroupVersionResource{Group: "postgresql.cnpg.io", Version: "v1", Resource: "databaseroles"}
	skupperSiteGVR  = schema.GroupVersionResource{Group: "skupper.io", Version: "v2alpha1", Resource: "sites"}
)

// dataRegion is a region with Knative Serving and RunR's managed Redis ready.
func dataRegion(t *testing.T, c *testcluster.Cluster, name string) (*webtest.Env, string, *store.Region, *store.User) {
	t.Helper()
	e := console(t, nil)
	u, tok := e.User("owner")
	ctx := context.Background()
	if err := e.Store.SetSetting(ctx, "base_domain", "example.test"); err != nil {
		t.Fatal(err)
	}
	r := newRegion(t, e, tok, c, name, map[string]any{"redis_mode": "managed"})
	mustSucceed(t, action(t, e, tok, r.ID, "install-knative", nil))
	if rj, err := e.Store.LatestJob(ctx, r.ID, redis.KindRedisInstall); err == nil {
		mustSucceed(t, e.WaitJob(rj.ID, 2*time.Minute))
	}
	r, _ = e.Store.RegionByName(ctx, name)
	if r.RedisStatus != store.ComponentReady {
		t.Fatalf("Redis: %s", r.RedisStatus)
	}
	return e, tok, r, u
}

// dynList lists objects of a resource in a namespace (for tests).
func dynList(t *testing.T, c *testcluster.Cluster, gvr schema.GroupVersionResource, ns string) []unstructured.Unstructured {
	t.Helper()
	dyn, err := dynamic.NewForConfig(c.REST)
	if err != nil {
		t.Fatal(err)
	}
	l, err := dyn.Resource(gvr).Namespace(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list %s: %v", gvr.Resource, err)
	}
	return l.Items
}

// dataServices reads GET /api/knative-regions/{id}/data-services, by name.
func dataServices(t *testing.T, e *webtest.Env, tok, regionID string) (map[string]data.ServiceView, string) {
	t.Helper()
	var ans struct {
		Data  []data.ServiceView
		Moved []string
	}
	st, raw := e.Raw("GET", "/api/knative-regions/"+regionID+"/data-services", tok, "")
	if st != 200 {
		t.Fatalf("data services: %d %s", st, raw)
	}
	e.JSON("GET", "/api/knative-regions/"+regionID+"/data-services", tok, nil, &ans)
	out := map[string]data.ServiceView{}
	for _, d := range ans.Data {
		out[d.Name] = d
	}
	return out, raw
}

// installData installs a data service and waits for it.
func installData(t *testing.T, e *webtest.Env, tok, regionID, service string, body any) {
	t.Helper()
	mustSucceed(t, action(t, e, tok, regionID, "data-services/"+service, body))
}

// bind binds a project to a service and waits for the job.
func bind(t *testing.T, e *webtest.Env, tok, projectID, service string) string {
	t.Helper()
	var ans struct {
		Data  data.BindingView
		JobID string `json:"job_id"`
		Error string
	}
	if st := e.JSON("POST", "/api/projects/"+projectID+"/bindings", tok, map[string]string{"service": service}, &ans); st != 202 {
		t.Fatalf("bind %s: %d %s", service, st, ans.Error)
	}
	mustSucceed(t, e.WaitJob(ans.JobID, 3*time.Minute))
	return ans.JobID
}

// unbind removes a project's binding and waits for the job.
func unbind(t *testing.T, e *webtest.Env, tok, projectID, service string) string {
	t.Helper()
	var ans struct {
		JobID string `json:"job_id"`
		Error string
	}
	if st := e.JSON("DELETE", "/api/projects/"+projectID+"/bindings/"+service, tok, nil, &ans); st != 202 {
		t.Fatalf("unbind %s: %d %s", service, st, ans.Error)
	}
	mustSucceed(t, e.WaitJob(ans.JobID, 3*time.Minute))
	return ans.JobID
}

// removeData removes a data service and waits for it.
func removeData(t *testing.T, e *webtest.Env, tok, regionID, service string) {
	t.Helper()
	var ans struct {
		JobID string `json:"job_id"`
		Error string
	}
	if st := e.JSON("DELETE", "/api/knative-regions/"+regionID+"/data-services/"+service, tok, nil, &ans); st != 202 {
		t.Fatalf("remove %s: %d %s", service, st, ans.Error)
	}
	mustSucceed(t, e.WaitJob(ans.JobID, 3*time.Minute))
}

// jobText is a job and its events as the API answers them.
func jobText(t *testing.T, e *webtest.Env, tok, id string) string {
	_, a := e.Raw("GET", "/api/jobs/"+id, tok, "")
	_, b := e.Raw("GET", "/api/jobs/"+id+"/events", tok, "")
	return a + b
}

func TestDataServicesBindRemoveAndSkupper(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	e, tok, r, u := dataRegion(t, c, "dat")
	ctx := context.Background()

	svcs, _ := dataServices(t, e, tok, r.ID)
	for _, name := range store.DataServiceNames {
		if svcs[name].Status != store.ComponentNotInstalled {
			t.Fatalf("%s before any install: %+v", name, svcs[name])
		}
	}
	var refused struct {
		Error  string
		Fields map[string]string
	}
	if st := e.JSON("POST", "/api/knative-regions/"+r.ID+"/data-services/mysql", tok, nil, &refused); st != 404 {
		t.Fatalf("an unknown service: %d %+v", st, refused)
	}
	if st := e.JSON("POST", "/api/knative-regions/"+r.ID+"/data-services/postgres", tok, map[string]any{"storage_class": "gold", "size_gi": 0}, &refused); st != 422 || refused.Fields["storage_class"] == "" {
		t.Fatalf("a StorageClass the cluster lacks: %d %+v", st, refused)
	}
	p1 := createProject(t, e, tok, r.ID, "shop", true)
	if st := e.JSON("POST", "/api/projects/"+p1+"/bindings", tok, map[string]string{"service": "postgres"}, &refused); st != 422 {
		t.Fatalf("binding a service that is not installed: %d %+v", st, refused)
	}

	// Each service installs in runr-data.
	installData(t, e, tok, r.ID, "kv", nil)
	installData(t, e, tok, r.ID, "object", map[string]any{"storage_class": "standard", "size_gi": 5})
	installData(t, e, tok, r.ID, "postgres", map[string]any{"size_gi": 3})
	svcs, _ = dataServices(t, e, tok, r.ID)
	for _, name := range store.DataServiceNames {
		if svcs[name].Status != store.ComponentReady || svcs[name].Endpoint == "" {
			t.Fatalf("%s after its install: %+v", name, svcs[name])
		}
	}
	if _, err := c.Client.AppsV1().Deployments(data.DataNamespace).Get(ctx, "seaweedfs-all-in-one", metav1.GetOptions{}); err != nil {
		t.Fatalf("the object store: %v", err)
	}
	// seaweedfs 4.44.0 renders its SFTP passwords for an all-in-one release, SFTP off or on.
	if _, err := c.Client.CoreV1().Secrets(data.DataNamespace).Get(ctx, data.SeaweedFSRelease+"-sftp-secret", metav1.GetOptions{}); err != nil {
		t.Fatalf("the chart's SFTP Secret: %v", err)
	}
	pg, err := c.DynamicGet(ctx, cnpgClusterGVR, data.DataNamespace, data.PostgresCluster)
	if err != nil {
		t.Fatal(err)
	}
	if ph, _, _ := unstructured.NestedString(pg.Object, "status", "phase"); ph != "Cluster in healthy state" {
		t.Fatalf("the PostgreSQL cluster: %q", ph)
	}
	if _, err := c.Client.CoreV1().PersistentVolumeClaims(data.DataNamespace).Get(ctx, data.PostgresCluster+"-1", metav1.GetOptions{}); err != nil {
		t.Fatalf("the PostgreSQL volume: %v", err)
	}

	// Two projects bind every service; their credentials differ.
	p2 := createProject(t, e, tok, r.ID, "blog", true)
	var jobs []string
	for _, p := range []string{p1, p2} {
		for _, name := range store.DataServiceNames {
			jobs = append(jobs, bind(t, e, tok, p, name))
		}
	}
	if st := e.JSON("POST", "/api/projects/"+p1+"/bindings", tok, map[string]string{"service": "kv"}, &refused); st != 422 && st != 409 {
		t.Fatalf("a second binding to the same service: %d %+v", st, refused)
	}
	var secrets []string
	for _, name := range store.DataServiceNames {
		b1, err1 := e.Store.ProjectBinding(ctx, p1, name)
		b2, err2 := e.Store.ProjectBinding(ctx, p2, name)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if b1.Status != store.ComponentReady || b2.Status != store.ComponentReady || b1.Resource == b2.Resource {
			t.Fatalf("%s bindings: %+v %+v", name, b1, b2)
		}
		if len(b1.Credentials) == 0 || len(b1.Credentials) != len(b2.Credentials) {
			t.Fatalf("%s credentials: %v %v", name, b1.CredentialNames(), b2.CredentialNames())
		}
		for k, v := range b1.Credentials {
			if strings.Contains(strings.ToLower(k), "password") || strings.Contains(strings.ToLower(k), "secret") {
				if v == b2.Credentials[k] || len(v) < 16 {
					t.Fatalf("%s %s must differ between projects", name, k)
				}
				secrets = append(secrets, v, b2.Credentials[k])
			}
		}
	}
	if len(secrets) < 6 {
		t.Fatalf("each service's binding has a password: %d found", len(secrets))
	}

	// Each KV binding's ACL Job limits its user to its own key prefix, reading the user,
	// password and prefix from the binding's Secret (nothing inlined in the Job).
	jl, err := c.Client.BatchV1().Jobs(data.DataNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	acl := 0
	for _, j := range jl.Items {
		ctr := j.Spec.Template.Spec.Containers[0]
		if !strings.Contains(strings.Join(ctr.Command, " "), "ACL SETUSER") {
			continue
		}
		acl++
		if script := strings.Join(ctr.Command, " "); !strings.Contains(script, `"~$KV_PREFIX*"`) || !strings.Contains(script, "reset") {
			t.Fatalf("the ACL user must be limited to its prefix: %s", script)
		}
		for _, ev := range ctr.Env {
			if ev.Value != "" || ev.ValueFrom == nil || ev.ValueFrom.SecretKeyRef == nil {
				t.Fatalf("the ACL Job's env must come from Secrets: %+v", ev)
			}
		}
	}
	if acl != 2 {
		t.Fatalf("one ACL Job per KV binding: %d", acl)
	}
	k1, _ := e.Store.ProjectBinding(ctx, p1, "kv")
	k2, _ := e.Store.ProjectBinding(ctx, p2, "kv")
	if k1.Credentials["REDIS_KEY_PREFIX"] == k2.Credentials["REDIS_KEY_PREFIX"] || k1.Credentials["REDIS_USERNAME"] == k2.Credentials["REDIS_USERNAME"] {
		t.Fatalf("KV users and prefixes differ: %v %v", k1.CredentialNames(), k2.CredentialNames())
	}

	// The Knative Service references the bindings' Secret; no value is inlined.
	ks, err := c.DynamicGet(ctx, ksvcGVR, "dat", "shop")
	if err != nil {
		t.Fatal(err)
	}
	raw := toJSON(ks.Object)
	if !strings.Contains(raw, data.BindingsSecretName("shop")) || !strings.Contains(raw, "secretKeyRef") {
		t.Fatalf("the Knative Service must reference %s: %s", data.BindingsSecretName("shop"), raw)
	}
	// CloudNativePG applied each binding's role and database.
	for _, gvr := range []schema.GroupVersionResource{cnpgRoleGVR, cnpgDatabaseGVR} {
		items := dynList(t, c, gvr, data.DataNamespace)
		if len(items) != 2 {
			t.Fatalf("%s: %d", gvr.Resource, len(items))
		}
		for _, o := range items {
			if ok, _, _ := unstructured.NestedBool(o.Object, "status", "applied"); !ok {
				t.Fatalf("%s %s not applied: %s", gvr.Resource, o.GetName(), toJSON(o.Object["status"]))
			}
		}
	}

	// No answer and no job log carries a credential.
	_, dataRaw := dataServices(t, e, tok, r.ID)
	texts := []string{dataRaw, raw}
	for _, p := range []string{p1, p2} {
		_, a := e.Raw("GET", "/api/projects/"+p, tok, "")
		_, b := e.Raw("GET", "/api/projects/"+p+"/bindings", tok, "")
		texts = append(texts, a, b)
		if !strings.Contains(b, "PGPASSWORD") {
			t.Fatalf("the bindings name their settings: %s", b)
		}
	}
	_, list := e.Raw("GET", "/api/projects", tok, "")
	texts = append(texts, list)
	for _, id := range jobs {
		texts = append(texts, jobText(t, e, tok, id))
	}
	br := e.NewBrowser()
	br.Login(u.Email, "password-of-owner")
	_, tab := br.Get("/regions/" + r.ID + "/tabs/data")
	_, projects := br.Get("/projects")
	if !strings.Contains(tab, `data-testid="data-binding"`) || !strings.Contains(projects, `data-testid="project-binding"`) {
		t.Fatalf("the tab and the projects page list the bindings:\n%s\n%s", tab, projects)
	}
	texts = append(texts, tab, projects)
	// Nor does the console's own log (every level), which did log the bindings.
	consoleLog := e.Log.String()
	if !strings.Contains(consoleLog, "bind") {
		t.Fatalf("the console's log does not mention the bindings; is it captured?\n%.2000s", consoleLog)
	}
	texts = append(texts, consoleLog)
	for _, s := range secrets {
		for _, txt := range texts {
			if strings.Contains(txt, s) {
				t.Fatalf("a credential leaks into an answer: %.300s", txt)
			}
		}
	}

	// Removal is refused while bound, naming the projects; allowed after, with the data.
	for _, name := range []string{"postgres", "object", "kv"} {
		if st := e.JSON("DELETE", "/api/knative-regions/"+r.ID+"/data-services/"+name, tok, nil, &refused); st != 422 ||
			!strings.Contains(refused.Error, "shop") || !strings.Contains(refused.Error, "blog") {
			t.Fatalf("removal of %s while bound: %d %q", name, st, refused.Error)
		}
	}
	for _, p := range []string{p1, p2} {
		unbind(t, e, tok, p, "postgres")
	}
	if left := dynList(t, c, cnpgDatabaseGVR, data.DataNamespace); len(left) != 0 {
		t.Fatalf("unbinding drops the databases: %d left", len(left))
	}
	removeData(t, e, tok, r.ID, "postgres")
	if _, err := c.DynamicGet(ctx, cnpgClusterGVR, data.DataNamespace, data.PostgresCluster); err == nil {
		t.Fatal("the PostgreSQL cluster must be gone")
	}
	if _, err := c.Client.CoreV1().PersistentVolumeClaims(data.DataNamespace).Get(ctx, data.PostgresCluster+"-1", metav1.GetOptions{}); err == nil {
		t.Fatal("the PostgreSQL volume must be gone")
	}
	for _, p := range []string{p1, p2} {
		unbind(t, e, tok, p, "object")
		unbind(t, e, tok, p, "kv")
	}
	removeData(t, e, tok, r.ID, "object")
	if pvcs, _ := c.Client.CoreV1().PersistentVolumeClaims(data.DataNamespace).List(ctx, metav1.ListOptions{}); len(pvcs.Items) != 0 {
		t.Fatalf("the object store's volume must be gone: %d claims", len(pvcs.Items))
	}
	// Nothing of seaweedfs stays while KV keeps runr-data: not the Secrets its chart keeps
	// (S3 credentials, SFTP passwords), nor its ServiceAccount, ConfigMap and cluster RBAC.
	if ss, err := c.Client.CoreV1().Secrets(data.DataNamespace).List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	} else {
		for _, sec := range ss.Items {
			if strings.HasPrefix(sec.Name, data.SeaweedFSRelease+"-") {
				t.Errorf("Secret %s/%s stays after the object store's removal", data.DataNamespace, sec.Name)
			}
		}
	}
	if _, err := c.Client.CoreV1().ServiceAccounts(data.DataNamespace).Get(ctx, data.SeaweedFSRelease, metav1.GetOptions{}); err == nil {
		t.Error("ServiceAccount seaweedfs stays")
	}
	if _, err := c.Client.CoreV1().ConfigMaps(data.DataNamespace).Get(ctx, data.SeaweedFSRelease+"-master-config", metav1.GetOptions{}); err == nil {
		t.Error("ConfigMap seaweedfs-master-config stays")
	}
	if _, err := c.Client.RbacV1().ClusterRoles().Get(ctx, data.SeaweedFSRelease+"-rw-cr", metav1.GetOptions{}); err == nil {
		t.Error("ClusterRole seaweedfs-rw-cr stays")
	}
	if _, err := c.Client.RbacV1().ClusterRoleBindings().Get(ctx, data.SeaweedFSRelease+"-rw-crb", metav1.GetOptions{}); err == nil {
		t.Error("ClusterRoleBinding seaweedfs-rw-crb stays")
	}
	removeData(t, e, tok, r.ID, "kv")
	if _, err := c.Client.CoreV1().Namespaces().Get(ctx, data.DataNamespace, metav1.GetOptions{}); err == nil {
		t.Fatal("runr-data goes with the last service")
	}
	svcs, _ = dataServices(t, e, tok, r.ID)
	for _, name := range store.DataServiceNames {
		if svcs[name].Status != store.ComponentNotInstalled {
			t.Fatalf("%s after its removal: %+v", name, svcs[name])
		}
	}

	// Skupper: absent, then installed by the cluster's operators, then the site.
	var sk data.SkupperReport
	if st := e.JSON("GET", "/api/knative-regions/"+r.ID+"/skupper", tok, nil, &sk); st != 200 || sk.Installed || len(sk.Missing) != 2 {
		t.Fatalf("Skupper absent: %d %+v", st, sk)
	}
	if st := e.JSON("POST", "/api/knative-regions/"+r.ID+"/skupper/site", tok, nil, &refused); st != 422 || !strings.Contains(refused.Error, "Skupper v2") {
		t.Fatalf("a site without Skupper: %d %q", st, refused.Error)
	}
	if err := c.InstallSkupper(ctx, "2.2.1"); err != nil {
		t.Fatal(err)
	}
	wkEventually(t, time.Minute, "Skupper to be reported", func() bool {
		e.JSON("GET", "/api/knative-regions/"+r.ID+"/skupper", tok, nil, &sk)
		return sk.Installed
	})
	if sk.Version != "2.2.1" || sk.ControllerNamespace != testcluster.SkupperNamespace {
		t.Fatalf("Skupper present: %+v", sk)
	}
	mustSucceed(t, action(t, e, tok, r.ID, "skupper/site", nil))
	site, err := c.DynamicGet(ctx, skupperSiteGVR, "dat", data.SkupperSiteName)
	if err != nil {
		t.Fatal(err)
	}
	if st, _, _ := unstructured.NestedString(site.Object, "status", "status"); st != "Ready" {
		t.Fatalf("the site: %s", toJSON(site.Object["status"]))
	}
	e.JSON("GET", "/api/knative-regions/"+r.ID+"/skupper", tok, nil, &sk)
	if sk.Site.Status != store.ComponentReady {
		t.Fatalf("the site's state: %+v", sk.Site)
	}
}

func TestDataServicesMoveRecreatesServicesAndSite(t *testing.T) {
	a := testcluster.New(t, testcluster.Options{})
	b := testcluster.New(t, testcluster.Options{})
	e, tok, r, u := dataRegion(t, a, "mvd")
	ctx := context.Background()
	if err := a.InstallSkupper(ctx, "2.2.1"); err != nil {
		t.Fatal(err)
	}
	if err := b.InstallSkupper(ctx, "2.2.1"); err != nil {
		t.Fatal(err)
	}
	installData(t, e, tok, r.ID, "kv", nil)
	installData(t, e, tok, r.ID, "postgres", map[string]any{"size_gi": 4})
	p := createProject(t, e, tok, r.ID, "shop", true)
	bind(t, e, tok, p, "postgres")
	bind(t, e, tok, p, "kv")
	wkEventually(t, time.Minute, "Skupper to be reported", func() bool {
		var sk data.SkupperReport
		e.JSON("GET", "/api/knative-regions/"+r.ID+"/skupper", tok, nil, &sk)
		return sk.Installed
	})
	mustSucceed(t, action(t, e, tok, r.ID, "skupper/site", nil))
	before, _ := e.Store.ProjectBinding(ctx, p, "postgres")
	// The demo projects (of every kind) move too, with their SMTP catcher.
	mustSucceed(t, action(t, e, tok, r.ID, "registry", map[string]any{"registry_mode": "internal", "storage_type": "pvc",
		"pvc_config": map[string]any{"storageClass": "standard", "size": "1Gi"}}))
	mustSucceed(t, action(t, e, tok, r.ID, "demo-projects", nil))

	mj := migrate(t, e, tok, r.ID, b.Kubeconfig(), nil)
	mustSucceed(t, mj)
	svcs, _ := dataServices(t, e, tok, r.ID)
	if svcs["kv"].Status != store.ComponentReady || svcs["postgres"].Status != store.ComponentReady || svcs["object"].Status != store.ComponentNotInstalled {
		t.Fatalf("after the move: %+v\n%s", svcs, jobText(t, e, tok, mj.ID))
	}
	pg, err := b.DynamicGet(ctx, cnpgClusterGVR, data.DataNamespace, data.PostgresCluster)
	if err != nil {
		t.Fatalf("the PostgreSQL cluster on the new cluster: %v", err)
	}
	if size, _, _ := unstructured.NestedString(pg.Object, "spec", "storage", "size"); size != "4Gi" {
		t.Fatalf("its volume: %q", size)
	}
	if dbs := dynList(t, b, cnpgDatabaseGVR, data.DataNamespace); len(dbs) != 1 {
		t.Fatalf("the binding's database on the new cluster: %d", len(dbs))
	}
	after, _ := e.Store.ProjectBinding(ctx, p, "postgres")
	if after.Status != store.ComponentReady || after.Credentials["PGPASSWORD"] != before.Credentials["PGPASSWORD"] {
		t.Fatalf("the binding after the move: %+v", after)
	}
	site, err := b.DynamicGet(ctx, skupperSiteGVR, "mvd", data.SkupperSiteName)
	if err != nil {
		t.Fatalf("the site on the new cluster: %v", err)
	}
	if st, _, _ := unstructured.NestedString(site.Object, "status", "status"); st != "Ready" {
		t.Fatalf("the site: %s", toJSON(site.Object["status"]))
	}
	for what, get := range map[string]func() error{
		"the SMTP catcher": func() error {
			_, err := b.Client.AppsV1().Deployments("mvd").Get(ctx, projects.DemoSMTPName, metav1.GetOptions{})
			return err
		},
		"the demo mailer": func() error {
			_, err := b.Client.AppsV1().Deployments("mvd").Get(ctx, "demo-mailer", metav1.GetOptions{})
			return err
		},
		"the demo stats": func() error {
			_, err := b.Client.BatchV1().CronJobs("mvd").Get(ctx, "demo-stats", metav1.GetOptions{})
			return err
		},
	} {
		if err := get(); err != nil {
			t.Errorf("%s on the new cluster: %v", what, err)
		}
	}
	var moved struct{ Moved []string }
	e.JSON("GET", "/api/knative-regions/"+r.ID+"/data-services", tok, nil, &moved)
	if strings.Join(moved.Moved, ",") != "kv,postgres" {
		t.Fatalf("moved: %v", moved.Moved)
	}
	br := e.NewBrowser()
	br.Login(u.Email, "password-of-owner")
	_, tab := br.Get("/regions/" + r.ID + "/tabs/data")
	if !strings.Contains(tab, `data-testid="data-moved"`) || !strings.Contains(tab, "pg_dump") {
		t.Fatalf("the tab says where the data stayed: %s", tab)
	}
	_, mtab := br.Get("/regions/" + r.ID + "/tabs/migration")
	if !strings.Contains(mtab, `data-testid="migration-data"`) || !strings.Contains(mtab, "kv, postgres") {
		t.Fatalf("the Migration tab says where the data stayed: %s", mtab)
	}
}

// The data services live in one namespace of the cluster under fixed names: a second
// region on the cluster is refused the service the first has, before anything changes.
func TestDataServiceOnePerCluster(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	e, tok, first, _ := dataRegion(t, c, "own")
	ctx := context.Background()
	installData(t, e, tok, first.ID, "kv", nil)
	second := newRegion(t, e, tok, c, "next", map[string]any{"redis_mode": "managed"})
	if rj, err := e.Store.LatestJob(ctx, second.ID, redis.KindRedisInstall); err == nil {
		mustSucceed(t, e.WaitJob(rj.ID, 2*time.Minute))
	}
	secretBefore, err := c.Client.CoreV1().Secrets(data.DataNamespace).Get(ctx, data.KVAdminSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, jobsBefore, _ := e.Store.ListJobsPage(ctx, second.ID, 1, 0)
	var refused struct{ Error string }
	if st := e.JSON("POST", "/api/knative-regions/"+second.ID+"/data-services/kv", tok, nil, &refused); st != 422 ||
		!strings.Contains(refused.Error, "region own's") {
		t.Fatalf("kv on a second region of the cluster: %d %+v, want 422 naming own", st, refused)
	}
	if _, n, _ := e.Store.ListJobsPage(ctx, second.ID, 1, 0); n != jobsBefore {
		t.Fatalf("the refusal queued a job: %d jobs, %d before", n, jobsBefore)
	}
	after, err := c.Client.CoreV1().Secrets(data.DataNamespace).Get(ctx, data.KVAdminSecret, metav1.GetOptions{})
	if err != nil || after.ResourceVersion != secretBefore.ResourceVersion {
		t.Fatalf("the refusal changed own's KV admin Secret: %v", err)
	}
	if svcs, _ := dataServices(t, e, tok, second.ID); svcs["kv"].Status != store.ComponentNotInstalled {
		t.Fatalf("next's kv after the refusal: %+v", svcs["kv"])
	}
}
