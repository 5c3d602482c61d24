package testcluster

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An etcd of several members (Options.EtcdMembers) runs as kubeadm runs it: one member
// per control-plane node, bound to that node's address (2379 for clients, 2380 for peers,
// 2381 for health), TLS everywhere with certificates of its own CA, named after its node.
// The API server uses all of them. Each member shows as a pod etcd-<node> in kube-system
// (labels component=etcd, tier=control-plane) whose command line is the member's own, and
// "exec" into that pod runs the command on this machine (kwok's ClusterExec), where
// etcdctl is on the PATH and the pod's certificate paths are real files. kwok's kubelet
// API answers on every such node's address, as a kubelet does on its node.

// With Options.EtcdRKE2 the members are named and their pods shaped as rke2's: the member
// <node>-<8 hex digits>, and the pod's command only `etcd --config-file=<data-dir>/server/
// db/etcd/config`, with server-ca.crt, server-client.crt and server-client.key in
// <data-dir>/server/tls/etcd/ (k3s's pkg/daemons/control/deps: the layout rke2 inherits).

// etcdMember is one member of a cluster's multi-member etcd.
type etcdMember struct {
	node, addr string
	name       string // the member's name: its node's, or rke2's <node>-<hex>
	args       []string
	cmd        *exec.Cmd
}

// etcdCluster is a cluster's multi-member etcd, its PKI and its members.
type etcdCluster struct {
	mu      sync.Mutex
	dir     string // pki/etcd
	members []*etcdMember
	rke2    bool
}

// rke2Dir is a member's rke2 data directory (its config and certificates).
func (e *etcdCluster) rke2Dir(m *etcdMember) string { return filepath.Join(e.dir, "rke2-"+m.node) }

func (e *etcdCluster) caFile() string                 { return filepath.Join(e.dir, "ca.crt") }
func (e *etcdCluster) certFile(name string) string    { return filepath.Join(e.dir, name+".crt") }
func (e *etcdCluster) keyFile(name string) string     { return filepath.Join(e.dir, name+".key") }
func (e *etcdCluster) clientURL(m *etcdMember) string { return "https://" + m.addr + ":2379" }
func (e *etcdCluster) peerURL(m *etcdMember) string   { return "https://" + m.addr + ":2380" }
func (e *etcdCluster) healthURL(m *etcdMember) string { return "http://" + m.addr + ":2381/health" }
func (e *etcdCluster) memberDir(m *etcdMember) string {
	return filepath.Join(filepath.Dir(filepath.Dir(e.dir)), "etcd-"+m.node)
}

// planEtcdMembers gives the first n control-plane nodes their addresses now (the members
// bind them before the nodes exist) and writes the members' PKI.
func (c *Cluster) planEtcdMembers(opts *Options) error {
	if opts.StateDir != "" || opts.RealNode {
		return errors.New("testcluster: EtcdMembers is for plain simulated clusters (not kept, not with a real node)")
	}
	e := &etcdCluster{dir: filepath.Join(c.certDir(), "etcd"), rke2: opts.EtcdRKE2}
	for i := range opts.Nodes {
		n := &opts.Nodes[i]
		if !n.ControlPlane || len(e.members) == opts.EtcdMembers {
			continue
		}
		if n.Address == "" {
			n.Address = c.nextNodeAddress()
		}
		m := &etcdMember{node: n.Name, addr: n.Address, name: n.Name}
		if opts.EtcdRKE2 {
			m.name = n.Name + "-" + randHex(4)
		}
		e.members = append(e.members, m)
	}
	if len(e.members) < opts.EtcdMembers {
		return fmt.Errorf("testcluster: %d etcd members need as many control-plane nodes (%d given)", opts.EtcdMembers, len(e.members))
	}
	if err := e.writePKI(); err != nil {
		return fmt.Errorf("testcluster: etcd PKI: %w", err)
	}
	c.etcd = e
	return nil
}

