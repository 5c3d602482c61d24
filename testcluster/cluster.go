package testcluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Options shape a simulated cluster.
type Options struct {
	// Nodes are the fake nodes; DefaultNodes() when empty.
	Nodes []NodeSpec
	// PresentVersion, when set (e.g. "v1.29.4"), puts a proxy in front of the API server
	// that answers /version with that version; everything else passes through.
	PresentVersion string
	// LBAddress is the loopback address LoadBalancer Services get (default 127.0.0.<n>).
	LBAddress string
	// NoLoadBalancer leaves LoadBalancer Services without an address, as a cluster
	// without a load-balancer implementation (bare metal, RunOS) does.
	NoLoadBalancer bool
	// InsideLoadBalancer (with RealNode) gives LoadBalancer Services InsideLBAddress, an
	// address of the cluster's namespace that kube-proxy sends to the Service, instead of
	// a loopback address: the region's external address as pods and the test's requests
	// inside the namespace reach it (the machine cannot).
	InsideLoadBalancer bool
	// RealNode adds a real node (realnode.go: a kubelet, containerd, runc, CNI, kube-proxy
	// and CoreDNS) whose pods really run; the whole cluster then lives in a private network
	// namespace, reached through Server, with an image registry inside (Registry). Beside
	// simulated nodes it carries RealNodeTaint; with Nodes set to an empty list it is the
	// cluster's only node.
	RealNode bool
	// EtcdMembers, when above 1, runs etcd as that many TLS members, one per control-plane
	// node (the first ones of Nodes), each with its pod in kube-system (etcdmembers.go).
	EtcdMembers int
	// EtcdRKE2 runs those members as rke2 does: named <node>-<8 hex digits>, each pod's
	// command `etcd --config-file=<data-dir>/server/db/etcd/config` with the certificates
	// under <data-dir>/server/tls/etcd/ (etcdmembers.go).
	EtcdRKE2 bool
	// Log receives progress lines (nil: none).
	Log func(format string, args ...any)
	// StateDir, when set, keeps the cluster across restarts (the sandbox's): its etcd
	// data, credentials and ports live there, a later Start brings the same cluster back,
	// and Stop leaves them. Not with RealNode.
	StateDir string
}

// Cluster is one running simulated cluster.
type Cluster struct {
	Name      string
	Dir       string
	Server    string // the API server's https URL (the proxy's when PresentVersion is set)
	APIServer string // the real API server's URL
	LBAddress string

	AdminToken   string
	LimitedToken string
	CAData       []byte

	Client kubernetes.Interface
	REST   *rest.Config

	procs     []*exec.Cmd
	procNames []string
	proxy     *http.Server
	proxyCA   []byte
	stopCh    chan struct{}
	wg        sync.WaitGroup
	once      sync.Once
	log       func(string, ...any)
	mu        sync.Mutex
	nodes     int // nodes added so far (their default addresses)
	noLB      bool
	lbIngress string              // the LoadBalancer Services' address (LBAddress unless InsideLoadBalancer)
	kvm       map[string]bool     // per node: whether /dev/kvm exists (NodeSpec.KVM)
	gpus      map[string]NodeSpec // per node with GPUs: its spec (NodeSpec.GPUs)
	kataShims map[string][]string // per node: the shims kata-deploy installed there (KataShims)
	probed    map[string]NodeSpec // per node: its spec, for what the node probe finds there

	// ns is the private network namespace of a real-node cluster (nil: simulated only).
	ns   *Netns
	real *realNode
	// Registry is a real-node cluster's image registry (nil without a real node).
	Registry *Registry
	// ports are a kept cluster's (Options.StateDir), and kept says it is one.
	ports *keptPorts
	kept  bool
	// etcd is the multi-member etcd (Options.EtcdMembers), nil with a single one.
	etcd *etcdCluster
}

var (
	clusterSeq   int
	clusterSeqMu sync.Mutex
)

// New starts a cluster for a test and stops it when the test ends.
func New(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if opts.Log == nil {
		opts.Log = func(f string, a ...any) { t.Logf(f, a...) }
	}
	c, err := Start(opts)
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	t.Cleanup(c.Stop)
	return c
}

