package testcluster_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"runr.dev/console/testcluster"
)

func ptr[T any](v T) *T { return &v }

// exercise creates a Deployment and a LoadBalancer Service and waits for both.
func exercise(t *testing.T, c *testcluster.Cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	labels := map[string]string{"app": "hello"}
	_, err := c.Client.AppsV1().Deployments("default").Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "hello"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "hello", Image: "example.com/hello:1"}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Client.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "hello"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: labels,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for {
		d, err := c.Client.AppsV1().Deployments("default").Get(ctx, "hello", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.Client.CoreV1().Services("default").Get(ctx, "hello", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if d.Status.AvailableReplicas == 2 && len(s.Status.LoadBalancer.Ingress) > 0 {
			if ip := s.Status.LoadBalancer.Ingress[0].IP; ip != c.LBAddress {
				t.Fatalf("load balancer address %q, want %q", ip, c.LBAddress)
			}
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("deployment %d/2 available, service ingress %v", d.Status.AvailableReplicas, s.Status.LoadBalancer.Ingress)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func TestTwoClustersAtOnce(t *testing.T) {
	var cs [2]*testcluster.Cluster
	errs := make(chan error, 2)
	for i := range cs {
		go func(i int) {
			c, err := testcluster.Start(testcluster.Options{Log: t.Logf})
			cs[i] = c
			errs <- err
		}(i)
	}
	for range cs {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range cs {
		t.Cleanup(c.Stop)
	}
	if cs[0].Server == cs[1].Server || cs[0].LBAddress == cs[1].LBAddress {
		t.Fatal("clusters must be independent")
	}
	for _, c := range cs {
		exercise(t, c)
	}
	// The written kubeconfigs work, and the limited user may read but not write.
	for name, kc := range map[string][]byte{"admin": cs[0].Kubeconfig(), "limited": cs[0].LimitedKubeconfig()} {
		rc, err := clientcmd.RESTConfigFromKubeConfig(kc)
		if err != nil {
			t.Fatal(err)
		}
		cl := kubernetes.NewForConfigOrDie(rc)
		if _, err := cl.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{}); err != nil {
			t.Fatalf("%s: list pods: %v", name, err)
		}
		_, err = cl.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns-" + name}}, metav1.CreateOptions{})
		if name == "admin" && err != nil {
			t.Fatalf("admin create namespace: %v", err)
		}
		if name == "limited" && err == nil {
			t.Fatal("the limited user must not create namespaces")
		}
	}
}

func TestPresentedVersion(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{PresentVersion: "v1.29.4", Nodes: []testcluster.NodeSpec{{Name: "solo", CPU: "2", Memory: "4Gi", ControlPlane: true, Worker: true}}})
	rc, err := clientcmd.RESTConfigFromKubeConfig(c.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	cl := kubernetes.NewForConfigOrDie(rc)
	v, err := cl.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != "v1.29.4" || v.Minor != "29" {
		t.Fatalf("presented version %+v, want v1.29.4", v)
	}
	// Everything else passes through to the real API server.
	if _, err := cl.CoreV1().Nodes().Get(context.Background(), "solo", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestHelmInstallFromChartRepo installs the zot stand-in from the local repository with
// the Helm SDK into a simulated cluster: with persistence, a StatefulSet whose claim
// runr-zot-pvc-runr-zot-0 binds.
func TestHelmInstallFromChartRepo(t *testing.T) {
	s := serve(t)
	c := testcluster.New(t, testcluster.Options{})
	_, ch := s.chart(t, "zot", "0.1.125")
	ns := "runr-registry"
	rel := helmInstall(t, c, ch, "runr-zot", ns, map[string]any{"persistence": true, "pvc": map[string]any{"create": true, "storageClassName": "standard"}})
	if rel.Info.Status != "deployed" {
		t.Fatalf("release %s", rel.Info.Status)
	}
	sts, err := c.Client.AppsV1().StatefulSets(ns).Get(context.Background(), "runr-zot", metav1.GetOptions{})
	if err != nil || sts.Status.ReadyReplicas != 1 {
		t.Fatalf("StatefulSet runr-zot: %v %+v", err, sts.Status)
	}
	pvc, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), "runr-zot-pvc-runr-zot-0", metav1.GetOptions{})
	if err != nil || pvc.Status.Phase != corev1.ClaimBound {
		t.Fatalf("the registry's PVC must bind: %v %v", err, pvc.Status.Phase)
	}
}

// helmInstall installs a chart with the Helm SDK and waits for it (2 minutes).
func helmInstall(t *testing.T, c *testcluster.Cluster, ch *chart.Chart, release, ns string, vals map[string]any) *helmrelease.Release {
	t.Helper()
	kcPath := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kcPath, c.Kubeconfig(), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &kcPath
	flags.Namespace = &ns
	cfg := new(action.Configuration)
	if err := cfg.Init(flags, ns, "secret", t.Logf); err != nil {
		t.Fatal(err)
	}
	in := action.NewInstall(cfg)
	in.ReleaseName, in.Namespace, in.CreateNamespace, in.Wait, in.Timeout = release, ns, true, true, 2*time.Minute
	rel, err := in.Run(ch, vals)
	if err != nil {
		t.Fatalf("install %s: %v", release, err)
	}
	return rel
}

// helmUninstall uninstalls a release and waits for its resources to go.
func helmUninstall(t *testing.T, c *testcluster.Cluster, release, ns string) {
	t.Helper()
	kcPath := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kcPath, c.Kubeconfig(), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &kcPath
	flags.Namespace = &ns
	cfg := new(action.Configuration)
	if err := cfg.Init(flags, ns, "secret", t.Logf); err != nil {
		t.Fatal(err)
	}
	un := action.NewUninstall(cfg)
	un.Wait, un.Timeout = true, 2*time.Minute
	if _, err := un.Run(release); err != nil {
		t.Fatalf("uninstall %s: %v", release, err)
	}
}
