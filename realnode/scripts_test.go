package realnode

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"runr.dev/console/agent/nodeprobe"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"runr.dev/console/ops/data"
	"runr.dev/console/ops/registry"
	"runr.dev/console/store"
	"runr.dev/console/testcluster"
	"runr.dev/console/web/webtest"
)

// hostRedis is a Redis server of this machine (Debian's redis-tools) with a password, on
// loopback.
type hostRedis struct {
	addr, password string
}

func startHostRedis(t *testing.T) *hostRedis {
	t.Helper()
	dir := t.TempDir()
	// redis-tools ships the server as redis-check-rdb: under the name redis-server it serves.
	server := filepath.Join(dir, "redis-server")
	if err := os.Symlink("/usr/bin/redis-check-rdb", server); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	r := &hostRedis{addr: fmt.Sprintf("127.0.0.1:%d", port), password: "redis-password-of-the-test"}
	cmd := exec.Command(server, "--bind", "127.0.0.1", "--port", fmt.Sprint(port), "--requirepass", r.password,
		"--save", "", "--appendonly", "no", "--dir", dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	logf, _ := os.Create(filepath.Join(dir, "redis.log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("redis-server (Debian's redis-tools): %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	eventually(t, 10*time.Second, func() string { raw, _ := os.ReadFile(filepath.Join(dir, "redis.log")); return string(raw) }, func() bool {
		out, _ := r.cli("PING")
		return out == "PONG"
	})
	return r
}

// cli runs redis-cli against the server as its default user, or with extra arguments first.
func (r *hostRedis) cli(args ...string) (string, error) {
	host, port, _ := net.SplitHostPort(r.addr)
	full := append([]string{"-h", host, "-p", port, "--no-auth-warning", "-a", r.password}, args...)
	out, err := exec.Command("redis-cli", full...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// as runs redis-cli as another user.
func (r *hostRedis) as(user, password string, args ...string) string {
	host, port, _ := net.SplitHostPort(r.addr)
	out, _ := exec.Command("redis-cli", append([]string{"-h", host, "-p", port, "--no-auth-warning", "--user", user, "--pass", password}, args...)...).CombinedOutput()
	return strings.TrimSpace(string(out))
}

// jobPodsOnRealNode lists the console's Job pods of a namespace that ran on the real node.
func jobPodsOnRealNode(t *testing.T, c *testcluster.Cluster, ns string) []corev1.Pod {
	t.Helper()
	pods, err := c.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "job-name", FieldSelector: "spec.nodeName=" + testcluster.RealNodeName})
	if err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// jobSucceededOn says whether the Job's pod ran to success on the real node.
func jobSucceededOn(t *testing.T, c *testcluster.Cluster, ns, job string) bool {
	t.Helper()
	for _, p := range jobPodsOnRealNode(t, c, ns) {
		if p.Labels["job-name"] == job && p.Status.Phase == corev1.PodSucceeded {
			return true
		}
	}
	return false
}

// TestInClusterScriptsOnARealNode runs the shell scripts the console writes into Jobs on a
// real node, with images of Debian's programs (testcluster.CurlImage, RedisImage): the Redis
// PING test against a Redis server, the KV data service's redis-cli ACL Jobs (a binding's
// user exists on the server, limited to its prefix, and is gone after unbinding), the
// external registry's test pod, the KVM probe, and the S3 bucket check of a registry on S3 against a real
// SeaweedFS S3 gateway. A wrong password or address makes each check fail: the scripts ran.
func TestInClusterScriptsOnARealNode(t *testing.T) {
	ctx := context.Background()
	c := realCluster(t, testcluster.Options{Nodes: []testcluster.NodeSpec{}})
	e := consoleOn(t, c, nil)
	for _, spec := range []testcluster.HostImageSpec{testcluster.CurlImage, testcluster.RedisImage} {
		ref := spec.Ref
		if spec.Ref == testcluster.RedisImage.Ref {
			ref = e.Cfg.RedisImage
		}
		if err := c.PushHostImage(ctx, spec, ref); err != nil {
			t.Fatal(err)
		}
	}
	_, tok := e.User("owner")
	r := createRegion(t, e, tok, c, "sc")

	redis := startHostRedis(t)
	redisInside, err := c.Expose(redis.addr, 6379)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("RedisPing", func(t *testing.T) {
		// The region's Redis is the server of this machine; the Redis test runs redis-cli
		// PING from a pod, which fails with a wrong password.
		run := func(path string, body any) *store.Job {
			var ans struct {
				JobID string `json:"job_id"`
			}
			if st := e.JSON("POST", "/api/knative-regions/"+r.ID+"/"+path, tok, body, &ans); st != 202 {
				t.Fatalf("%s: %d", path, st)
			}
			return e.WaitJob(ans.JobID, 3*time.Minute)
		}
		mustSucceed(t, e, run("redis", map[string]any{"mode": "external", "address": redisInside, "password": "not-the-password"}))
		if j := run("test-redis", nil); j.Status != store.JobFailed {
			t.Fatalf("redis-cli PING with a wrong password: %s\n%s", j.Status, jobLog(t, e, j.ID))
		}
		mustSucceed(t, e, run("redis", map[string]any{"mode": "external", "address": redisInside, "password": redis.password}))
		mustSucceed(t, e, run("test-redis", nil))
		if !jobSucceededOn(t, c, r.Name, "runr-redis-ping") {
			t.Fatalf("the PING Job did not run on the real node: %+v", jobPodsOnRealNode(t, c, r.Name))
		}
	})

	t.Run("KVBindings", func(t *testing.T) {
		mustSucceed(t, e, action(t, e, tok, r.ID, "data-services/kv", map[string]any{}))
		bind := func(project string) store.Binding {
			t.Helper()
			var bound struct {
				JobID string `json:"job_id"`
				Error string
			}
			if st := e.JSON("POST", "/api/projects/"+project+"/bindings", tok, map[string]string{"service": "kv"}, &bound); st != 202 {
				t.Fatalf("bind: %d %s", st, bound.Error)
			}
			mustSucceed(t, e, e.WaitJob(bound.JobID, 3*time.Minute))
			bs, err := e.Store.RegionBindings(ctx, r.ID, "kv")
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range bs {
				if b.ProjectID == project {
					return b
				}
			}
			t.Fatalf("no binding of project %s among %+v", project, bs)
			return store.Binding{}
		}
		project := createProject(t, e, tok, r.ID, "cart")
		b := bind(project)
		other := bind(createProject(t, e, tok, r.ID, "wishlist"))
		user, pw, prefix := b.Resource, b.Credentials["REDIS_PASSWORD"], b.Credentials["REDIS_KEY_PREFIX"]
		// The ACL Job made the user on the server: it may use its prefix, nothing else,
		// not even another binding's prefix.
		if out := redis.as(user, pw, "SET", prefix+"basket", "3"); out != "OK" {
			t.Fatalf("SET %sbasket as %s: %s", prefix, user, out)
		}
		if out := redis.as(user, pw, "SET", "elsewhere", "1"); !strings.Contains(out, "NOPERM") {
			t.Fatalf("SET outside the prefix as %s: %s", user, out)
		}
		otherPrefix := other.Credentials["REDIS_KEY_PREFIX"]
		if out := redis.as(other.Resource, other.Credentials["REDIS_PASSWORD"], "SET", otherPrefix+"wish", "1"); out != "OK" {
			t.Fatalf("SET %swish as %s: %s", otherPrefix, other.Resource, out)
		}
		if out := redis.as(user, pw, "GET", otherPrefix+"wish"); !strings.Contains(out, "NOPERM") {
			t.Fatalf("GET of another binding's key %swish as %s: %s", otherPrefix, user, out)
		}
		if out := redis.as(user, pw, "FLUSHALL"); !strings.Contains(out, "NOPERM") {
			t.Fatalf("FLUSHALL as %s: %s", user, out)
		}
		var unbound struct {
			JobID string `json:"job_id"`
		}
		if st := e.JSON("DELETE", "/api/projects/"+project+"/bindings/kv", tok, nil, &unbound); st != 202 {
			t.Fatalf("unbind: %d", st)
		}
		mustSucceed(t, e, e.WaitJob(unbound.JobID, 3*time.Minute))
		if out, _ := redis.cli("ACL", "GETUSER", user); out != "" {
			t.Fatalf("the user %s is still on the server: %q", user, out)
		}
		if out, _ := redis.cli("EXISTS", prefix+"basket"); out != "0" {
			t.Fatalf("the binding's keys are still there: %s", out)
		}
		if out, _ := redis.cli("EXISTS", otherPrefix+"wish"); out != "1" {
			t.Fatalf("unbinding %s took another binding's keys: %s", user, out)
		}
		if st := e.JSON("DELETE", "/api/projects/"+other.ProjectID+"/bindings/kv", tok, nil, &unbound); st != 202 {
			t.Fatalf("unbind: %d", st)
		}
		mustSucceed(t, e, e.WaitJob(unbound.JobID, 3*time.Minute))
		if len(jobPodsOnRealNode(t, c, data.DataNamespace)) < 3 {
			t.Fatalf("the ACL Jobs did not run on the real node: %+v", jobPodsOnRealNode(t, c, data.DataNamespace))
		}
	})

	t.Run("QueueWorker", func(t *testing.T) {
		// A queue-worker project deployed by the console consumes its stream from the
		// region's Redis (this machine's server): its program is a shell loop of
		// redis-cli in the Redis image, reading with a consumer group and recording what it
		// consumed under consumed:<body>.
		const worker = `export REDISCLI_AUTH="$REDIS_PASSWORD"
host=${REDIS_ADDRESS%:*}; port=${REDIS_ADDRESS##*:}
cli() { redis-cli -h "$host" -p "$port" --raw "$@"; }
cli XGROUP CREATE "$QUEUE_STREAM" workers 0 MKSTREAM || true
echo "consuming $QUEUE_STREAM"
while :; do
  set -- $(cli XREADGROUP GROUP workers w1 COUNT 1 BLOCK 5000 STREAMS "$QUEUE_STREAM" ">")
  if [ $# -ge 4 ]; then
    cli SET "consumed:$4" "$2" >/dev/null && cli XACK "$QUEUE_STREAM" workers "$2" >/dev/null && echo "consumed $2 $4"
  fi
done`
		var created struct {
			Data   struct{ ID, Slug string }
			Fields map[string]string
		}
		body := map[string]any{"name": "orders", "region_id": r.ID, "image": e.Cfg.RedisImage, "kind": "queue_worker",
			"queue_stream": "orders", "command": []string{"sh", "-c", worker}}
		if st := e.JSON("POST", "/api/projects", tok, body, &created); st != 201 {
			t.Fatalf("create the queue worker: %d %+v", st, created)
		}
		var deployed struct {
			JobID string `json:"job_id"`
			Error string
		}
		if st := e.JSON("POST", "/api/projects/"+created.Data.ID+"/deploy", tok, nil, &deployed); st != 202 {
			t.Fatalf("deploy: %d %s", st, deployed.Error)
		}
		mustSucceed(t, e, e.WaitJob(deployed.JobID, 3*time.Minute))
		pod := c.WaitRealPod(t, r.Name, "runr.dev/project="+created.Data.ID, 2*time.Minute)
		if out, err := redis.cli("XADD", "orders", "*", "body", "order-1234"); err != nil {
			t.Fatalf("XADD: %v %s", err, out)
		}
		// Consumed (recorded), then acknowledged: nothing pending for the group.
		eventually(t, time.Minute, func() string {
			pending, _ := redis.cli("XPENDING", "orders", "workers")
			return "pending: " + pending + "\n" + podLog(t, c, r.Name, "runr.dev/project="+created.Data.ID)
		}, func() bool {
			out, _ := redis.cli("GET", "consumed:order-1234")
			pending, _ := redis.cli("XPENDING", "orders", "workers")
			return out != "" && strings.HasPrefix(pending, "0")
		})
		if pod.Spec.NodeName != testcluster.RealNodeName {
			t.Fatalf("the worker ran on %s", pod.Spec.NodeName)
		}
	})

	t.Run("ExternalRegistryTest", func(t *testing.T) {
		test := func(address string) *store.Job {
			return action(t, e, tok, r.ID, "test-registry", map[string]any{"registry_mode": "external", "external_address": address,
				"external_username": "robot", "external_password": "robot-password"})
		}
		// The cluster's own registry answers /v2/ inside the namespace; a closed port does not.
		mustSucceed(t, e, test("http://"+testcluster.NodeIP+":"+testcluster.RegistryPort))
		if !jobSucceededOn(t, c, registry.Namespace, registry.RegistryTestJob) {
			t.Fatalf("the registry test pod did not run on the real node")
		}
		if j := test("http://" + testcluster.NodeIP + ":5999"); j.Status != store.JobFailed {
			t.Fatalf("a registry nobody serves passed the test: %s", j.Status)
		}
	})

	t.Run("KVMProbe", func(t *testing.T) {
		// The probe's pod on the real node labels it with whether /dev/kvm is there.
		_, err := os.Stat("/dev/kvm")
		want := fmt.Sprint(err == nil)
		mustSucceed(t, e, action(t, e, tok, r.ID, "probe-kvm", nil))
		n, err := c.Client.CoreV1().Nodes().Get(ctx, testcluster.RealNodeName, metav1.GetOptions{})
		if err != nil || n.Labels[testcluster.KVMLabel] != want {
			t.Fatalf("the KVM probe labelled the real node %s=%q, this machine's /dev/kvm says %s", testcluster.KVMLabel, n.Labels[testcluster.KVMLabel], want)
		}
	})

	t.Run("NodeProbe", func(t *testing.T) {
		// The node probe's pod on the real node measures this machine: its cgroup version,
		// the free space behind /var/lib/containerd, its OS release; egress fails, since the
		// cluster's namespace reaches no other address.
		mustSucceed(t, e, action(t, e, tok, r.ID, "nodes-probe", nil))
		n, err := c.Client.CoreV1().Nodes().Get(ctx, testcluster.RealNodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var rep nodeprobe.Report
		if err := json.Unmarshal([]byte(n.Annotations[nodeprobe.Annotation]), &rep); err != nil {
			t.Fatalf("the node probe's report %q: %v", n.Annotations[nodeprobe.Annotation], err)
		}
		here := nodeprobe.Probe(ctx, "/", nil)
		if rep.Cgroup != here.Cgroup || strings.Join(rep.Controllers, " ") != strings.Join(here.Controllers, " ") || rep.OSRelease != here.OSRelease {
			t.Fatalf("the probe on the real node found %+v; this machine is %+v", rep, here)
		}
		if rep.DiskPath != here.DiskPath || rep.FreeBytes == 0 || float64(rep.FreeBytes) < 0.9*float64(here.FreeBytes) || float64(rep.FreeBytes) > 1.1*float64(here.FreeBytes) {
			t.Fatalf("free disk on the real node %s %d; this machine %s %d", rep.DiskPath, rep.FreeBytes, here.DiskPath, here.FreeBytes)
		}
		if len(rep.Egress) != 2 || rep.Egress[0].OK || rep.Egress[1].OK {
			t.Fatalf("egress from the cluster's namespace: %+v", rep.Egress)
		}
	})

	t.Run("S3BucketCheck", func(t *testing.T) {
		weed, err := testcluster.StartSeaweedFS(t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(weed.Stop)
		client := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(weed.URL), UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider(weed.AccessKey, weed.SecretKey, "")})
		if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("runr-images")}); err != nil {
			t.Fatal(err)
		}
		inside, err := c.Expose(strings.TrimPrefix(weed.URL, "http://"), 8333)
		if err != nil {
			t.Fatal(err)
		}
		check := func(secret string) *store.Job {
			return action(t, e, tok, r.ID, "test-registry", map[string]any{"registry_mode": "internal", "storage_type": "s3",
				"s3_config": map[string]any{"endpoint": "http://" + inside, "bucket": "runr-images", "region": "us-east-1",
					"access_key": weed.AccessKey, "secret_key": secret}})
		}
		if j := check("not-the-secret-key"); j.Status != store.JobFailed {
			t.Fatalf("a wrong secret key passed the bucket check: %s", j.Status)
		}
		j := check(weed.SecretKey)
		mustSucceed(t, e, j)
		if !strings.Contains(jobLog(t, e, j.ID), "A pod listed, wrote and deleted in the bucket") || !jobSucceededOn(t, c, registry.Namespace, registry.RegistryTestJob) {
			t.Fatalf("bucket check:\n%s", jobLog(t, e, j.ID))
		}
		// It cleaned up after itself.
		objs, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("runr-images")})
		if err != nil || len(objs.Contents) != 0 {
			t.Fatalf("the check left objects: %v %+v", err, objs)
		}
	})

	t.Run("ManagedRedis", func(t *testing.T) {
		// The console's managed Redis runs on the node from RunR's Redis image, with the
		// password the console generated; the PING Job reaches it through its Service's
		// name (CoreDNS, kube-proxy) with that password.
		mustSucceed(t, e, action(t, e, tok, r.ID, "redis", map[string]any{"mode": "managed"}))
		pod := c.WaitRealPod(t, r.Name, "app.kubernetes.io/name=runr-redis", 2*time.Minute)
		got, err := e.Store.RegionByID(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.RedisMode != store.RedisManaged || !strings.HasSuffix(got.RedisAddress, ".svc.cluster.local:6379") || got.RedisPassword == "" {
			t.Fatalf("the region's Redis: %s %s", got.RedisMode, got.RedisAddress)
		}
		j := action(t, e, tok, r.ID, "test-redis", nil)
		mustSucceed(t, e, j)
		eventually(t, time.Minute, func() string { return podLog(t, c, r.Name, "app.kubernetes.io/name=runr-redis") }, func() bool {
			return strings.Contains(podLog(t, c, r.Name, "app.kubernetes.io/name=runr-redis"), "Ready to accept connections")
		})
		if !jobSucceededOn(t, c, r.Name, "runr-redis-ping") || pod.Spec.NodeName != testcluster.RealNodeName {
			t.Fatalf("the managed Redis or its PING Job did not run on the real node:\n%s", jobLog(t, e, j.ID))
		}
	})

	t.Run("RedisInTheCluster", func(t *testing.T) {
		// A Redis the administrator already runs in the cluster (mode in_cluster): the
		// console takes its Service's address, removes its own managed Redis, installs
		// nothing, and the PING Job reaches that Redis by name; a wrong password fails.
		const ns, name, password = "queues", "queue-redis", "in-cluster-pw"
		runInClusterRedis(t, c, ns, name, e.Cfg.RedisImage, password)
		before, err := e.Store.RegionByID(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		var refused struct{ Fields map[string]string }
		if st := e.JSON("POST", "/api/knative-regions/"+r.ID+"/redis", tok, map[string]any{"mode": "in_cluster", "address": "redis.example.com:6379"}, &refused); st != 422 || refused.Fields["address"] == "" {
			t.Fatalf("an outside host as a Redis in the cluster: %d %+v", st, refused)
		}
		if after, _ := e.Store.RegionByID(ctx, r.ID); after.RedisMode != before.RedisMode || after.RedisAddress != before.RedisAddress {
			t.Fatalf("the refusal changed the region's Redis: %s %s", after.RedisMode, after.RedisAddress)
		}
		addr := name + "." + ns + ".svc:6379"
		mustSucceed(t, e, action(t, e, tok, r.ID, "redis", map[string]any{"mode": "in_cluster", "address": addr, "password": "not-the-password"}))
		if j := action(t, e, tok, r.ID, "test-redis", nil); j.Status != store.JobFailed {
			t.Fatalf("redis-cli PING with a wrong password: %s\n%s", j.Status, jobLog(t, e, j.ID))
		}
		mustSucceed(t, e, action(t, e, tok, r.ID, "redis", map[string]any{"mode": "in_cluster", "address": addr, "password": password}))
		j := action(t, e, tok, r.ID, "test-redis", nil)
		mustSucceed(t, e, j)
		got, err := e.Store.RegionByID(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.RedisMode != store.RedisInCluster || got.RedisAddress != addr || got.RedisStatus != store.ComponentReady {
			t.Fatalf("the region's Redis: %s %s %s", got.RedisMode, got.RedisAddress, got.RedisStatus)
		}
		if _, err := c.Client.AppsV1().Deployments(r.Name).Get(ctx, "runr-redis", metav1.GetOptions{}); err == nil {
			t.Fatal("the managed Redis stays while the region uses a Redis of the cluster")
		}
		if !jobSucceededOn(t, c, r.Name, "runr-redis-ping") {
			t.Fatalf("the PING Job did not run on the real node:\n%s", jobLog(t, e, j.ID))
		}
	})
}

// runInClusterRedis runs a Redis server with a password in the cluster (a Deployment and
// its Service of the name in ns, from the Redis image) and waits for it on the real node.
func runInClusterRedis(t *testing.T, c *testcluster.Cluster, ns, name, image, password string) {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"app": name}
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	one := int32(1)
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "redis", Image: image, Args: []string{"--requirepass", password},
					Ports: []corev1.ContainerPort{{ContainerPort: 6379}}}}}}}}
	if _, err := c.Client.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 6379, TargetPort: intstr.FromInt32(6379)}}}}
	if _, err := c.Client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.WaitRealPod(t, ns, "app="+name, 2*time.Minute)
	eventually(t, time.Minute, func() string { return podLog(t, c, ns, "app="+name) }, func() bool {
		return strings.Contains(podLog(t, c, ns, "app="+name), "Ready to accept connections")
	})
}

