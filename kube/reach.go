package kube

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"

	"k8s.io/client-go/rest"
)

// Reach connects to the cluster's API server and completes the TLS handshake with the
// kubeconfig's credentials, within ctx, sending no request: it tells a server that is not
// there (or accepts connections and never speaks) from one that is there but slow to
// answer, so that the first can be given up on sooner.
func (c *Cluster) Reach(ctx context.Context) error {
	u, err := url.Parse(c.REST.Host)
	if err != nil {
		return fmt.Errorf("kube: reach: server %q: %w", c.REST.Host, err)
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
	}
	addr := net.JoinHostPort(u.Hostname(), port)
	dial := c.REST.Dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	conn, err := dial(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("kube: reach %s: %w", addr, err)
	}
	defer conn.Close()
	if u.Scheme != "https" {
		return nil
	}
	cfg, err := rest.TLSConfigFor(c.REST)
	if err != nil {
		return fmt.Errorf("kube: reach %s: TLS configuration: %w", addr, err)
	}
	if cfg == nil {
		cfg = &tls.Config{}
	}
	cfg = cfg.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName = u.Hostname()
	}
	if err := tls.Client(conn, cfg).HandshakeContext(ctx); err != nil {
		return fmt.Errorf("kube: reach %s: TLS handshake: %w", addr, err)
	}
	return nil
}
