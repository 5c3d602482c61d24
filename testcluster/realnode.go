package testcluster

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"k8s.io/client-go/util/retry"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"runr.dev/console/images"
)

// A real node (realnode.md): a kubelet built from the same Kubernetes module, Debian's
// containerd, runc and CNI plugins, kube-proxy for Services and CoreDNS for their names,
// all in the cluster's private network namespace with its control plane. Its pods really
// run; their images come only from the cluster's registry (Registry), inside the namespace.

// RealNodeName is the real node's name.
const RealNodeName = "real-1"

// RealNodeTaint (NoExecute) keeps pods off the real node unless they tolerate every taint,
// as the console's node programs do (operator Exists), while simulated nodes share its
// cluster: pods that cannot run here (the stand-in charts' images are nowhere) stay
// simulated, including DaemonSets that tolerate every NoSchedule taint, as the upstream
// node exporter does. PreferRealNode turns it around.
const RealNodeTaint = "runr.dev/real-node"

// SimulatedNodeTaint keeps pods off the simulated nodes after PreferRealNode.
const SimulatedNodeTaint = "runr.dev/simulated-node"

// RegistryPort is where the cluster's registry answers inside the namespace (NodeIP:5000).
const RegistryPort = "5000"

// ImageMirror is the cluster's registry as a console's image mirror: it holds every image
// under its path (<registry>/<host>/<path>), as an air-gapped region's registry does, and
// the node pulls from it over HTTP.
const ImageMirror = NodeIP + ":" + RegistryPort

// ClusterDNS is the cluster's DNS server for pods: CoreDNS on the node's address.
const ClusterDNS = NodeIP

// PauseImage is the pods' sandbox image (containerd's sandbox_image), served by the
// cluster's registry: a small program of the harness that waits for SIGTERM.
const PauseImage = "registry.k8s.io/pause:3.10"

// CoreDNSVersion is the CoreDNS the real node resolves cluster names with.
const CoreDNSVersion = "v1.14.7"

// EchoImage is the harness's test program (testcluster/cmd/echo), served by every
// real-node cluster's registry: an HTTP server that answers what it received, and fetches
// or resolves from inside the cluster.
const EchoImage = "ghcr.io/brf-tech/runr-testing/echo:1"

// RealNodeBinaries are the real node's programs built from Go modules, and the harness's
// own programs that its images hold.
type RealNodeBinaries struct {
	Kubelet, KubeProxy, CoreDNS string
	Pause, Echo                 string
}

var (
	realOnce sync.Once
	realBins *RealNodeBinaries
	realErr  error
)

// debianParts are what a real node takes from Debian's packages, with the package of each.
var debianParts = []struct{ path, pkg string }{
	{"/usr/bin/containerd", "containerd"},
	{"/usr/sbin/runc", "runc"},
	{"/usr/lib/cni/bridge", "containernetworking-plugins"},
	{"/usr/sbin/iptables", "iptables"},
	{"/usr/bin/nsenter", "util-linux"},
}

// RealNodeMissing lists the Debian packages a real node needs that are not installed.
func RealNodeMissing() []string {
	var missing []string
	for _, p := range debianParts {
		if !exists(p.path) {
			missing = append(missing, p.pkg)
		}
	}
	return missing
}

// BuildRealNode builds the kubelet, kube-proxy and CoreDNS once into the cache dir (about
// 8 minutes on top of the control plane's build) and the harness's pause program.
func BuildRealNode(log io.Writer) (*RealNodeBinaries, error) {
	realOnce.Do(func() { realBins, realErr = buildRealNode(log) })
	return realBins, realErr
}