// writePKI writes the etcd CA, one server-and-client certificate per member (as kubeadm's
// etcd/server.crt, which etcdctl in the pod may use), one for the API server and one for
// kwok's kubelet API.
func (e *etcdCluster) writePKI() error {
	if err := os.MkdirAll(e.dir, 0o700); err != nil {
		return err
	}
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "etcd-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, _ := x509.ParseCertificate(caDER)
	if err := os.WriteFile(e.caFile(), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644); err != nil {
		return err
	}
	issue := func(name string, ips ...string) error {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return err
		}
		sn, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
		tmpl := &x509.Certificate{SerialNumber: sn, Subject: pkix.Name{CommonName: name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), DNSNames: []string{"localhost", name},
			KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
		for _, ip := range append(ips, "127.0.0.1") {
			tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		if err := os.WriteFile(e.certFile(name), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
			return err
		}
		return os.WriteFile(e.keyFile(name), pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600)
	}
	var addrs []string
	for _, m := range e.members {
		if err := issue(m.node, m.addr); err != nil {
			return err
		}
		addrs = append(addrs, m.addr)
	}
	if err := issue("apiserver-etcd-client"); err != nil {
		return err
	}
	return issue("kubelet", addrs...)
}

// startEtcdMembers starts every member and waits until each is healthy; it returns the
// API server's --etcd-servers and TLS flags.
func (c *Cluster) startEtcdMembers(bins *Binaries) ([]string, error) {
	e := c.etcd
	var initial, clients []string
	for _, m := range e.members {
		initial = append(initial, m.name+"="+e.peerURL(m))
		clients = append(clients, e.clientURL(m))
	}
	for _, m := range e.members {
		m.args = []string{
			"--name", m.name, "--data-dir", e.memberDir(m),
			"--listen-client-urls", e.clientURL(m), "--advertise-client-urls", e.clientURL(m),
			"--listen-peer-urls", e.peerURL(m), "--initial-advertise-peer-urls", e.peerURL(m),
			"--listen-metrics-urls", "http://" + m.addr + ":2381",
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--client-cert-auth", "--trusted-ca-file", e.caFile(), "--cert-file", e.certFile(m.node), "--key-file", e.keyFile(m.node),
			"--peer-client-cert-auth", "--peer-trusted-ca-file", e.caFile(), "--peer-cert-file", e.certFile(m.node), "--peer-key-file", e.keyFile(m.node),
			"--quota-backend-bytes", "4294967296", "--log-level", "warn",
		}
		if err := c.startEtcdMember(bins, m); err != nil {
			return nil, err
		}
	}
	for _, m := range e.members {
		if err := waitHTTP(e.healthURL(m), nil, "", 60*time.Second); err != nil {
			return nil, fmt.Errorf("etcd member %s did not become healthy: %w%s", m.node, err, c.logTail("etcd-"+m.node))
		}
	}
	return []string{"--etcd-servers", strings.Join(clients, ","),
		"--etcd-cafile", e.caFile(), "--etcd-certfile", e.certFile("apiserver-etcd-client"), "--etcd-keyfile", e.keyFile("apiserver-etcd-client"),
		"--kubelet-preferred-address-types", "InternalIP"}, nil
}

// startEtcdMember (re)starts one member's process with its arguments.
func (c *Cluster) startEtcdMember(bins *Binaries, m *etcdMember) error {
	if err := c.spawn("etcd-"+m.node, bins.Etcd, m.args...); err != nil {
		return err
	}
	c.etcd.mu.Lock()
	m.cmd = c.procs[len(c.procs)-1]
	c.etcd.mu.Unlock()
	return nil
}

// StopEtcdMember stops the etcd member of a control-plane node, as when its machine fails.
func (c *Cluster) StopEtcdMember(node string) error {
	m := c.etcdMember(node)
	if m == nil || m.cmd == nil || m.cmd.Process == nil {
		return fmt.Errorf("testcluster: no running etcd member on %s", node)
	}
	_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
	for i := 0; i < 50 && c.running("etcd-"+node); i++ {
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// StartEtcdMember starts a stopped member again and waits until it is healthy.
func (c *Cluster) StartEtcdMember(node string) error {
	m := c.etcdMember(node)
	if m == nil {
		return fmt.Errorf("testcluster: no etcd member on %s", node)
	}
	bins, err := Build(nil)
	if err != nil {
		return err
	}
	if err := c.startEtcdMember(bins, m); err != nil {
		return err
	}
	return waitHTTP(c.etcd.healthURL(m), nil, "", 60*time.Second)
}

func (c *Cluster) etcdMember(node string) *etcdMember {
	if c.etcd == nil {
		return nil
	}
	for _, m := range c.etcd.members {
		if m.node == node {
			return m
		}
	}
	return nil
}

// EtcdMemberNames lists the etcd cluster's members (etcdctl member list through a member
// that is running).
func (c *Cluster) EtcdMemberNames(ctx context.Context) ([]string, error) {
	if c.etcd == nil {
		return nil, errors.New("testcluster: the cluster has a single etcd")
	}
	bins, err := Build(nil)
	if err != nil {
		return nil, err
	}
	var lastErr error
	for _, m := range c.etcd.members {
		if !c.running("etcd-" + m.node) {
			continue
		}
		out, err := exec.CommandContext(ctx, bins.Etcdctl, "--endpoints", c.etcd.clientURL(m), "--cacert", c.etcd.caFile(),
			"--cert", c.etcd.certFile(m.node), "--key", c.etcd.keyFile(m.node), "--command-timeout", "5s", "member", "list", "-w", "json").Output()
		if err != nil {
			lastErr = fmt.Errorf("etcdctl member list at %s: %w", m.node, err)
			continue
		}
		var list struct {
			Members []struct {
				Name string `json:"name"`
			} `json:"members"`
		}
		if err := json.Unmarshal(out, &list); err != nil {
			return nil, fmt.Errorf("etcdctl member list: %w", err)
		}
		var names []string
		for _, mm := range list.Members {
			names = append(names, mm.Name)
		}
		return names, nil
	}
	return nil, fmt.Errorf("testcluster: no etcd member answers: %v", lastErr)
}

// etcdPods creates the members' pods in kube-system on their nodes, with kubeadm's
// labels and command line.
func (c *Cluster) etcdPods(ctx context.Context) error {
	e := c.etcd
	for _, m := range e.members {
		cmd, err := e.podCommand(m)
		if err != nil {
			return err
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "etcd-" + m.node, Namespace: "kube-system",
				Labels: map[string]string{"component": "etcd", "tier": "control-plane"},
				// A static pod's mirror, as the kubelet writes it: drains leave it.
				Annotations: map[string]string{"kubernetes.io/config.mirror": randHex(16), "kubernetes.io/config.source": "file"}},
			Spec: corev1.PodSpec{NodeName: m.node, HostNetwork: true, PriorityClassName: "system-node-critical",
				Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
				Containers:  []corev1.Container{{Name: "etcd", Image: "registry.k8s.io/etcd:" + strings.TrimPrefix(EtcdVersion, "v") + "-0", Command: cmd}}},
		}
		if !e.rke2 {
			pod.Annotations["kubeadm.kubernetes.io/etcd.advertise-client-urls"] = e.clientURL(m)
		}
		if _, err := c.Client.CoreV1().Pods("kube-system").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("testcluster: etcd pod on %s: %w", m.node, err)
		}
	}
	return nil
}

// podCommand is the command line of a member's pod: kubeadm's flags, or rke2's config file
// (written here with the certificates it names, as rke2 lays them out).
func (e *etcdCluster) podCommand(m *etcdMember) ([]string, error) {
	if e.rke2 {
		server := filepath.Join(e.rke2Dir(m), "server")
		tls := filepath.Join(server, "tls", "etcd")
		cfg := filepath.Join(server, "db", "etcd", "config")
		for _, d := range []string{tls, filepath.Dir(cfg)} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				return nil, err
			}
		}
		for from, to := range map[string]string{e.caFile(): "server-ca.crt", e.certFile(m.node): "server-client.crt", e.keyFile(m.node): "server-client.key"} {
			raw, err := os.ReadFile(from)
			if err != nil {
				return nil, err
			}
			if err := os.WriteFile(filepath.Join(tls, to), raw, 0o600); err != nil {
				return nil, err
			}
		}
		conf := fmt.Sprintf("name: %s\ndata-dir: %s\nlisten-client-urls: https://127.0.0.1:2379,%s\nadvertise-client-urls: %s\n"+
			"client-transport-security:\n  cert-file: %s\n  key-file: %s\n  trusted-ca-file: %s\n  client-cert-auth: true\n",
			m.name, e.memberDir(m), e.clientURL(m), e.clientURL(m),
			filepath.Join(tls, "server-client.crt"), filepath.Join(tls, "server-client.key"), filepath.Join(tls, "server-ca.crt"))
		if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
			return nil, err
		}
		return []string{"etcd", "--config-file=" + cfg}, nil
	}
	return []string{"etcd",
		"--name=" + m.name, "--data-dir=" + e.memberDir(m),
		"--advertise-client-urls=" + e.clientURL(m), "--listen-client-urls=" + e.clientURL(m),
		"--initial-advertise-peer-urls=" + e.peerURL(m), "--listen-peer-urls=" + e.peerURL(m),
		"--listen-metrics-urls=http://" + m.addr + ":2381",
		"--client-cert-auth=true", "--trusted-ca-file=" + e.caFile(),
		"--cert-file=" + e.certFile(m.node), "--key-file=" + e.keyFile(m.node),
		"--peer-client-cert-auth=true", "--peer-trusted-ca-file=" + e.caFile(),
		"--peer-cert-file=" + e.certFile(m.node), "--peer-key-file=" + e.keyFile(m.node),
	}, nil
}

