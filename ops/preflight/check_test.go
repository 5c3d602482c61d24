package preflight

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"runr.dev/console/config"
	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
)

func kubeconfigFor(server string, extra string) []byte {
	return []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: c
contexts:
- name: c
  context: {cluster: k, user: u}
clusters:
- name: k
  cluster:
    server: %q
%s
users:
- name: u
  user: {token: abc}
`, server, extra))
}

func testService(allowLoopback bool, localHost string) *Service {
	return &Service{Kit: &kit.Kit{Cfg: &config.Config{AllowLoopbackClusters: allowLoopback, LocalClusterHost: localHost, MinK8sMinor: 30},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}}
}

func counting(t *testing.T, h http.Handler) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			n.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &n
}

// TestPreflightRefusesAddresses: the preflight never connects to a refused address,
// whatever form the URL spells it in; loopback only when allowed.
func TestPreflightRefusesAddresses(t *testing.T) {
	srv, conns := counting(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }))
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	s := testService(false, "")
	for _, server := range []string{
		"https://169.254.169.254:6443", "http://[fe80::1]:6443", "https://0.0.0.0:6443", "https://224.0.0.1:6443",
		"https://255.255.255.255:6443", "https://[::ffff:169.254.169.254]:443",
		fmt.Sprintf("http://127.0.0.1:%d", port), fmt.Sprintf("http://localhost:%d", port),
		fmt.Sprintf("http://[::ffff:127.0.0.1]:%d", port), fmt.Sprintf("http://127.1.2.3:%d", port),
	} {
		res, err := s.Check(context.Background(), "", kubeconfigFor(server, ""), nil)
		if err != nil {
			t.Fatal(err)
		}
		it := res.Item("api")
		if res.OK || it == nil || it.Status != kit.CheckFail || !strings.Contains(it.Evidence, "refused") {
			t.Errorf("%s: %+v", server, it)
		}
	}
	if n := conns.Load(); n != 0 {
		t.Fatalf("the loopback server got %d connection(s) while loopback is refused", n)
	}
}

// TestPreflightEvidenceNeverEchoesBodies: a failed answer is reported by its status,
// and a redirect to a refused address is not followed.
func TestPreflightEvidenceNeverEchoesBodies(t *testing.T) {
	secret := "SECRET-INTERNAL-PAGE-" + strings.Repeat("x", 50)
	srv, _ := counting(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/version" && r.URL.Query().Get("redirected") == "" {
			if strings.Contains(r.Header.Get("User-Agent"), "runr") && r.Header.Get("X-Redirect") == "" {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(http.StatusBadGateway)
				io.WriteString(w, "<html>"+secret+"</html>")
				return
			}
		}
		w.WriteHeader(404)
	}))
	s := testService(true, "")
	res, _ := s.Check(context.Background(), "", kubeconfigFor(srv.URL, ""), nil)
	it := res.Item("api")
	if it == nil || it.Status != kit.CheckFail || strings.Contains(it.Evidence, "SECRET") || !strings.Contains(it.Evidence, "502") {
		t.Fatalf("evidence: %+v", it)
	}

	redir, _ := counting(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
	}))
	res, _ = s.Check(context.Background(), "", kubeconfigFor(redir.URL, ""), nil)
	if it := res.Item("api"); it == nil || it.Status != kit.CheckFail || !strings.Contains(it.Evidence, "refused") {
		t.Fatalf("redirect to a link-local address: %+v", it)
	}
}

func TestKubeconfigRefusalsAndWarnings(t *testing.T) {
	if _, err := kube.ParseKubeconfig(kubeconfigFor("https://203.0.113.10:6443", "    proxy-url: http://127.0.0.1:3128")); err == nil || !strings.Contains(err.Error(), "proxy") {
		t.Fatalf("proxy-url: %v", err)
	}
	s := testService(true, "")
	res, _ := s.Check(context.Background(), "", kubeconfigFor("https://127.0.0.1:1", "    insecure-skip-tls-verify: true"), nil)
	if it := res.Item("tls"); it == nil || it.Status != kit.CheckWarn {
		t.Fatalf("insecure-skip-tls-verify must warn: %+v", res.Items)
	}
	// The local-cluster retry only when RUNR_LOCAL_CLUSTER_HOST is set.
	res, _ = s.Check(context.Background(), "", kubeconfigFor("https://127.0.0.1:1", ""), nil)
	if strings.Contains(res.Item("api").Evidence, "also tried") {
		t.Fatal("retried without RUNR_LOCAL_CLUSTER_HOST")
	}
	res, _ = testService(true, "127.0.0.3").Check(context.Background(), "", kubeconfigFor("https://127.0.0.1:1", ""), nil)
	if !strings.Contains(res.Item("api").Evidence, "also tried") {
		t.Fatalf("no retry with RUNR_LOCAL_CLUSTER_HOST: %s", res.Item("api").Evidence)
	}
	// The rewrite keeps TLS verification: the CA stays, checked against the original name.
	kc, err := kube.ParseKubeconfig(kubeconfigFor("https://localhost:6443", "    certificate-authority-data: "+
		"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJBREFOQmdrcWhraUc5dzBCQVFFRkFBT0NBUTBBTUlJQkNnS0NBUUVBCi0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K"))
	if err != nil {
		t.Fatal(err)
	}
	rk, err := kc.WithHost("host.docker.internal")
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := clientcmd.Load(rk.Raw)
	cl := cfg.Clusters["k"]
	if cl.InsecureSkipTLSVerify || len(cl.CertificateAuthorityData) == 0 || cl.TLSServerName != "localhost" {
		t.Fatalf("rewrite dropped TLS verification: insecure=%v ca=%d name=%q", cl.InsecureSkipTLSVerify, len(cl.CertificateAuthorityData), cl.TLSServerName)
	}
}

// A check whose local-host rewrite names the same address asks the server once: the
// sandbox sets RUNR_LOCAL_CLUSTER_HOST=127.0.0.1, and a hanging API took 20 s for a
// check that says 10 s.
func TestPreflightRewriteToTheSameHostIsNotTriedTwice(t *testing.T) {
	srv, conns := counting(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }))
	s := testService(true, "127.0.0.1")
	res, err := s.Check(context.Background(), "", kubeconfigFor(srv.URL, ""), nil)
	if err != nil || res.OK {
		t.Fatalf("a server answering 500: %v %+v", err, res)
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("the API was asked over %d connections, want 1", n)
	}
}
