package kube

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"
)

// versionOf asks the server of a kubeconfig with a token (and, for https, the given CA or
// none) for its version through the console's clients, and returns the error.
func versionOf(t *testing.T, server, extra string, loopback bool) error {
	t.Helper()
	c := testCluster(t, server, extra, loopback)
	c.REST.Timeout = 2 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := c.ServerVersion(ctx)
	if err == nil {
		t.Fatalf("%s answered", server)
	}
	return err
}

// testCluster is the console's access to server with a token (and the extra cluster
// fields), loopback allowed or not.
func testCluster(t *testing.T, server, extra string, loopback bool) *Cluster {
	t.Helper()
	kc, err := ParseKubeconfig(kubeconfigFor(server, extra))
	if err != nil {
		t.Fatal(err)
	}
	kc.AllowLoopback = loopback
	c, err := NewCluster(kc)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// statusServer answers every request with an API status of the given code.
func statusServer(t *testing.T, code int, reason string) string {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":%q,"code":%d}`, reason, code)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestClassifyFromTypes: each kind comes from a real failure of the console's clients
// (a closed port, a certificate of another authority, a silent server, API statuses, the
// dialer's refusal), and a message that merely says "connection refused" is no kind.
func TestClassifyFromTypes(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "https://" + closed.Addr().String()
	closed.Close()

	silent := silentListener(t)

	otherCA := httptest.NewUnstartedServer(http.NotFoundHandler())
	otherCA.Config.ErrorLog = log.New(io.Discard, "", 0) // the client's "bad certificate" alert
	otherCA.StartTLS()
	t.Cleanup(otherCA.Close)
	insecure := "    insecure-skip-tls-verify: true"

	for _, tc := range []struct {
		name string
		err  error
		want Failure
	}{
		{"closed port", versionOf(t, closedURL, "", true), FailureConnectionRefused},
		{"loopback refused by the dialer", versionOf(t, closedURL, "", false), FailureAddressRefused},
		{"no answer", versionOf(t, "https://"+silent.Addr().String(), insecure, true), FailureTimeout},
		{"certificate of another authority", versionOf(t, otherCA.URL, "", true), FailureTLS},
		{"401", versionOf(t, statusServer(t, 401, "Unauthorized"), insecure, true), FailureUnauthorized},
		{"403", versionOf(t, statusServer(t, 403, "Forbidden"), insecure, true), FailureForbidden},
		{"404", versionOf(t, statusServer(t, 404, "NotFound"), insecure, true), FailureNotFound},
		{"unresolved name", &url.Error{Op: "Get", URL: "https://k.invalid", Err: &net.OpError{Op: "dial", Net: "tcp",
			Err: &net.DNSError{Err: "no such host", Name: "k.invalid", IsNotFound: true}}}, FailureNoSuchHost},
		{"only the words", fmt.Errorf("connection refused by a certificate 401 forbidden"), FailureOther},
	} {
		if got := Classify(tc.err); got != tc.want {
			t.Errorf("%s: %v classified %q, want %q", tc.name, tc.err, got.Short(), tc.want.Short())
		}
	}
}

// silentListener accepts connections on loopback and never speaks: a server that hangs.
func silentListener(t *testing.T) net.Listener {
	t.Helper()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Close() })
	go func() {
		for {
			conn, err := silent.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { conn.Close() })
		}
	}()
	return silent
}
