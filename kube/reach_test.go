package kube

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// reach runs Cluster.Reach against server (with the extra cluster fields) within d.
func reach(t *testing.T, server, extra string, loopback bool, d time.Duration) (error, time.Duration) {
	t.Helper()
	c := testCluster(t, server, extra, loopback)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	start := time.Now()
	err := c.Reach(ctx)
	return err, time.Since(start)
}

// TestReach: the API server's connection and TLS handshake, with the kubeconfig's CA,
// within the caller's deadline; a server that accepts and never speaks is given up on at
// that deadline, and a certificate of another authority, a closed port and the address
// policy each fail the reach.
func TestReach(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	ca := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	withCA := "    certificate-authority-data: " + ca
	if err, _ := reach(t, srv.URL, withCA, true, 2*time.Second); err != nil {
		t.Fatalf("a TLS server with the kubeconfig's CA: %v", err)
	}

	silent := silentListener(t)
	err, took := reach(t, "https://"+silent.Addr().String(), withCA, true, 300*time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) || took > 2*time.Second {
		t.Fatalf("a server that never speaks: %v after %s", err, took)
	}

	// (httptest's servers share one certificate: without the CA it is of an unknown one.)
	otherCA := httptest.NewUnstartedServer(http.NotFoundHandler())
	otherCA.Config.ErrorLog = log.New(io.Discard, "", 0)
	otherCA.StartTLS()
	t.Cleanup(otherCA.Close)
	var unknown x509.UnknownAuthorityError
	if err, _ := reach(t, otherCA.URL, "", true, 2*time.Second); !errors.As(err, &unknown) {
		t.Fatalf("a certificate of another authority: %v", err)
	}

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "https://" + closed.Addr().String()
	closed.Close()
	if err, _ := reach(t, closedURL, withCA, true, 2*time.Second); Classify(err) != FailureConnectionRefused {
		t.Fatalf("a closed port: %v (%s)", err, Classify(err).Short())
	}
	if err, _ := reach(t, srv.URL, withCA, false, 2*time.Second); !IsAddressRefused(err) {
		t.Fatalf("loopback without leave: %v", err)
	}
}