func buildRealNode(log io.Writer) (*RealNodeBinaries, error) {
	if log == nil {
		log = io.Discard
	}
	if _, err := Build(log); err != nil {
		return nil, err
	}
	if missing := RealNodeMissing(); len(missing) > 0 {
		return nil, fmt.Errorf("testcluster: a real node needs the Debian packages %s (apt-get install %s)", strings.Join(missing, ", "), strings.Join(missing, " "))
	}
	dir, err := CacheDir()
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, "bin")
	b := &RealNodeBinaries{Kubelet: filepath.Join(bin, "kubelet"), KubeProxy: filepath.Join(bin, "kube-proxy"),
		CoreDNS: filepath.Join(bin, "coredns-"+CoreDNSVersion), Pause: filepath.Join(bin, "pause"), Echo: filepath.Join(bin, "echo")}
	unlock, err := lockFile(filepath.Join(dir, "build.lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()
	for _, c := range []struct{ pkg, out string }{
		{"k8s.io/kubernetes/cmd/kubelet", b.Kubelet},
		{"k8s.io/kubernetes/cmd/kube-proxy", b.KubeProxy},
	} {
		if exists(c.out) {
			continue
		}
		fmt.Fprintf(log, "testcluster: building %s %s (a few minutes)\n", filepath.Base(c.out), KubernetesVersion)
		if err := BuildKubernetes(c.pkg, c.out, KubernetesVersion, log); err != nil {
			return nil, err
		}
	}
	if !exists(b.CoreDNS) {
		fmt.Fprintf(log, "testcluster: building CoreDNS %s (a few minutes)\n", CoreDNSVersion)
		tmp := filepath.Join(dir, "coredns-gobin")
		cmd := exec.Command("go", "install", "github.com/coredns/coredns@"+CoreDNSVersion)
		cmd.Env = append(goEnv(), "GOBIN="+tmp)
		cmd.Dir = os.TempDir()
		if err := run(cmd, log); err != nil {
			return nil, fmt.Errorf("testcluster: build CoreDNS: %w", err)
		}
		if err := os.Rename(filepath.Join(tmp, "coredns"), b.CoreDNS); err != nil {
			return nil, err
		}
	}
	// The harness's programs are this module's own: built every run (the build cache keeps
	// it quick).
	// Replaced atomically: another test process may be reading the previous build.
	for pkg, out := range map[string]string{"testcluster/cmd/pause": b.Pause, "testcluster/cmd/echo": b.Echo} {
		tmp := fmt.Sprintf("%s.%d.tmp", out, os.Getpid())
		if err := images.GoBuild(context.Background(), "", "runr.dev/console/"+pkg, tmp, runtime.GOARCH, ""); err != nil {
			return nil, fmt.Errorf("testcluster: %w", err)
		}
		if err := os.Rename(tmp, out); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// realNode is the state of a cluster's real node.
type realNode struct {
	bins    *RealNodeBinaries
	adminKC string
	// tainted: the node carries RealNodeTaint (simulated nodes share the cluster).
	tainted bool

	mu         sync.Mutex
	containerd *exec.Cmd // the running containerd (restarted when it ends)
	restarts   int
}

// ContainerdSocket is the real node's containerd socket, on the machine's filesystem
// (ctr -a SOCKET -n k8s.io …).
func (c *Cluster) ContainerdSocket() string {
	return filepath.Join(c.Dir, "root", "run", "containerd", "containerd.sock")
}

// ContainerdRestarts counts the times the real node's containerd ended and was started again.
func (c *Cluster) ContainerdRestarts() int {
	if c.real == nil {
		return 0
	}
	c.real.mu.Lock()
	defer c.real.mu.Unlock()
	return c.real.restarts
}

// CertsDir is containerd's config_path on the real node (where hosts.toml files live), on
// the machine's filesystem; inside the namespace it is /etc/containerd/certs.d.
func (c *Cluster) CertsDir() string {
	return filepath.Join(c.Dir, "root", "etc", "containerd", "certs.d")
}

// startRealNode starts the registry, CoreDNS, containerd, the kubelet and kube-proxy, and
// waits for the node to be Ready.
func (c *Cluster) startRealNode(ctx context.Context, adminKC string, tainted bool) error {
	bins, err := BuildRealNode(nil)
	if err != nil {
		return err
	}
	c.real = &realNode{bins: bins, adminKC: adminKC, tainted: tainted}
	if c.Registry, err = startRegistry(); err != nil {
		return err
	}
	if err := c.ns.Expose(net.JoinHostPort(NodeIP, RegistryPort), c.Registry.Addr); err != nil {
		return err
	}
	for ref, prog := range map[string]string{PauseImage: bins.Pause, EchoImage: bins.Echo} {
		if err := c.pushProgram(ctx, ref, prog); err != nil {
			return err
		}
	}
	if err := c.writeNodeFiles(); err != nil {
		return err
	}
	if err := c.spawn("coredns", bins.CoreDNS, "-conf", filepath.Join(c.Dir, "Corefile")); err != nil {
		return err
	}
	if err := c.startContainerd(); err != nil {
		return err
	}
	if err := c.waitFile(c.ContainerdSocket(), 20*time.Second, "containerd"); err != nil {
		return err
	}
	if err := c.makeCgroups(); err != nil {
		return err
	}
	args := []string{"--config", filepath.Join(c.Dir, "kubelet.yaml"), "--kubeconfig", adminKC,
		"--hostname-override", RealNodeName, "--node-ip", NodeIP, "--node-labels", "runr.dev/real-node=true"}
	if tainted {
		args = append(args, "--register-with-taints", RealNodeTaint+"=true:NoExecute")
	}
	if err := c.spawn("kubelet", bins.Kubelet, args...); err != nil {
		return err
	}
	if err := c.spawn("kube-proxy", bins.KubeProxy, "--kubeconfig", adminKC, "--hostname-override", RealNodeName,
		"--proxy-mode", "iptables", "--conntrack-max-per-core", "0", "--cluster-cidr", ClusterCIDR,
		"--healthz-bind-address", "127.0.0.1:10256", "--metrics-bind-address", "127.0.0.1:10249"); err != nil {
		return err
	}
	return c.waitRealNodeReady(ctx)
}

// waitRealNodeReady waits for the kubelet to register its node as Ready, then gives it the
// labels a kubelet may not set on itself.
func (c *Cluster) waitRealNodeReady(ctx context.Context) error {
	deadline := time.Now().Add(90 * time.Second)
	for {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, RealNodeName, metav1.GetOptions{})
		if err == nil && nodeReady(n) {
			break
		}
		if !c.running("kubelet") {
			return fmt.Errorf("testcluster: the kubelet ended%s", c.logTail("kubelet"))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("testcluster: the real node did not become Ready in 90 s (%v)%s%s", err, c.logTail("kubelet"), c.logTail("containerd"))
		}
		time.Sleep(250 * time.Millisecond)
	}
	patch := `{"metadata":{"labels":{"node-role.kubernetes.io/worker":""}}}`
	if _, err := c.Client.CoreV1().Nodes().Patch(ctx, RealNodeName, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("testcluster: label the real node: %w", err)
	}
	return nil
}

func nodeReady(n *corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// startContainerd starts the node's containerd and starts it again whenever it ends
// while the cluster runs, as the machine's service manager would (Restart=always): the
// console's containerd restart kills it through the node's systemctl (serviceManager).
func (c *Cluster) startContainerd() error {
	pidFile := filepath.Join(c.Dir, "containerd.pid")
	start := func() (*exec.Cmd, error) {
		logf, err := os.OpenFile(filepath.Join(c.Dir, "containerd.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		// The pid inside the namespace, which the node's systemctl signals.
		cmd := c.ns.Command("sh", "-c", `echo $$ > "$0"; exec containerd --config /etc/containerd/config.toml`, pidFile)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			logf.Close()
			return nil, fmt.Errorf("testcluster: start containerd: %w", err)
		}
		logf.Close()
		return cmd, nil
	}
	cmd, err := start()
	if err != nil {
		return err
	}
	c.real.containerd = cmd
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for {
			c.real.mu.Lock()
			cur := c.real.containerd
			c.real.mu.Unlock()
			cur.Wait()
			select {
			case <-c.stopCh:
				return
			default:
			}
			c.log("testcluster %s: containerd ended; starting it again", c.Name)
			next, err := start()
			if err != nil {
				c.log("testcluster %s: %v", c.Name, err)
				return
			}
			c.real.mu.Lock()
			c.real.containerd, c.real.restarts = next, c.real.restarts+1
			c.real.mu.Unlock()
		}
	}()
	return nil
}

// stopRealNode ends the real node's containerd (the namespace's end takes the rest) and
// removes the cgroups its kubelet made.
func (c *Cluster) stopRealNode() {
	c.real.mu.Lock()
	if p := c.real.containerd; p != nil && p.Process != nil {
		syscall.Kill(-p.Process.Pid, syscall.SIGTERM)
	}
	c.real.mu.Unlock()
}

// makeCgroups creates the kubelet's cgroup root in every hierarchy (the kubelet wants it to
// exist), with the machine's CPUs and memory nodes for cpuset.
func (c *Cluster) makeCgroups() error {
	hierarchies, _ := filepath.Glob("/sys/fs/cgroup/*")
	for _, h := range hierarchies {
		if st, err := os.Stat(h); err != nil || !st.IsDir() {
			continue
		}
		dir := filepath.Join(h, c.cgroupRoot())
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("testcluster: create cgroup %s: %w", dir, err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if v, err := os.ReadFile(filepath.Join(h, f)); err == nil {
				os.WriteFile(filepath.Join(dir, f), v, 0o644)
			}
		}
	}
	return nil
}

// removeCgroups removes the cgroup tree of the node (every hierarchy), deepest first.
func (c *Cluster) removeCgroups() {
	roots, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", c.cgroupRoot()))
	for _, root := range roots {
		var dirs []string
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			syscall.Rmdir(dirs[i])
		}
	}
}

// cgroupRoot is the kubelet's cgroup root: the cluster's own, so that two real nodes on
// one machine never manage each other's pods.
func (c *Cluster) cgroupRoot() string { return "runr-" + c.Name }

func (c *Cluster) waitFile(path string, timeout time.Duration, what string) error {
	deadline := time.Now().Add(timeout)
	for !exists(path) {
		if time.Now().After(deadline) {
			return fmt.Errorf("testcluster: %s did not start in %s%s", what, timeout, c.logTail(what))
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// writeNodeFiles writes containerd's configuration and hosts.toml files, the CNI network,
// the kubelet's configuration, CoreDNS's Corefile and the node's systemctl.
func (c *Cluster) writeNodeFiles() error {
	root := filepath.Join(c.Dir, "root")
	cni := filepath.Join(c.Dir, "cni")
	files := map[string]string{
		filepath.Join(root, "etc/containerd/config.toml"): containerdConfig(cni),
		filepath.Join(cni, "10-runr.conflist"):            cniConfig(filepath.Join(c.Dir, "cni-ipam")),
		filepath.Join(c.Dir, "kubelet.yaml"):              kubeletConfig(filepath.Join(c.Dir, "resolv.conf"), "/"+c.cgroupRoot()),
		filepath.Join(c.Dir, "Corefile"):                  corefile(c.real.adminKC),
		filepath.Join(root, "usr/local/sbin/systemctl"):   serviceManager(filepath.Join(c.Dir, "containerd.pid")),
	}
	for host, server := range registryHosts {
		files[filepath.Join(c.CertsDir(), host, "hosts.toml")] = registryHostsTOML(host, server)
	}
	// The registry as the image mirror of the console under test (ImageMirror): plain HTTP.
	files[filepath.Join(c.CertsDir(), ImageMirror, "hosts.toml")] = fmt.Sprintf(`# The test harness: the cluster's registry as an image mirror, over HTTP.
server = "http://%[1]s"

[host."http://%[1]s"]
  capabilities = ["pull", "resolve"]
`, ImageMirror)
	for p, content := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(p, "systemctl") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			return err
		}
	}
	return nil
}

// registryHosts are the registries whose pulls the node sends to the cluster's registry
// (each under a path of its name), with their own addresses.
var registryHosts = map[string]string{
	"ghcr.io":         "https://ghcr.io",
	"docker.io":       "https://registry-1.docker.io",
	"registry.k8s.io": "https://registry.k8s.io",
	"gcr.io":          "https://gcr.io",
	"quay.io":         "https://quay.io",
}

func registryHostsTOML(host, server string) string {
	return fmt.Sprintf(`# The test harness: pulls of %[1]s go to the cluster's registry inside the namespace.
server = %[2]q

[host."http://%[3]s:%[4]s/v2/%[1]s"]
  capabilities = ["pull", "resolve"]
  override_path = true
`, host, server, NodeIP, RegistryPort)
}

// containerdConfig is containerd 1.6's configuration (version 2) with the two settings
// this machine needs (realnode.md): restrict_oom_score_adj, and cgroupfs for runc.
func containerdConfig(cniConfDir string) string {
	return fmt.Sprintf(`version = 2
root = "/var/lib/containerd"
state = "/run/containerd"

[grpc]
  address = "/run/containerd/containerd.sock"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %q
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "/etc/containerd/certs.d"
`, PauseImage, cniConfDir)
}

// cniConfig is the pods' network: a bridge with the node as gateway, host-local addresses
// of PodCIDR kept in the cluster's folder, and portmap.
func cniConfig(ipamDir string) string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "runr",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": %q, "ranges": [[{"subnet": %q}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, ipamDir, PodCIDR)
}

// kubeletConfig is the kubelet's configuration with what this machine requires
// (realnode.md): cgroup v1 with cgroupfs, no swap check, no local-storage isolation or node
// allocatable enforcement. The kubelet's API is open inside the namespace (logs, exec).
func kubeletConfig(resolvConf, cgroupRoot string) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 0.0.0.0
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization:
  mode: AlwaysAllow
cgroupDriver: cgroupfs
cgroupRoot: %q
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
resolvConf: %q
clusterDNS: [%q]
clusterDomain: cluster.local
localStorageCapacityIsolation: false
enforceNodeAllocatable: []
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {"memory.available": "50Mi"}
serializeImagePulls: false
maxPods: 40
podCIDR: %q
rotateCertificates: false
serverTLSBootstrap: false
`, cgroupRoot, resolvConf, ClusterDNS, PodCIDR)
}

// corefile serves cluster.local from the API (CoreDNS's kubernetes plugin) and answers
// every other name with NXDOMAIN at once: nothing outside the namespace can be reached.
func corefile(kubeconfig string) string {
	return fmt.Sprintf(`cluster.local:53 in-addr.arpa:53 {
    bind %[1]s
    errors
    kubernetes cluster.local in-addr.arpa {
        kubeconfig %[2]s
        pods insecure
    }
}
.:53 {
    bind %[1]s
    template ANY ANY {
        rcode NXDOMAIN
    }
}
`, ClusterDNS, kubeconfig)
}

// serviceManager is the real node's systemctl: the machine has no systemd, so the harness
// plays the node's service manager for the one service the console restarts. `systemctl
// restart containerd` (what `runr registry restart-containerd` runs, chrooted into the
// host) stops the node's containerd, which the harness starts again (startContainerd),
// and returns once a new one serves.
func serviceManager(pidFile string) string {
	return fmt.Sprintf(`#!/bin/sh
# The test harness's service manager of its real node (this machine runs no systemd).
pidfile=%q
case "$*" in
"restart containerd")
  old=$(cat "$pidfile") || exit 1
  sock=/run/containerd/containerd.sock
  kill -TERM "$old" || exit 1
  i=0
  while [ $i -lt 600 ]; do
    # As systemd's restart returns: the new containerd is up and answers. The harness
    # writes the new pid only after the old process has ended, so an answer on the socket
    # then comes from the new one (a socket file the old one left behind refuses
    # connections; its inode number may be reused by the new socket, so it is no sign).
    # A caller that exits before the new containerd serves may exit unseen: its pod then
    # shows running for ever.
    new=$(cat "$pidfile" 2>/dev/null)
    if [ -n "$new" ] && [ "$new" != "$old" ] && ctr --address "$sock" version >/dev/null 2>&1; then
      echo "containerd restarted (pid $old -> $new)"
      exit 0
    fi
    sleep 0.1
    i=$((i+1))
  done
  echo "containerd did not come back within 60 s" >&2
  exit 1
  ;;
*)
  echo "systemctl of the test harness knows only 'restart containerd', not: $*" >&2
  exit 1
  ;;
esac
`, pidFile)
}

// PreferRealNode makes the real node the only node new pods are scheduled to (the
// simulated ones get SimulatedNodeTaint, the real node loses RealNodeTaint); pods already
// running stay where they are. Tests use it to run the console's Deployments for real.
func (c *Cluster) PreferRealNode(ctx context.Context) error {
	if c.real == nil {
		return errors.New("testcluster: the cluster has no real node")
	}
	nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, item := range nodes.Items {
		name := item.Name
		// Kubelets and the node controller write nodes too: read fresh on a conflict.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n, err := c.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			var taints []corev1.Taint
			for _, t := range n.Spec.Taints {
				if t.Key != RealNodeTaint && t.Key != SimulatedNodeTaint {
					taints = append(taints, t)
				}
			}
			if name != RealNodeName {
				taints = append(taints, corev1.Taint{Key: SimulatedNodeTaint, Value: "true", Effect: corev1.TaintEffectNoSchedule})
			}
			n.Spec.Taints = taints
			_, err = c.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("testcluster: taint node %s: %w", name, err)
		}
	}
	return nil
}

// apiServerCert is a CA and a serving certificate for the API server that names every
// address it is reached at: loopback (the harness's forward and the components), the
// node's address (the kubelet, kube-proxy) and the kubernetes Service (pods).
func (c *Cluster) apiServerCert() (certFile, keyFile string, caPEM []byte, err error) {
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", "", nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "runr testcluster CA " + c.Name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return "", "", nil, err
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", "", nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(NodeIP), net.ParseIP("10.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return "", "", nil, err
	}
	if err := os.MkdirAll(c.certDir(), 0o700); err != nil {
		return "", "", nil, err
	}
	certFile, keyFile = filepath.Join(c.certDir(), "serving.crt"), filepath.Join(c.certDir(), "serving.key")
	caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return "", "", nil, err
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return "", "", nil, err
	}
	return certFile, keyFile, caPEM, os.WriteFile(filepath.Join(c.certDir(), "ca.crt"), caPEM, 0o644)
}