// etcdKwokArgs are kwok's flags and configuration for the etcd pods: its kubelet API over
// TLS on a port every node names, and exec into the etcd pods on this machine.
func (c *Cluster) etcdKwokArgs(bins *Binaries, cfgFile string) ([]string, error) {
	e := c.etcd
	var names []string
	for _, m := range e.members {
		names = append(names, "etcd-"+m.node)
	}
	cfg := fmt.Sprintf(`apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterExec
metadata:
  name: etcd
spec:
  selector:
    matchNamespaces: [kube-system]
    matchNames: [%s]
  execs:
  - local: {}
`, strings.Join(names, ", "))
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	port := freePort()
	for _, m := range e.members {
		if err := c.forwardTCP(fmt.Sprintf("%s:%d", m.addr, port), fmt.Sprintf("127.0.0.1:%d", port)); err != nil {
			return nil, err
		}
	}
	return []string{"--node-port", fmt.Sprint(port), "--server-address", fmt.Sprintf("127.0.0.1:%d", port),
		"--tls-cert-file", e.certFile("kubelet"), "--tls-private-key-file", e.keyFile("kubelet")}, nil
}

// forwardTCP carries every connection to listen on to target until the cluster stops.
func (c *Cluster) forwardTCP(listen, target string) error {
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("testcluster: listen on %s: %w", listen, err)
	}
	go func() {
		<-c.stopCh
		l.Close()
	}()
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer in.Close()
				out, err := net.DialTimeout("tcp", target, 5*time.Second)
				if err != nil {
					return
				}
				defer out.Close()
				go func() { _, _ = io.Copy(out, in); out.(*net.TCPConn).CloseWrite() }()
				_, _ = io.Copy(in, out)
			}()
		}
	}()
	return nil
}