// Start builds the binaries if needed and starts a cluster on free loopback ports.
func Start(opts Options) (*Cluster, error) {
	bins, err := Build(nil)
	if err != nil {
		return nil, err
	}
	clusterSeqMu.Lock()
	clusterSeq++
	seq := clusterSeq
	clusterSeqMu.Unlock()
	if opts.LBAddress == "" {
		opts.LBAddress = fmt.Sprintf("127.0.%d.%d", 100+os.Getpid()%100, 10+seq%200)
	}
	if opts.Nodes == nil {
		opts.Nodes = DefaultNodes()
	}
	logf := opts.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if opts.StateDir != "" {
		return startKept(opts, bins, logf)
	}
	// Free ports are picked before the processes bind them; another process may take one
	// in between, so a failed start is tried again with new ports.
	var lastErr error
	for attempt := 1; attempt <= 3; attempt++ {
		dir, err := os.MkdirTemp("", "runr-cluster-")
		if err != nil {
			return nil, fmt.Errorf("testcluster: %w", err)
		}
		c := &Cluster{Name: filepath.Base(dir), Dir: dir, LBAddress: opts.LBAddress, stopCh: make(chan struct{}), log: logf, noLB: opts.NoLoadBalancer,
			AdminToken: randHex(16), LimitedToken: randHex(16)}
		c.lbIngress = c.LBAddress
		if opts.RealNode && opts.InsideLoadBalancer {
			c.lbIngress = InsideLBAddress
		}
		if opts.RealNode {
			if c.ns, lastErr = startNetns(dir); lastErr != nil {
				os.RemoveAll(dir)
				return nil, lastErr
			}
		}
		if lastErr = c.start(opts, bins); lastErr == nil {
			return c, nil
		}
		logf("testcluster: start attempt %d failed: %v", attempt, lastErr)
		c.Stop()
	}
	return nil, lastErr
}

// start brings the cluster up in order: etcd, the API server, the controller manager and
// the scheduler, kwok with its stages, then the cluster's objects, nodes and operators.
func (c *Cluster) start(opts Options, bins *Binaries) error {
	begin := time.Now()
	if err := c.writeCredentials(); err != nil {
		return fmt.Errorf("testcluster: write the credentials: %w", err)
	}
	var etcdArgs []string
	if opts.EtcdMembers > 1 {
		if err := c.planEtcdMembers(&opts); err != nil {
			return err
		}
		var err error
		if etcdArgs, err = c.startEtcdMembers(bins); err != nil {
			return err
		}
	} else {
		etcdURL, err := c.startEtcd(bins)
		if err != nil {
			return err
		}
		etcdArgs = []string{"--etcd-servers", etcdURL}
	}
	if err := c.startAPIServer(bins, etcdArgs); err != nil {
		return err
	}
	adminKC, err := c.connectAdmin()
	if err != nil {
		return err
	}
	if err := c.startControllers(bins, adminKC); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.startKwok(ctx, bins, adminKC); err != nil {
		return err
	}
	if err := c.setupCluster(ctx); err != nil {
		return err
	}
	if err := c.AddNodes(ctx, opts.Nodes...); err != nil {
		return err
	}
	if c.etcd != nil {
		if err := c.etcdPods(ctx); err != nil {
			return err
		}
	}
	if opts.RealNode {
		if err := c.startRealNode(ctx, adminKC, len(opts.Nodes) > 0); err != nil {
			return err
		}
	}
	if opts.PresentVersion != "" {
		if err := c.startVersionProxy(opts.PresentVersion); err != nil {
			return err
		}
	}
	c.startOperators()
	c.log("testcluster %s ready in %s (API %s, load balancers on %s)", c.Name, time.Since(begin).Round(time.Millisecond), c.Server, c.LBAddress)
	return nil
}

// startEtcd starts etcd on free ports and waits until it is healthy; it returns its client URL.
func (c *Cluster) startEtcd(bins *Binaries) (string, error) {
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", c.port(func(p *keptPorts) *int { return &p.EtcdPeer }))
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", c.port(func(p *keptPorts) *int { return &p.EtcdClient }))
	if err := c.spawn("etcd", bins.Etcd,
		"--data-dir", filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL,
		"--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "default="+peerURL,
		"--listen-metrics-urls", fmt.Sprintf("http://127.0.0.1:%d", c.port(func(p *keptPorts) *int { return &p.EtcdMetrics })),
		"--quota-backend-bytes", "4294967296", "--log-level", "warn"); err != nil {
		return "", err
	}
	if err := waitHTTP(etcdURL+"/health", c.httpClient(), "", 30*time.Second); err != nil {
		return "", fmt.Errorf("etcd did not start: %w%s", err, c.logTail("etcd"))
	}
	return etcdURL, nil
}

