package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// KubeconfigError is a kubeconfig the console cannot use, with what to do instead.
type KubeconfigError struct{ Msg string }

func (e *KubeconfigError) Error() string { return e.Msg }

func kcErr(format string, args ...any) error {
	return &KubeconfigError{Msg: fmt.Sprintf(format, args...)}
}

// Kubeconfig is a parsed, validated kubeconfig: its current context only.
type Kubeconfig struct {
	Raw      []byte
	Config   *clientcmdapi.Config
	Context  string
	Server   string
	Insecure bool
	// Auth is "token" or "client-certificate".
	Auth string
	// AllowLoopback lets the clients connect to loopback addresses
	// (RUNR_ALLOW_LOOPBACK_CLUSTERS); the Service sets it from its configuration.
	AllowLoopback bool
}

// ParseKubeconfig reads a kubeconfig as the spec says: the current context, its server,
// certificate-authority-data or insecure-skip-tls-verify, and a token or
// client-certificate-data plus client-key-data. Plugins and file paths are refused.
func ParseKubeconfig(raw []byte) (*Kubeconfig, error) {
	if len(strings.TrimSpace(string(raw))) == 0 {
		return nil, kcErr("The kubeconfig is empty: paste the file's content or upload it.")
	}
	cfg, err := clientcmd.Load(raw)
	if err != nil {
		return nil, kcErr("The kubeconfig is not valid YAML for a kubeconfig: %s", Short(err))
	}
	if cfg.CurrentContext == "" {
		return nil, kcErr("The kubeconfig has no current-context: set one with `kubectl config use-context NAME` before exporting it.")
	}
	kctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return nil, kcErr("The current context %q is not defined in the kubeconfig.", cfg.CurrentContext)
	}
	cl, ok := cfg.Clusters[kctx.Cluster]
	if !ok {
		return nil, kcErr("The cluster %q of context %q is not defined in the kubeconfig.", kctx.Cluster, cfg.CurrentContext)
	}
	ai, ok := cfg.AuthInfos[kctx.AuthInfo]
	if !ok {
		return nil, kcErr("The user %q of context %q is not defined in the kubeconfig.", kctx.AuthInfo, cfg.CurrentContext)
	}
	if cl.Server == "" {
		return nil, kcErr("The cluster %q has no server address.", kctx.Cluster)
	}
	u, err := url.Parse(cl.Server)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, kcErr("The server %q is not an http(s) URL such as https://203.0.113.10:6443.", cl.Server)
	}
	if cl.ProxyURL != "" {
		return nil, kcErr("The kubeconfig sends its requests through a proxy (proxy-url). The console connects to the API server directly: remove proxy-url.")
	}
	if cl.CertificateAuthority != "" {
		return nil, kcErr("The kubeconfig points at a CA file (%s). The console cannot read your files: embed it with certificate-authority-data (`kubectl config view --raw --flatten --minify`).", cl.CertificateAuthority)
	}
	if ai.Exec != nil {
		return nil, kcErr("The kubeconfig runs an exec plugin (%s). A server cannot run your cloud CLI: create a ServiceAccount with cluster-admin and put its token under `token:` (kubectl create token, or a token Secret).", ai.Exec.Command)
	}
	if ai.AuthProvider != nil {
		return nil, kcErr("The kubeconfig uses the auth-provider %q, which needs a local login. Use a ServiceAccount token (`token:`) or client-certificate-data and client-key-data instead.", ai.AuthProvider.Name)
	}
	if ai.ClientCertificate != "" || ai.ClientKey != "" || ai.TokenFile != "" {
		return nil, kcErr("The kubeconfig points at credential files. The console cannot read your files: embed them with client-certificate-data and client-key-data, or token (`kubectl config view --raw --flatten --minify`).")
	}
	k := &Kubeconfig{Raw: raw, Config: cfg, Context: cfg.CurrentContext, Server: cl.Server, Insecure: cl.InsecureSkipTLSVerify}
	switch {
	case ai.Token != "":
		k.Auth = "token"
	case len(ai.ClientCertificateData) > 0 && len(ai.ClientKeyData) > 0:
		k.Auth = "client-certificate"
	case len(ai.ClientCertificateData) > 0 || len(ai.ClientKeyData) > 0:
		return nil, kcErr("The kubeconfig has only one of client-certificate-data and client-key-data: both are needed.")
	default:
		return nil, kcErr("The kubeconfig's user %q has no credentials: give it a token, or client-certificate-data and client-key-data.", kctx.AuthInfo)
	}
	return k, nil
}

// RESTConfig builds a client configuration from the kubeconfig bytes (never the host's).
func (k *Kubeconfig) RESTConfig() (*rest.Config, error) {
	rc, err := clientcmd.NewDefaultClientConfig(*k.Config, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kube: client config: %w", err)
	}
	rc.QPS, rc.Burst = 50, 100
	rc.UserAgent = "runr-console"
	secureREST(rc, k.AllowLoopback)
	return rc, nil
}

// IsLocal reports whether the server is on 127.0.0.1 or localhost.
func (k *Kubeconfig) IsLocal() bool {
	u, err := url.Parse(k.Server)
	if err != nil {
		return false
	}
	h := u.Hostname()
	return h == "localhost" || h == "127.0.0.1" || h == "::1"
}

// WithHost returns a copy whose server host is replaced: the spec's rewrite of a local
// cluster for a console that runs in a container next to it. TLS stays verified as the
// kubeconfig says: the certificate is checked against the original host name.
func (k *Kubeconfig) WithHost(host string) (*Kubeconfig, error) {
	cfg := k.Config.DeepCopy()
	kctx := cfg.Contexts[cfg.CurrentContext]
	cl := cfg.Clusters[kctx.Cluster]
	u, _ := url.Parse(cl.Server)
	if cl.TLSServerName == "" && !cl.InsecureSkipTLSVerify && u.Scheme == "https" {
		cl.TLSServerName = u.Hostname()
	}
	if p := u.Port(); p != "" {
		u.Host = net.JoinHostPort(host, p)
	} else {
		u.Host = host
	}
	cl.Server = u.String()
	raw, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("kube: rewrite kubeconfig: %w", err)
	}
	nk, err := ParseKubeconfig(raw)
	if err != nil {
		return nil, err
	}
	nk.AllowLoopback = k.AllowLoopback
	return nk, nil
}

// ClusterKey identifies a cluster by its server address, so regions on one cluster share it.
func ClusterKey(server string) string {
	h := sha256.Sum256([]byte(strings.TrimRight(strings.ToLower(server), "/")))
	return hex.EncodeToString(h[:8])
}

// IsKubeconfigError reports whether err is a refusal of the kubeconfig.
func IsKubeconfigError(err error) bool {
	var ke *KubeconfigError
	return errors.As(err, &ke)
}
