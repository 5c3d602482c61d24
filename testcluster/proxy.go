package testcluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"
)

// startVersionProxy puts a TLS reverse proxy in front of the API server that answers
// /version with another version and passes everything else through unchanged: an
// honest way to present an older Kubernetes to the console.
func (c *Cluster) startVersionProxy(version string) error {
	major, minor, err := majorMinor(version)
	if err != nil {
		return err
	}
	cert, caPEM, err := selfSigned()
	if err != nil {
		return err
	}
	up, _ := url.Parse(c.APIServer)
	rp := httputil.NewSingleHostReverseProxy(up)
	rp.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} // loopback to our own API server
	rp.FlushInterval = -1
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/version" {
			rp.ServeHTTP(w, r)
			return
		}
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, c.APIServer+"/version", nil)
		req.Header.Set("Authorization", r.Header.Get("Authorization"))
		resp, err := insecureClient().Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var v map[string]any
		if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &v) != nil {
			w.WriteHeader(resp.StatusCode)
			w.Write(raw)
			return
		}
		v["gitVersion"], v["major"], v["minor"] = version, major, minor
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	c.proxy = &http.Server{Handler: handler, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}, ReadHeaderTimeout: 10 * time.Second}
	go c.proxy.ServeTLS(ln, "", "")
	c.proxyCA = caPEM
	c.Server = "https://" + ln.Addr().String()
	return nil
}

func selfSigned() (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "runr-testcluster-version-proxy"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("testcluster: proxy certificate: %w", err)
	}
	return cert, certPEM, nil
}

var _ = strings.TrimSpace