// startAPIServer starts kube-apiserver on etcd, waits until it is ready and records its
// URL and the CA of its self-signed certificate.
func (c *Cluster) startAPIServer(bins *Binaries, etcdArgs []string) error {
	apiPort := c.port(func(p *keptPorts) *int { return &p.API })
	// Simulated: on loopback, with the certificate the API server makes itself. Real node:
	// on every address of the namespace (the node and its pods reach it at NodeIP), with a
	// certificate that names them.
	addrs := []string{"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1"}
	if c.ns != nil {
		cert, key, ca, err := c.apiServerCert()
		if err != nil {
			return fmt.Errorf("testcluster: the API server's certificate: %w", err)
		}
		c.CAData = ca
		addrs = []string{"--bind-address", "0.0.0.0", "--advertise-address", NodeIP, "--tls-cert-file", cert, "--tls-private-key-file", key,
			"--kubelet-preferred-address-types", "InternalIP"}
	}
	if err := c.spawn("kube-apiserver", bins.APIServer, append(append(addrs, etcdArgs...),
		"--cert-dir", c.certDir(),
		"--secure-port", fmt.Sprint(apiPort),
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", filepath.Join(c.Dir, "sa.pub"),
		"--service-account-signing-key-file", filepath.Join(c.Dir, "sa.key"),
		"--authorization-mode", "Node,RBAC",
		"--token-auth-file", filepath.Join(c.Dir, "tokens.csv"),
		"--service-cluster-ip-range", "10.0.0.0/24",
		"--allow-privileged=true",
		"--enable-priority-and-fairness=false",
		"--profiling=false", "--shutdown-delay-duration=0s", "--shutdown-send-retry-after=false",
		"--v", "0")...); err != nil {
		return err
	}
	c.APIServer = fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	if err := waitHTTP(c.APIServer+"/readyz", c.httpClient(), c.AdminToken, 90*time.Second); err != nil {
		return fmt.Errorf("kube-apiserver did not become ready: %w%s", err, c.logTail("kube-apiserver"))
	}
	c.Server = c.APIServer
	if c.ns != nil {
		// The machine reaches the API server through a loopback port of its own.
		fwd, err := c.ns.Forward(fmt.Sprintf("127.0.0.1:%d", apiPort))
		if err != nil {
			return err
		}
		c.Server = "https://" + fwd
		return nil
	}
	ca, err := os.ReadFile(filepath.Join(c.certDir(), "apiserver.crt"))
	if err != nil {
		return fmt.Errorf("testcluster: read the API server's certificate: %w", err)
	}
	c.CAData = ca
	return nil
}

// httpClient reaches the cluster's own processes: on loopback, or inside the namespace of
// a real-node cluster. It does not verify certificates (the harness's own processes).
func (c *Cluster) httpClient() *http.Client {
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	if c.ns != nil {
		tr.DialContext = c.ns.DialContext
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: tr}
}

// rootCAFile is the CA of the API server's certificate: its own self-signed one, or the
// harness's CA on a real-node cluster (apiServerCert).
func (c *Cluster) rootCAFile() string {
	if c.ns != nil {
		return filepath.Join(c.certDir(), "ca.crt")
	}
	return filepath.Join(c.certDir(), "apiserver.crt")
}

// certDir is where the API server keeps its self-signed certificate.
func (c *Cluster) certDir() string { return filepath.Join(c.Dir, "pki") }

// connectAdmin writes the admin's kubeconfig for the cluster's own components and builds
// the admin's client; it returns the kubeconfig's path.
func (c *Cluster) connectAdmin() (string, error) {
	adminKC := filepath.Join(c.Dir, "admin.kubeconfig")
	if err := os.WriteFile(adminKC, c.kubeconfigFor(c.APIServer, c.CAData, "admin", c.AdminToken), 0o600); err != nil {
		return "", fmt.Errorf("testcluster: write the admin kubeconfig: %w", err)
	}
	var err error
	if c.REST, err = clientcmd.RESTConfigFromKubeConfig(c.kubeconfigFor(c.Server, c.CAData, "admin", c.AdminToken)); err != nil {
		return "", fmt.Errorf("testcluster: read the admin kubeconfig: %w", err)
	}
	c.REST.QPS, c.REST.Burst = 100, 200
	if c.Client, err = kubernetes.NewForConfig(c.REST); err != nil {
		return "", fmt.Errorf("testcluster: build the admin client: %w", err)
	}
	return adminKC, nil
}

