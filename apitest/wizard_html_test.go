package apitest

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/store"
	"runr.dev/console/testcluster"
)

// TestWizardRefusals runs step 1 of the wizard in the console (form posts, as a browser
// does) with every kind of unusable cluster: each is refused with the reason beside the
// field, and the form keeps what was typed.
func TestWizardRefusals(t *testing.T) {
	old := testcluster.New(t, testcluster.Options{PresentVersion: "v1.29.4", Nodes: []testcluster.NodeSpec{{Name: "solo", CPU: "4", Memory: "8Gi", ControlPlane: true, Worker: true}}})
	c := testcluster.New(t, testcluster.Options{Nodes: append(testcluster.DefaultNodes(), testcluster.NodeSpec{Name: "w-small", CPU: "1", Memory: "8Gi", Worker: true})})
	e := console(t, nil)
	u, _ := e.User("owner")
	ctx := context.Background()
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "taken"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b := e.NewBrowser()
	b.Login(u.Email, "password-of-owner")
	execKC := strings.Replace(string(c.Kubeconfig()), "    token: "+c.AdminToken, "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: gke-gcloud-auth-plugin", 1)
	unreachable := strings.Replace(string(c.Kubeconfig()), c.Server, fmt.Sprintf("https://127.0.0.1:%d", closedPort(t)), 1)
	cases := []struct{ name, region, kc, want string }{
		{"too old", "old", string(old.Kubeconfig()), "older than the minimum 1.30"},
		{"namespace exists", "taken", string(c.Kubeconfig()), "namespace taken already exists"},
		{"exec plugin", "execr", execKC, "exec plugin"},
		{"unreachable", "down", unreachable, "refused the connection"},
		{"bad name", "Bad_Name", string(c.Kubeconfig()), "lowercase letters"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b.Get("/regions/new")
			resp, body := b.PostForm("/regions/new/check", url.Values{"name": {tc.region}, "kubeconfig": {tc.kc}, "is_active": {"1"}}, true)
			if resp.StatusCode != 422 || !strings.Contains(body, tc.want) {
				t.Fatalf("status %d; want 422 with %q", resp.StatusCode, tc.want)
			}
			if !strings.Contains(body, `value="`+tc.region+`"`) {
				t.Fatal("the form must keep the name that was typed")
			}
			if strings.Contains(body, `data-testid="step2-form"`) {
				t.Fatal("step 2 must not open")
			}
		})
	}
	// A volume of class standard was made: step 2 says that standard provisions, and
	// that nothing is known of broken (its provisioner never made one).
	std := "standard"
	if _, err := c.Client.CoreV1().PersistentVolumeClaims("taken").Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "probe"},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &std, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		pvc, err := c.Client.CoreV1().PersistentVolumeClaims("taken").Get(ctx, "probe", metav1.GetOptions{})
		if err == nil && pvc.Status.Phase == corev1.ClaimBound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the claim of class standard is not bound after a minute: %v", err)
		}
	}
	// A good cluster opens step 2, and Save & Next creates the region through its setup.
	b.Get("/regions/new")
	resp, body := b.PostForm("/regions/new/check", url.Values{"name": {"eu-9"}, "kubeconfig": {string(c.Kubeconfig())}, "is_active": {"1"}}, true)
	if resp.StatusCode != 200 || !strings.Contains(body, `data-testid="step2-form"`) {
		t.Fatalf("step 1 of a good cluster: %d", resp.StatusCode)
	}
	if !strings.Contains(body, `data-node="w-small">below the floor: CPU: 1 CPU (at least 2)`) {
		t.Fatalf("step 2 must say which nodes are below the floor: %s", between(body, `name="nodes"`, "</fieldset>"))
	}
	if !strings.Contains(body, `data-class="standard" data-provisioning="yes"`) || !strings.Contains(body, `data-class="broken" data-provisioning="unknown"`) {
		t.Fatalf("step 2 must say which StorageClasses provision: %s", between(body, `data-testid="storage-evidence"`, "</ul>"))
	}
	sealed := between(body, `name="sealed" value="`, `"`)
	// Nothing is created before Save & Next: step 1 opens again, filled, to change the name.
	if !strings.Contains(body, `data-testid="step1-change"`) {
		t.Fatal("the done step 1 offers no change while step 2 is open")
	}
	resp, body = b.PostForm("/regions/new/edit", url.Values{"sealed": {sealed}}, true)
	if resp.StatusCode != 200 || !strings.Contains(body, `data-testid="step1-form"`) || !strings.Contains(body, `value="eu-9"`) ||
		!strings.Contains(body, "certificate-authority-data") {
		t.Fatalf("change step 1: %d, want step 1's form with the name and the kubeconfig", resp.StatusCode)
	}
	if resp, _ = b.PostForm("/regions/new/edit", url.Values{"sealed": {"enc:v1:AAAA"}}, true); resp.StatusCode != 422 {
		t.Fatalf("change step 1 of a tampered state: %d", resp.StatusCode)
	}
	// Dedicating a node below the floor asks for the confirmation naming its failed check.
	step2 := url.Values{"sealed": {sealed}, "registry_mode": {"external"}, "external_address": {"registry.example.com"},
		"redis_mode": {"external"}, "redis_address": {"redis.example.com:6379"}, "storage_type": {"pvc"}, "nodes": {"w-small"}}
	resp, body = b.PostForm("/regions/new/setup", step2, true)
	if resp.StatusCode != 422 || !strings.Contains(body, "w-small fails CPU: 1 CPU (at least 2). Confirm to dedicate it anyway.") ||
		!strings.Contains(body, `name="confirm_below_floor"`) {
		t.Fatalf("a node below the floor without the confirmation: %d %s", resp.StatusCode, between(body, `data-testid="error-confirm_below_floor"`, "</p>"))
	}
	if _, err := e.Store.RegionByName(ctx, "eu-9"); err == nil {
		t.Fatal("a refused step 2 created the region")
	}
	step2.Set("confirm_below_floor", "true")
	resp, _ = b.PostForm("/regions/new/setup", step2, true)
	if resp.StatusCode != 303 || !strings.HasPrefix(resp.Header.Get("Location"), "/regions/setups/") {
		t.Fatalf("Save & Next: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	// A tampered wizard state is refused, not trusted.
	resp, _ = b.PostForm("/regions/new/setup", url.Values{"sealed": {"enc:v1:AAAA"}, "registry_mode": {"external"}}, true)
	if resp.StatusCode != 422 {
		t.Fatalf("tampered state: %d", resp.StatusCode)
	}
	setup := resp.Header.Get("Location")
	_ = setup
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if r, err := e.Store.RegionByName(ctx, "eu-9"); err == nil && r.RegistryStatus == store.ComponentReady {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the wizard's setup did not create the region")
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The setup's "workers" step comes after the one that creates the region.
	for {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, "w-small", metav1.GetOptions{})
		if err == nil && n.Labels["runr.dev/dedicated"] != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the confirmed node below the floor is not dedicated: %v %v", err, n.Labels)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func between(s, a, b string) string {
	i := strings.Index(s, a)
	if i < 0 {
		return ""
	}
	s = s[i+len(a):]
	if j := strings.Index(s, b); j >= 0 {
		return s[:j]
	}
	return s
}