// pushProgram puts one of the harness's programs into the registry as an image of it alone.
func (c *Cluster) pushProgram(ctx context.Context, ref, bin string) error {
	raw, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	img, err := BinaryImage(raw, filepath.Base(bin), nil)
	if err != nil {
		return err
	}
	return c.Registry.Push(ctx, ref, img)
}

var (
	consoleImagesMu sync.Mutex
	consoleImages   = map[string][]images.Built{}
)

// ConsoleImages builds the console's images of this checkout with a version stamp, once per
// process and version (the images `make images` builds).
func ConsoleImages(version string) ([]images.Built, error) {
	consoleImagesMu.Lock()
	defer consoleImagesMu.Unlock()
	if b, ok := consoleImages[version]; ok {
		return b, nil
	}
	b, err := images.Build(context.Background(), images.Options{Version: version, NoLayout: true})
	if err != nil {
		return nil, err
	}
	consoleImages[version] = b
	return b, nil
}

// PushImages puts images into the cluster's registry under their references.
func (c *Cluster) PushImages(ctx context.Context, built []images.Built) error {
	for _, b := range built {
		if err := c.Registry.Push(ctx, b.Ref, b.Image); err != nil {
			return err
		}
	}
	return nil
}

// PushEcho puts the harness's echo program into the registry under another name too (a
// test that needs an image the node has not pulled yet, or one of another registry).
func (c *Cluster) PushEcho(ctx context.Context, ref string) error {
	return c.pushProgram(ctx, ref, c.real.bins.Echo)
}