// startControllers starts kube-controller-manager (without the controllers a cloud or a
// real network would need) and kube-scheduler.
func (c *Cluster) startControllers(bins *Binaries, adminKC string) error {
	if err := c.spawn("kube-controller-manager", bins.ControllerManager,
		"--kubeconfig", adminKC, "--authentication-kubeconfig", adminKC, "--authorization-kubeconfig", adminKC,
		"--leader-elect=false",
		"--controllers", "*,-node-ipam-controller,-cloud-node-lifecycle-controller,-service-lb-controller,-node-route-controller",
		"--service-account-private-key-file", filepath.Join(c.Dir, "sa.key"),
		"--root-ca-file", c.rootCAFile(),
		"--use-service-account-credentials=false",
		"--node-monitor-grace-period", "20s",
		"--concurrent-deployment-syncs", "10", "--concurrent-replicaset-syncs", "10",
		"--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(freePort())); err != nil {
		return err
	}
	return c.spawn("kube-scheduler", bins.Scheduler,
		"--kubeconfig", adminKC, "--authentication-kubeconfig", adminKC, "--authorization-kubeconfig", adminKC,
		"--leader-elect=false", "--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(freePort()))
}

// startKwok installs the stages that play the nodes' and pods' lives, then starts kwok on
// the fake nodes with an empty configuration.
func (c *Cluster) startKwok(ctx context.Context, bins *Binaries, adminKC string) error {
	if err := c.installStages(ctx, bins); err != nil {
		return err
	}
	emptyCfg := filepath.Join(c.Dir, "kwok.yaml")
	if err := os.WriteFile(emptyCfg, nil, 0o644); err != nil {
		return fmt.Errorf("testcluster: write kwok's configuration: %w", err)
	}
	args := []string{"--kubeconfig", adminKC, "-c", emptyCfg}
	if c.etcd != nil {
		etcdArgs, err := c.etcdKwokArgs(bins, emptyCfg)
		if err != nil {
			return fmt.Errorf("testcluster: kwok for the etcd pods: %w", err)
		}
		args = append(args, etcdArgs...)
	}
	if c.ns != nil {
		// Simulated pods get addresses apart from the real pods' and the Services'.
		args = append(args, "--cidr", "10.246.0.0/16")
	}
	if c.etcd == nil {
		args = append(args, "--server-address", fmt.Sprintf("127.0.0.1:%d", freePort()))
	}
	// Commands run in pods (kwok's ClusterExec of the etcd pods) find etcdctl on the PATH.
	path := []string{"PATH=" + bins.Dir + ":" + os.Getenv("PATH")}
	return c.spawnEnv("kwok", path, bins.Kwok, append(args,
		"--manage-nodes-with-annotation-selector", "kwok.x-k8s.io/node=fake",
		"--enable-crds", "Stage")...)
}

// startOperators starts the simulated Knative Serving controller, Knative and Prometheus
// operators, the sandbox runtimes' node agents, runtime-class-manager, NVIDIA's agents, CloudNativePG's operator, Skupper's controller and Rancher's system-upgrade-controller; Stop
// waits for them.
func (c *Cluster) startOperators() {
	c.wg.Add(10)
	go c.runOperator("Knative Serving controller", c.reconcileKnativeServices)
	go c.runKataCleanupHooks()
	go c.runOperator("Knative Operator", c.reconcileKnative(&knativeOperator{applied: map[string]bool{}}))
	go c.runOperator("Prometheus operator", c.reconcilePrometheus)
	go c.runOperator("sandbox node agents", c.reconcileNodeAgents(newNodeAgents()))
	go c.runOperator("runtime-class-manager", c.reconcileRCM(&rcmOperator{handled: map[types.UID]bool{}}))
	go c.runOperator("NVIDIA GPU agents", c.reconcileGPUs)
	go c.runOperator("CloudNativePG operator", c.reconcileCNPG)
	go c.runOperator("Skupper controller", c.reconcileSkupper)
	go c.runOperator("system-upgrade-controller", c.reconcileSUC(newSUCOperator()))
}

// Kubeconfig returns a kubeconfig of a cluster-admin user (token auth, embedded CA).
func (c *Cluster) Kubeconfig() []byte {
	return c.kubeconfigFor(c.Server, c.caForServer(), "admin", c.AdminToken)
}

// PodKubeconfig returns the admin kubeconfig as the cluster's own pods reach the API
// server: through the kubernetes Service (a console installed in the cluster).
func (c *Cluster) PodKubeconfig() []byte {
	return c.kubeconfigFor("https://kubernetes.default.svc", c.CAData, "admin", c.AdminToken)
}

// LimitedKubeconfig returns a kubeconfig of a user who may only read (ClusterRole view).
func (c *Cluster) LimitedKubeconfig() []byte {
	return c.kubeconfigFor(c.Server, c.caForServer(), "limited", c.LimitedToken)
}

func (c *Cluster) caForServer() []byte {
	if c.proxy != nil {
		return c.proxyCA
	}
	return c.CAData
}

func (c *Cluster) kubeconfigFor(server string, ca []byte, user, token string) []byte {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[c.Name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[user+"@"+c.Name] = &clientcmdapi.Context{Cluster: c.Name, AuthInfo: user, Namespace: "default"}
	cfg.CurrentContext = user + "@" + c.Name
	raw, err := clientcmd.Write(*cfg)
	if err != nil {
		panic(err)
	}
	return raw
}

// Stop stops every process of the cluster and removes its files.
func (c *Cluster) Stop() {
	c.once.Do(func() {
		close(c.stopCh)
		if c.proxy != nil {
			c.proxy.Close()
		}
		if c.real != nil {
			c.stopRealNode()
		}
		for i := len(c.procs) - 1; i >= 0; i-- {
			p := c.procs[i]
			if p.Process == nil {
				continue
			}
			_ = syscall.Kill(-p.Process.Pid, syscall.SIGTERM)
		}
		done := make(chan struct{})
		go func() {
			for _, p := range c.procs {
				_ = p.Wait()
			}
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			for _, p := range c.procs {
				if p.Process != nil {
					_ = syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
				}
			}
			<-done
		}
		if c.ns != nil {
			c.ns.Close()
		}
		c.wg.Wait()
		if c.Registry != nil {
			c.Registry.Close()
		}
		if c.real != nil {
			c.removeCgroups()
		}
		if os.Getenv("RUNR_KEEP_CLUSTER_DIR") == "" && !c.kept {
			os.RemoveAll(c.Dir)
		}
	})
}

func (c *Cluster) spawn(name, bin string, args ...string) error {
	return c.spawnEnv(name, nil, bin, args...)
}

// spawnEnv starts a process of the cluster with variables added to this process's
// environment.
func (c *Cluster) spawnEnv(name string, env []string, bin string, args ...string) error {
	logf, err := os.Create(filepath.Join(c.Dir, name+".log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	if c.ns != nil {
		cmd = c.ns.Command(bin, args...)
	}
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group (Stop signals the group), killed if this process dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("testcluster: start %s: %w", name, err)
	}
	c.procs = append(c.procs, cmd)
	c.procNames = append(c.procNames, name)
	return nil
}

// running reports whether the cluster's process of that name is still running (it has not
// ended: a process nobody waited for yet shows as a zombie).
func (c *Cluster) running(name string) bool {
	for i := len(c.procs) - 1; i >= 0; i-- {
		if c.procNames[i] != name || c.procs[i].Process == nil {
			continue
		}
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.procs[i].Process.Pid))
		if err != nil {
			return false
		}
		// pid (comm) STATE ...
		if j := bytes.LastIndexByte(raw, ')'); j > 0 && j+2 < len(raw) {
			return raw[j+2] != 'Z' && raw[j+2] != 'X'
		}
		return true
	}
	return false
}

