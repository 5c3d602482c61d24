package apitest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/handlers/lifecycle"
	"runr.dev/console/ops/nodes"
	"runr.dev/console/ops/redis"
	"runr.dev/console/ops/registry"
	"runr.dev/console/store"
	"runr.dev/console/testcluster"
)

type setupAnswer struct {
	SetupToken string `json:"setup_token"`
	SetupID    string `json:"setup_id"`
	JobID      string `json:"job_id"`
	Error      string `json:"error"`
	Fields     map[string]string
}

func setupBody(name string, kc []byte, extra map[string]any) map[string]any {
	b := map[string]any{"name": name, "kubeconfig": string(kc), "nodes": []string{},
		"registry_mode": "internal", "storage_type": "pvc", "pvc_config": map[string]any{"storageClass": "standard", "size": "5Gi"}}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

func TestSetupZotOnPVC(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	e := console(t, nil)
	_, tok := e.User("owner")

	var ans setupAnswer
	if st := e.JSON("POST", "/api/registry-setup/start", tok, setupBody("eu-2", c.Kubeconfig(), map[string]any{"nodes": []string{"worker-1"}}), &ans); st != 202 {
		t.Fatalf("start: %d %+v", st, ans)
	}
	j := e.WaitJob(ans.JobID, 3*time.Minute)
	if j.Status != store.JobSucceeded {
		t.Fatalf("setup %s: %s", j.Status, j.Error)
	}
	var status lifecycle.SetupStatus
	e.JSON("GET", "/api/registry-setup/"+ans.SetupToken+"/status", tok, nil, &status)
	if status.Status != "ready" || status.Phase != "done" || status.RegionID == nil {
		t.Fatalf("status %+v", status)
	}
	var reg struct{ Data map[string]any }
	e.JSON("GET", "/api/knative-regions/"+*status.RegionID, tok, nil, &reg)
	if reg.Data["registry_status"] != "ready" || reg.Data["name"] != "eu-2" || reg.Data["kubeconfig"] != nil {
		t.Fatalf("region %+v", reg.Data)
	}
	ctx := context.Background()
	// What the setup created on the cluster.
	// On a PVC the zot chart makes a StatefulSet whose volume claim template gives the
	// claim runr-zot-pvc-runr-zot-0 (zot 0.1.122, templates/statefulset.yaml).
	if _, err := c.Client.AppsV1().StatefulSets(registry.Namespace).Get(ctx, registry.ZotRelease, metav1.GetOptions{}); err != nil {
		t.Fatalf("Zot StatefulSet: %v", err)
	}
	pvc, err := c.Client.CoreV1().PersistentVolumeClaims(registry.Namespace).Get(ctx, "runr-zot-pvc-runr-zot-0", metav1.GetOptions{})
	if err != nil || pvc.Status.Phase != corev1.ClaimBound || *pvc.Spec.StorageClassName != "standard" {
		t.Fatalf("Zot PVC: %v %+v", err, pvc)
	}
	// Zot's own config file carries the storage and the pull-through cache.
	cm, err := c.Client.CoreV1().ConfigMaps(registry.Namespace).Get(ctx, registry.ZotRelease+"-config", metav1.GetOptions{})
	if err != nil || !strings.Contains(cm.Data["config.json"], `"/var/lib/registry"`) || !strings.Contains(cm.Data["config.json"], `"https://ghcr.io"`) {
		t.Fatalf("Zot config: %v %v", err, cm.Data)
	}
	if _, err := c.Client.AppsV1().DaemonSets(registry.Namespace).Get(ctx, registry.MirrorDaemonSet, metav1.GetOptions{}); err != nil {
		t.Fatalf("node mirror: %v", err)
	}
	if _, err := c.Client.AppsV1().DaemonSets(registry.Namespace).Get(ctx, registry.PrepullDaemonSet, metav1.GetOptions{}); err == nil {
		t.Fatal("the pre-pull DaemonSet is short-lived")
	}
	if _, err := c.Client.CoreV1().PersistentVolumeClaims(registry.Namespace).Get(ctx, registry.StorageTestPVC, metav1.GetOptions{}); err == nil {
		t.Fatal("the test volume must be removed")
	}
	if _, err := c.Client.CoreV1().Namespaces().Get(ctx, "eu-2", metav1.GetOptions{}); err != nil {
		t.Fatalf("project namespace: %v", err)
	}
	n, _ := c.Client.CoreV1().Nodes().Get(ctx, "worker-1", metav1.GetOptions{})
	if n.Labels[nodes.DedicatedKey] != nodes.DedicatedValue || !hasTaint(n, nodes.DedicatedKey) {
		t.Fatalf("worker-1 must be dedicated: %v %v", n.Labels, n.Spec.Taints)
	}
	// The managed Redis was queued and runs.
	r, _ := e.Store.RegionByName(ctx, "eu-2")
	rj, err := e.Store.LatestJob(ctx, r.ID, redis.KindRedisInstall)
	if err != nil {
		t.Fatal("the managed Redis must be queued")
	}
	if j := e.WaitJob(rj.ID, time.Minute); j.Status != store.JobSucceeded {
		t.Fatalf("redis: %s", j.Error)
	}
	// Every wait was named, with its deadline.
	evs, _ := e.Store.JobEvents(ctx, ans.JobID, 0, 1000)
	named := false
	for _, ev := range evs {
		if ev.Kind == "wait" && strings.Contains(ev.Message, "waiting for PVC runr-registry/storage-test to bind (4 s)") {
			named = true
		}
	}
	if !named {
		t.Fatal("the storage wait must be named with its deadline")
	}
	// A second setup with the same name is refused.
	if st := e.JSON("POST", "/api/registry-setup/start", tok, setupBody("eu-2", c.Kubeconfig(), nil), &ans); st != 422 {
		t.Fatalf("same name again: %d", st)
	}
}

func hasTaint(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

func TestSetupExternalRegistry(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	e := console(t, nil)
	_, tok := e.User("owner")
	var ans setupAnswer
	body := setupBody("ext", c.Kubeconfig(), map[string]any{"registry_mode": "external", "external_address": "registry.example.com",
		"external_username": "bot", "external_password": "EXT-REG-PASSWORD", "redis_mode": "external", "redis_address": "redis.example.com:6379"})
	if st := e.JSON("POST", "/api/registry-setup/start", tok, body, &ans); st != 202 {
		t.Fatalf("start: %d %+v", st, ans)
	}
	if j := e.WaitJob(ans.JobID, 2*time.Minute); j.Status != store.JobSucceeded {
		t.Fatalf("setup: %s", j.Error)
	}
	ctx := context.Background()
	j, _ := c.Client.BatchV1().Jobs(registry.Namespace).Get(ctx, registry.RegistryTestJob, metav1.GetOptions{})
	if j == nil || j.Status.Succeeded != 1 || !strings.Contains(strings.Join(j.Spec.Template.Spec.Containers[0].Args, " "), "https://registry.example.com/v2/") {
		t.Fatalf("the registry must be tested from a pod: %+v", j)
	}
	if _, err := c.Client.AppsV1().Deployments(registry.Namespace).Get(ctx, registry.ZotRelease, metav1.GetOptions{}); err == nil {
		t.Fatal("no Zot for an external registry")
	}
	r, _ := e.Store.RegionByName(ctx, "ext")
	if r.RegistryAddress != "registry.example.com" || r.RegistrySecret != "EXT-REG-PASSWORD" || r.RedisMode != store.RedisExternal {
		t.Fatalf("region %+v", r)
	}
	// The password is in no API answer.
	if _, resp := e.Raw("GET", "/api/knative-regions/"+r.ID, tok, ""); strings.Contains(resp, "EXT-REG-PASSWORD") {
		t.Fatal("a secret leaked into the API")
	}
}

func TestSetupBrokenStorageClassThenRetry(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	e := console(t, nil)
	_, tok := e.User("owner")
	var ans setupAnswer
	body := setupBody("eu-3", c.Kubeconfig(), map[string]any{"pvc_config": map[string]any{"storageClass": "broken"}})
	if st := e.JSON("POST", "/api/registry-setup/start", tok, body, &ans); st != 202 {
		t.Fatalf("start: %d %+v", st, ans)
	}
	j := e.WaitJob(ans.JobID, time.Minute)
	if j.Status != store.JobFailed || !strings.Contains(j.Error, "PVC runr-registry/storage-test") || !strings.Contains(j.Error, "4 s") ||
		!strings.Contains(j.Error, "choose another StorageClass") {
		t.Fatalf("want a clear failure naming the PVC and the next action, got %s: %q", j.Status, j.Error)
	}
	var status lifecycle.SetupStatus
	e.JSON("GET", "/api/registry-setup/"+ans.SetupToken+"/status", tok, nil, &status)
	if status.Status != "error" || status.Phase != "storage" {
		t.Fatalf("status %+v", status)
	}
	if _, err := e.Store.RegionByName(context.Background(), "eu-3"); err == nil {
		t.Fatal("no region before the setup succeeded")
	}
	// Retry with a class that binds.
	body["pvc_config"] = map[string]any{"storageClass": "fast-ssd"}
	if st := e.JSON("POST", "/api/registry-setup/"+ans.SetupToken+"/retry", tok, body, nil); st != 202 {
		t.Fatalf("retry: %d", st)
	}
	if j := e.WaitJob(ans.JobID, 2*time.Minute); j.Status != store.JobSucceeded {
		t.Fatalf("retry: %s", j.Error)
	}
	e.JSON("GET", "/api/registry-setup/"+ans.SetupToken+"/status", tok, nil, &status)
	if status.Status != "ready" || status.RegionID == nil {
		t.Fatalf("status after retry %+v", status)
	}
}

func TestSetupRefusals(t *testing.T) {
	old := testcluster.New(t, testcluster.Options{PresentVersion: "v1.29.4", Nodes: []testcluster.NodeSpec{{Name: "solo", CPU: "4", Memory: "8Gi", ControlPlane: true, Worker: true}}})
	c := testcluster.New(t, testcluster.Options{})
	e := console(t, nil)
	_, tok := e.User("owner")
	ctx := context.Background()
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "taken"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	execKC := strings.Replace(string(c.Kubeconfig()), "    token: "+c.AdminToken, "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: aws\n      args: [eks, get-token]", 1)
	unreachable := strings.Replace(string(c.Kubeconfig()), c.Server, fmt.Sprintf("https://127.0.0.1:%d", closedPort(t)), 1)
	cases := []struct {
		name, region, kc, field, want string
	}{
		{"too old", "old", string(old.Kubeconfig()), "kubeconfig", "v1.29.4 is older than the minimum 1.30"},
		{"namespace exists", "taken", string(c.Kubeconfig()), "name", "namespace taken already exists"},
		{"exec plugin", "execr", execKC, "kubeconfig", "exec plugin"},
		{"unreachable", "down", unreachable, "kubeconfig", "refused the connection"},
		{"bad name", "Bad_Name", string(c.Kubeconfig()), "name", "lowercase letters"},
		{"limited rights", "limited", string(c.LimitedKubeconfig()), "kubeconfig", "not cluster-admin"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{"/api/registry-setup/start", "/api/knative-regions"} {
				var ans setupAnswer
				st := e.JSON("POST", path, tok, setupBody(tc.region, []byte(tc.kc), nil), &ans)
				if st != 422 || !strings.Contains(ans.Fields[tc.field], tc.want) {
					t.Fatalf("%s: %d %q, want 422 with %q in %s", path, st, ans.Fields, tc.want, tc.field)
				}
			}
		})
	}
	// Nothing was created.
	if n, _ := e.Store.CountRegions(ctx, ""); n != 0 {
		t.Fatalf("%d regions created", n)
	}
}

// apiReviews is how many access reviews the cluster's API server has answered: each check
// of the cluster asks a fixed number of them.
func apiReviews(t *testing.T, c *testcluster.Cluster) int {
	t.Helper()
	raw, err := c.Client.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("read the API server's metrics: %v", err)
	}
	n := 0
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `resource="selfsubjectaccessreviews"`) || !strings.Contains(line, `verb="POST"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		n += int(v)
	}
	return n
}

// One Add Region checks its cluster twice in all, the wizard's check and the job's own,
// and the job builds one client set (the steps share what the first of them read).
func TestAddRegionChecksItsClusterOnce(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{})
	e := console(t, nil)
	_, tok := e.User("owner")
	before := apiReviews(t, c)
	if chk, err := e.Kube.Preflight.Check(context.Background(), "", c.Kubeconfig(), nil); err != nil || !chk.OK {
		t.Fatalf("a check: %v %+v", err, chk)
	}
	perCheck := apiReviews(t, c) - before
	if perCheck == 0 {
		t.Fatal("a check asked no access review")
	}

	before, built := apiReviews(t, c), e.Kube.ClientSetsBuilt()
	var ans setupAnswer
	if st := e.JSON("POST", "/api/registry-setup/start", tok, setupBody("once", c.Kubeconfig(), nil), &ans); st != 202 {
		t.Fatalf("start: %d %+v", st, ans)
	}
	if j := e.WaitJob(ans.JobID, 3*time.Minute); j.Status != store.JobSucceeded {
		t.Fatalf("setup %s: %s", j.Status, j.Error)
	}
	if checks := float64(apiReviews(t, c)-before) / float64(perCheck); checks != 2 {
		t.Fatalf("Add Region checked the cluster %.1f times (the wizard's check and the job's, 2, expected)", checks)
	}
	// The wizard's check builds one client set, the job one (none when the console has
	// one of this kubeconfig already).
	if n := e.Kube.ClientSetsBuilt() - built; n > 2 {
		t.Fatalf("Add Region built %d client sets of one cluster", n)
	}
}