// InClusterHTTP is an HTTP client that reaches addresses inside the cluster's namespace
// (pod and Service addresses, NodeIP), as a program on the node would; nil without a
// real node.
func (c *Cluster) InClusterHTTP() *http.Client {
	if c.ns == nil {
		return nil
	}
	return &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{DialContext: c.ns.DialContext, DisableKeepAlives: true}}
}

// Expose makes a loopback address of the machine (e.g. the console under test, its
// PostgreSQL) reachable from the cluster's pods at NodeIP:port; it returns that address.
func (c *Cluster) Expose(hostAddr string, port int) (string, error) {
	if c.ns == nil {
		return "", errors.New("testcluster: the cluster has no real node")
	}
	inside := net.JoinHostPort(NodeIP, fmt.Sprint(port))
	return inside, c.ns.Expose(inside, hostAddr)
}

// BinaryImage is an image of one static program at /<name> that runs it with args.
func BinaryImage(program []byte, name string, args []string) (v1.Image, error) {
	layer, err := images.Layer([]images.File{{Path: name, Data: program, Mode: 0o755}})
	if err != nil {
		return nil, err
	}
	return images.Image([]v1.Layer{layer}, images.Config{Entrypoint: []string{"/" + name}, Cmd: args})
}

// WaitRealPod waits for a pod of the selector in ns to run on the real node with every
// container ready and returns it; on timeout it fails with what the pods and their events say, and the
// images the cluster's registry was asked for and does not have.
func (c *Cluster) WaitRealPod(t testing.TB, ns, selector string, timeout time.Duration) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(timeout)
	for {
		pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector, FieldSelector: "spec.nodeName=" + RealNodeName})
		if err == nil {
			for i := range pods.Items {
				if p := &pods.Items[i]; p.DeletionTimestamp == nil && podReady(p) {
					return p
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pod %s in %s ran on the real node within %s:\n%s", selector, ns, timeout, c.PodReport(ns, selector))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// PodReport says what the pods of a selector are doing, with their events, and which images
// the cluster's registry lacks: what a failed real-node test needs to show.
func (c *Cluster) PodReport(ns, selector string) string {
	ctx := context.Background()
	var b strings.Builder
	pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return err.Error()
	}
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "pod %s on %q: %s\n", p.Name, p.Spec.NodeName, p.Status.Phase)
		for _, st := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			switch {
			case st.State.Waiting != nil:
				fmt.Fprintf(&b, "  %s (%s): waiting: %s %s\n", st.Name, st.Image, st.State.Waiting.Reason, st.State.Waiting.Message)
			case st.State.Terminated != nil:
				fmt.Fprintf(&b, "  %s (%s): ended %d: %s %s\n", st.Name, st.Image, st.State.Terminated.ExitCode, st.State.Terminated.Reason, st.State.Terminated.Message)
				if st.State.Terminated.ExitCode != 0 && p.Spec.NodeName == RealNodeName {
					raw, _ := c.Client.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: st.Name}).DoRaw(ctx)
					fmt.Fprintf(&b, "    log: %s\n", strings.TrimSpace(string(raw)))
				}
			default:
				fmt.Fprintf(&b, "  %s (%s): running, ready %v\n", st.Name, st.Image, st.Ready)
			}
		}
		evs, _ := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + p.Name})
		if evs != nil {
			for _, e := range evs.Items {
				fmt.Fprintf(&b, "  event %s %s: %s\n", e.Type, e.Reason, e.Message)
			}
		}
	}
	if c.Registry != nil {
		if missing := c.Registry.Missing(); len(missing) > 0 {
			fmt.Fprintf(&b, "images the cluster's registry does not have: %s\n", strings.Join(missing, ", "))
		}
	}
	return b.String()
}