func (c *Cluster) logTail(name string) string {
	raw, _ := os.ReadFile(filepath.Join(c.Dir, name+".log"))
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return "\n--- " + name + ".log ---\n" + strings.Join(lines, "\n")
}

func (c *Cluster) writeCredentials() error {
	if _, err := os.Stat(filepath.Join(c.Dir, "sa.key")); err == nil && c.kept {
		// A kept cluster's service-account key signed the tokens it holds already.
		return c.writeTokens()
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.Dir, "sa.key"), pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.Dir, "sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644); err != nil {
		return err
	}
	return c.writeTokens()
}

// writeTokens writes the API server's static tokens: the admin's and the limited user's.
func (c *Cluster) writeTokens() error {
	tokens := fmt.Sprintf("%s,admin,1,\"system:masters\"\n%s,limited,2,\"runr:limited\"\n", c.AdminToken, c.LimitedToken)
	return os.WriteFile(filepath.Join(c.Dir, "tokens.csv"), []byte(tokens), 0o600)
}

func randHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func insecureClient() *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
}

func waitHTTP(url string, client *http.Client, token string, timeout time.Duration) error {
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Errorf("%s: %s", url, resp.Status)
		} else {
			last = err
		}
		time.Sleep(200 * time.Millisecond)
	}
	if last == nil {
		last = errors.New("timeout")
	}
	return last
}

var _ = bytes.NewReader
