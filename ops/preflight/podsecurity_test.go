package preflight

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"runr.dev/console/ops/gpu"
	"runr.dev/console/ops/isolation"
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/observability"
	"runr.dev/console/ops/registry"
	"runr.dev/console/store/storetest"
)

// TestPodSecurityWarnsBeforeThePrivilegedPods: step 1 reads the Pod Security labels of the
// namespaces RunR runs privileged pods in, and the API server's admission configuration
// where the API server runs as a pod, and says what to exempt (issue 35).
func TestPodSecurityWarnsBeforeThePrivilegedPods(t *testing.T) {
	for _, ns := range []string{registry.Namespace, isolation.SandboxNamespace, observability.ObservabilityNamespace, gpu.GPUNamespace} {
		found := false
		for _, p := range PrivilegedNamespaces {
			found = found || p == ns
		}
		if !found {
			t.Errorf("namespace %s of RunR's privileged pods is not checked", ns)
		}
	}
	for _, tc := range []struct {
		name, namespaces, apiserver string
		status                      kit.CheckStatus
		want                        []string
	}{
		{"labels refuse", `{"metadata":{"name":"observability","labels":{"pod-security.kubernetes.io/enforce":"baseline"}}},
			{"metadata":{"name":"runr-sandbox","labels":{"pod-security.kubernetes.io/enforce":"restricted"}}},
			{"metadata":{"name":"runr-registry","labels":{"pod-security.kubernetes.io/enforce":"privileged"}}},
			{"metadata":{"name":"shop","labels":{"pod-security.kubernetes.io/enforce":"restricted"}}}`, "",
			kit.CheckWarn, []string{"namespace observability enforces baseline", "namespace runr-sandbox enforces restricted"}},
		{"an admission configuration", `{"metadata":{"name":"kube-system"}}`,
			`{"metadata":{"name":"kube-apiserver-cp1","namespace":"kube-system"},"spec":{"containers":[{"name":"kube-apiserver","command":["kube-apiserver","--admission-control-config-file=/etc/kubernetes/psa.yaml"]}]}}`,
			kit.CheckWarn, []string{"/etc/kubernetes/psa.yaml", "exempt the namespaces runr-registry, runr-sandbox, observability, runr-gpu"}},
		{"nothing refuses", `{"metadata":{"name":"observability"}},{"metadata":{"name":"shop","labels":{"pod-security.kubernetes.io/enforce":"restricted"}}}`, "",
			kit.CheckPass, []string{"no namespace RunR runs privileged pods in"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := counting(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				switch r.URL.Path {
				case "/version":
					io.WriteString(w, `{"major":"1","minor":"31","gitVersion":"v1.31.0"}`)
				case "/api/v1/namespaces":
					io.WriteString(w, `{"kind":"NamespaceList","apiVersion":"v1","metadata":{},"items":[`+tc.namespaces+`]}`)
				case "/api/v1/namespaces/kube-system/pods":
					if r.URL.Query().Get("labelSelector") != "component=kube-apiserver" {
						t.Errorf("pods listed with %q", r.URL.RawQuery)
					}
					io.WriteString(w, `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[`+tc.apiserver+`]}`)
				default:
					w.WriteHeader(http.StatusNotFound)
				}
			}))
			s := testService(true, "")
			s.Store = storetest.New(t)
			res, err := s.Check(context.Background(), "", kubeconfigFor(srv.URL, ""), nil)
			if err != nil {
				t.Fatal(err)
			}
			it := res.Item("pod-security")
			if it == nil || it.Status != tc.status {
				t.Fatalf("the Pod Security item: %+v, want %s", it, tc.status)
			}
			all := it.Evidence + "\n" + strings.Join(it.Details, "\n")
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("the item does not say %q:\n%s", w, all)
				}
			}
			if strings.Contains(all, "shop") {
				t.Errorf("a project namespace is not RunR's privileged pods':\n%s", all)
			}
		})
	}
}