// ServeRegistryAs makes the cluster's registry answer behind a Service of the cluster: the
// Service selects no pod any more and an EndpointSlice of its own sends its first port to
// NodeIP:5000. A stand-in chart's registry (Zot) runs no container on a simulated node;
// this way the pulls a node mirror sends to that Service reach a real registry, which
// records them with the Service's address as their Host.
func (c *Cluster) ServeRegistryAs(ctx context.Context, ns, name string) error {
	svc, err := c.Client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("testcluster: Service %s/%s: %w", ns, name, err)
	}
	if len(svc.Spec.Ports) == 0 {
		return fmt.Errorf("testcluster: Service %s/%s has no port", ns, name)
	}
	svc.Spec.Selector = map[string]string{"runr.dev/served-by": "testcluster-registry"}
	if _, err := c.Client.CoreV1().Services(ns).Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("testcluster: Service %s/%s: %w", ns, name, err)
	}
	port := svc.Spec.Ports[0]
	portNum, _ := strconv.Atoi(RegistryPort)
	p32, proto, ready := int32(portNum), corev1.ProtocolTCP, true
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name + "-testcluster-registry", Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{NodeIP}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &port.Name, Port: &p32, Protocol: &proto}},
	}
	if _, err := c.Client.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("testcluster: EndpointSlice of %s/%s: %w", ns, name, err)
	}
	return nil
}

// KillContainer ends a container of a pod on the real node with SIGKILL through containerd,
// as a crash would: its pod stays, and the kubelet starts the container again.
func (c *Cluster) KillContainer(ctx context.Context, pod *corev1.Pod, container string) error {
	for _, st := range pod.Status.ContainerStatuses {
		if st.Name != container {
			continue
		}
		id := strings.TrimPrefix(st.ContainerID, "containerd://")
		out, err := exec.CommandContext(ctx, "ctr", "--address", c.ContainerdSocket(), "--namespace", "k8s.io", "tasks", "kill", "--signal", "SIGKILL", id).CombinedOutput()
		if err != nil {
			return fmt.Errorf("testcluster: kill container %s of %s: %w: %s", container, pod.Name, err, out)
		}
		return nil
	}
	return fmt.Errorf("testcluster: pod %s has no running container %s", pod.Name, container)
}
