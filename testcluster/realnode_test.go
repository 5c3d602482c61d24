package testcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// echoDeployment runs the harness's echo program with a Service in front of it.
func echoDeployment(t *testing.T, c *Cluster, ns, name string) *corev1.Service {
	t.Helper()
	ctx := context.Background()
	if ns != "default" {
		if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	labels := map[string]string{"app": name}
	one := int32(1)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "echo", Image: EchoImage, Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}}}}}}
	if _, err := c.Client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	svc, err := c.Client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// getJSON calls a URL inside the cluster and decodes its JSON answer.
func getJSON(t *testing.T, c *Cluster, u string, out any) {
	t.Helper()
	var last error
	for i := 0; i < 40; i++ {
		resp, err := c.InClusterHTTP().Get(u)
		if err == nil {
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				if err := json.Unmarshal(raw, out); err != nil {
					t.Fatalf("%s: %v: %s", u, err, raw)
				}
				return
			}
			err = fmt.Errorf("%s: %s", resp.Status, raw)
		}
		last = err
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("GET %s: %v", u, last)
}

// TestRealNodeRunsPods: a pod of an image from the cluster's registry really runs on the
// real node; it answers on its pod address and through its Service, resolves Service names
// through CoreDNS, reaches the API through the kubernetes Service, and its log comes through
// the API server from the kubelet.
func TestRealNodeRunsPods(t *testing.T) {
	if missing := RealNodeMissing(); len(missing) > 0 {
		t.Fatalf("a real node needs the Debian packages %v (make test installs them)", missing)
	}
	c := New(t, Options{RealNode: true, Nodes: []NodeSpec{}})
	ctx := context.Background()
	svc := echoDeployment(t, c, "default", "echo")
	pod := c.WaitRealPod(t, "default", "app=echo", 2*time.Minute)
	if pod.Spec.NodeName != RealNodeName || pod.Status.PodIP == "" || !strings.HasPrefix(pod.Status.PodIP, "10.244.0.") {
		t.Fatalf("pod on %s at %s", pod.Spec.NodeName, pod.Status.PodIP)
	}
	// The pods' bridge keeps the MAC the harness gave it (the CNI plugin took the bridge
	// as it found it): pods coming and going never move the gateway's MAC.
	if out, err := c.ns.Command("ip", "-o", "link", "show", "cni0").CombinedOutput(); err != nil || !strings.Contains(string(out), "link/ether "+podBridgeMAC) {
		t.Fatalf("the pods' bridge: %v %s", err, out)
	}
	var got struct{ Host, Path string }
	getJSON(t, c, "http://"+pod.Status.PodIP+":8080/direct", &got)
	if got.Path != "/direct" {
		t.Fatalf("the pod answered %+v", got)
	}
	getJSON(t, c, "http://"+svc.Spec.ClusterIP+"/through-the-service", &got)
	if got.Path != "/through-the-service" {
		t.Fatalf("the Service answered %+v", got)
	}
	var resolved struct {
		Addrs []string
		Error string
	}
	getJSON(t, c, "http://"+pod.Status.PodIP+":8080/resolve?name=echo.default.svc.cluster.local", &resolved)
	if len(resolved.Addrs) != 1 || resolved.Addrs[0] != svc.Spec.ClusterIP {
		t.Fatalf("CoreDNS resolved echo.default.svc to %+v, want %s", resolved, svc.Spec.ClusterIP)
	}
	var fetched struct {
		Status int
		Body   string
		Error  string
	}
	getJSON(t, c, "http://"+pod.Status.PodIP+":8080/fetch?url="+url.QueryEscape("https://kubernetes.default.svc/version"), &fetched)
	if fetched.Status != http.StatusOK || !strings.Contains(fetched.Body, KubernetesVersion) {
		t.Fatalf("the pod reached the API through the kubernetes Service: %+v", fetched)
	}
	logs, err := c.Client.CoreV1().Pods("default").GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("the pod's log through the API server: %v", err)
	}
	if !strings.Contains(string(logs), "echo listening on :8080") {
		t.Fatalf("the pod's log: %q", logs)
	}
	if pulls := c.Registry.ManifestPulls(EchoImage); len(pulls) == 0 {
		t.Fatalf("the node pulled %s from elsewhere than the cluster's registry: %+v", EchoImage, c.Registry.Requests())
	}
	// A name outside the namespace resolves to nothing, at once.
	getJSON(t, c, "http://"+pod.Status.PodIP+":8080/resolve?name=example.com", &resolved)
	if resolved.Error == "" {
		t.Fatalf("example.com resolved inside the namespace: %+v", resolved)
	}
}