// createRegion creates a region without registry or Redis and waits for its preparation.
func createRegion(t *testing.T, e *webtest.Env, tok string, c *testcluster.Cluster, name string) *store.Region {
	t.Helper()
	var ans struct {
		Jobs   map[string]string
		Fields map[string]string
		Error  string
	}
	body := map[string]any{"name": name, "kubeconfig": string(c.Kubeconfig()), "redis_mode": "none"}
	if st := e.JSON("POST", "/api/knative-regions", tok, body, &ans); st != 201 {
		t.Fatalf("create region %s: %d %+v", name, st, ans)
	}
	for _, id := range ans.Jobs {
		mustSucceed(t, e, e.WaitJob(id, 3*time.Minute))
	}
	r, err := e.Store.RegionByName(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// createProject creates an HTTP function project of the region (not deployed).
func createProject(t *testing.T, e *webtest.Env, tok, regionID, name string) string {
	t.Helper()
	var ans struct {
		Data   struct{ ID string }
		Fields map[string]string
	}
	if st := e.JSON("POST", "/api/projects", tok, map[string]any{"name": name, "region_id": regionID, "image": "ghcr.io/acme/" + name + ":1"}, &ans); st != 201 {
		t.Fatalf("create project: %d %+v", st, ans)
	}
	return ans.Data.ID
}
