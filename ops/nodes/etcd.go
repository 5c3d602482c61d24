package nodes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
)

// The console reaches a cluster's etcd the way an administrator would: etcdctl in one of
// the cluster's etcd pods (kubeadm's and rke2's static pods, label component=etcd in
// kube-system), with the certificates that pod's own command line names (kubeadm) or that
// rke2 keeps beside the configuration file its command names. Embedded etcd (k3s) and an
// etcd outside the cluster have no such pod: the console says so.

// etcdMember is one member of a cluster's etcd as etcdctl lists it.
type etcdMember struct {
	ID       uint64   `json:"ID"`
	Name     string   `json:"name"`
	PeerURLs []string `json:"peerURLs"`
	Learner  bool     `json:"isLearner"`
	// Healthy says whether the member's client endpoint answered a health check.
	Healthy    bool     `json:"-"`
	ClientURLs []string `json:"clientURLs"`
}

// etcdPod is an etcd pod the console may run etcdctl in, with that pod's certificates.
type etcdPod struct {
	pod                     *corev1.Pod
	endpoint, ca, cert, key string
}

// errNoEtcdPods says the cluster shows no etcd pod: embedded or external etcd.
var errNoEtcdPods = errors.New("the cluster shows no etcd pod in kube-system (label component=etcd): its etcd is embedded (k3s) or runs outside the cluster, where the console does not reach it")

// etcdPods lists the running etcd pods whose command line names an endpoint and client
// certificates, those not on avoid first.
func etcdPods(ctx context.Context, c *kube.Cluster, avoid string) ([]etcdPod, error) {
	list, err := c.Clientset.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "component=etcd"})
	if err != nil {
		return nil, fmt.Errorf("list the etcd pods: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, errNoEtcdPods
	}
	var pods []etcdPod
	for i := range list.Items {
		p := &list.Items[i]
		if p.Status.Phase != corev1.PodRunning || len(p.Spec.Containers) == 0 {
			continue
		}
		f := commandFlags(append(slices.Clone(p.Spec.Containers[0].Command), p.Spec.Containers[0].Args...))
		ep := strings.Split(f["advertise-client-urls"], ",")[0]
		if ep != "" && f["trusted-ca-file"] != "" && f["cert-file"] != "" && f["key-file"] != "" {
			pods = append(pods, etcdPod{pod: p, endpoint: ep, ca: f["trusted-ca-file"], cert: f["cert-file"], key: f["key-file"]})
		} else if rp, ok := rke2EtcdPod(ctx, c, p, f["config-file"]); ok {
			pods = append(pods, rp)
		}
	}
	if len(pods) == 0 {
		return nil, fmt.Errorf("none of the %d etcd pod(s) runs with its endpoint and certificates on its command line, or with rke2's configuration file: the console cannot run etcdctl there", len(list.Items))
	}
	slices.SortStableFunc(pods, func(a, b etcdPod) int {
		return boolInt(a.pod.Spec.NodeName == avoid) - boolInt(b.pod.Spec.NodeName == avoid)
	})
	return pods, nil
}

// rke2EtcdPod reads an etcd pod of rke2, whose flags are in <data-dir>/server/db/etcd/config:
// the certificates rke2 keeps for its own etcdctl under <data-dir>/server/tls/etcd/, and
// the endpoint on its node's address, where rke2's etcd listens besides 127.0.0.1.
func rke2EtcdPod(ctx context.Context, c *kube.Cluster, p *corev1.Pod, config string) (etcdPod, bool) {
	server, ok := strings.CutSuffix(config, "/db/etcd/config")
	if !ok || p.Spec.NodeName == "" {
		return etcdPod{}, false
	}
	n, err := c.Clientset.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		return etcdPod{}, false
	}
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			tls := server + "/tls/etcd/"
			return etcdPod{pod: p, endpoint: "https://" + net.JoinHostPort(a.Address, "2379"),
				ca: tls + "server-ca.crt", cert: tls + "server-client.crt", key: tls + "server-client.key"}, true
		}
	}
	return etcdPod{}, false
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// commandFlags reads --name=value and --name value flags of a command line.
func commandFlags(args []string) map[string]string {
	f := map[string]string{}
	for i := 0; i < len(args); i++ {
		a, ok := strings.CutPrefix(args[i], "--")
		if !ok {
			continue
		}
		if k, v, ok := strings.Cut(a, "="); ok {
			f[k] = v
		} else if i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
			f[a] = args[i+1]
			i++
		} else {
			f[a] = "true"
		}
	}
	return f
}

// etcdctl runs etcdctl in the pod against its own endpoint with its own certificates.
func (p etcdPod) etcdctl(ctx context.Context, c *kube.Cluster, args ...string) (string, error) {
	cmd := append([]string{"etcdctl", "--endpoints=" + p.endpoint, "--cacert=" + p.ca, "--cert=" + p.cert, "--key=" + p.key,
		"--command-timeout=5s"}, args...)
	return c.Exec(ctx, p.pod.Namespace, p.pod.Name, p.pod.Spec.Containers[0].Name, cmd)
}

// etcdView is a cluster's etcd as seen through one of its pods.
type etcdView struct {
	via     etcdPod
	members []etcdMember
}

// readEtcd lists the members and their health through the first etcd pod that answers.
func readEtcd(ctx context.Context, c *kube.Cluster, avoid string) (*etcdView, error) {
	pods, err := etcdPods(ctx, c, avoid)
	if err != nil {
		return nil, err
	}
	var lastErr error
	for _, p := range pods {
		out, err := p.etcdctl(ctx, c, "member", "list", "-w", "json")
		if err != nil {
			lastErr = fmt.Errorf("etcdctl member list in pod kube-system/%s: %w", p.pod.Name, err)
			continue
		}
		var list struct {
			Members []etcdMember `json:"members"`
		}
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			return nil, fmt.Errorf("read etcdctl member list: %w", err)
		}
		// endpoint health exits non-zero when a member is down; its report still says which.
		health, _ := p.etcdctl(ctx, c, "endpoint", "health", "--cluster", "-w", "json")
		var eps []struct {
			Endpoint string `json:"endpoint"`
			Health   bool   `json:"health"`
		}
		_ = json.Unmarshal([]byte(health), &eps)
		for i := range list.Members {
			m := &list.Members[i]
			for _, ep := range eps {
				m.Healthy = m.Healthy || ep.Health && slices.Contains(m.ClientURLs, ep.Endpoint)
			}
		}
		slices.SortFunc(list.Members, func(a, b etcdMember) int { return strings.Compare(a.Name, b.Name) })
		return &etcdView{via: p, members: list.Members}, nil
	}
	return nil, lastErr
}

// memberOf finds the member of a node: named after it (kubeadm), named after it with a
// suffix (rke2), or with a peer URL on one of its addresses.
func (v *etcdView) memberOf(n *corev1.Node) *etcdMember {
	for i := range v.members {
		if v.members[i].Name == n.Name || strings.HasPrefix(v.members[i].Name, n.Name+"-") {
			return &v.members[i]
		}
	}
	for i := range v.members {
		for _, pu := range v.members[i].PeerURLs {
			u, err := url.Parse(pu)
			if err != nil {
				continue
			}
			for _, a := range n.Status.Addresses {
				if a.Address == u.Hostname() {
					return &v.members[i]
				}
			}
		}
	}
	return nil
}

// String lists the members with their health, as the job log shows them.
func (v *etcdView) String() string {
	var parts []string
	for _, m := range v.members {
		s := m.Name
		if m.Name == "" {
			s = fmt.Sprintf("%x (not started)", m.ID)
		}
		switch {
		case m.Learner:
			s += " (learner)"
		case m.Healthy:
			s += " (healthy)"
		default:
			s += " (not answering)"
		}
		parts = append(parts, s)
	}
	return fmt.Sprintf("%d member(s): %s", len(v.members), strings.Join(parts, ", "))
}

// quorumAfter says why removing m would lose etcd's quorum ("" when it keeps it): the
// voting members left need a majority of them answering.
func (v *etcdView) quorumAfter(m *etcdMember) string {
	var voters, healthy []string
	for _, o := range v.members {
		if o.ID == m.ID || o.Learner {
			continue
		}
		voters = append(voters, o.Name)
		if o.Healthy {
			healthy = append(healthy, o.Name)
		}
	}
	need := len(voters)/2 + 1
	if len(healthy) >= need {
		return ""
	}
	var down []string
	for _, n := range voters {
		if !slices.Contains(healthy, n) {
			down = append(down, n)
		}
	}
	return fmt.Sprintf("removing %s's etcd member would leave %d voting member(s) of which %d answer(s); etcd needs %d for quorum. Bring back %s first, then Retry",
		m.Name, len(voters), len(healthy), need, strings.Join(down, ", "))
}

// EtcdDeleteCheck is what deleting a control-plane node does to etcd, as read through an
// etcd pod; Note says why etcd is not visible, or that no member belongs to the node.
type EtcdDeleteCheck struct {
	Via     string           `json:"via,omitempty"`
	Members []EtcdMemberView `json:"members,omitempty"`
	Removes string           `json:"removes,omitempty"`
	Note    string           `json:"note,omitempty"`
	// Unreadable says that etcd pods exist but etcdctl could not read the members there.
	Unreadable bool `json:"unreadable,omitempty"`
	// Refused is why removing the member would lose quorum.
	Refused string `json:"refused,omitempty"`
}

// EtcdMemberView is one etcd member as the delete preflight shows it.
type EtcdMemberView struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Healthy bool   `json:"healthy"`
	Learner bool   `json:"learner"`
}

// checkEtcdDelete reads etcd for the delete of a control-plane node: its members, the
// member the delete removes, and whether that keeps quorum. It fails only on the node.
func checkEtcdDelete(ctx context.Context, c *kube.Cluster, node string) (*EtcdDeleteCheck, error) {
	n, err := c.Clientset.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read node %s: %w", node, err)
	}
	v, err := readEtcd(ctx, c, node)
	switch {
	case errors.Is(err, errNoEtcdPods):
		return &EtcdDeleteCheck{Note: err.Error()}, nil
	case err != nil:
		return &EtcdDeleteCheck{Unreadable: true, Note: fmt.Sprintf("%s. If %s runs an etcd member, remove it there with etcdctl member remove", kube.Short(err), node)}, nil
	}
	d := &EtcdDeleteCheck{Via: "kube-system/" + v.via.pod.Name}
	for _, m := range v.members {
		d.Members = append(d.Members, EtcdMemberView{ID: fmt.Sprintf("%x", m.ID), Name: m.Name, Healthy: m.Healthy, Learner: m.Learner})
	}
	m := v.memberOf(n)
	if m == nil {
		d.Note = "No etcd member belongs to " + node
		return d, nil
	}
	d.Removes = m.Name
	d.Refused = v.quorumAfter(m)
	if d.Refused == "" {
		d.Note = fmt.Sprintf("The delete removes etcd member %s (%x) before the node; etcd (%s) keeps its quorum", m.Name, m.ID, v)
	}
	return d, nil
}

// etcdPreflight shows a control-plane node's etcd before its delete, and refuses a delete
// whose member removal would lose quorum (nothing is changed yet).
func etcdPreflight(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, node string) error {
	d, err := checkEtcdDelete(ctx, c, node)
	switch {
	case err != nil:
		return err
	case d.Refused != "":
		return errors.New("Refused: " + d.Refused)
	case d.Unreadable:
		jc.Warnf("etcd: %s", d.Note)
	default:
		jc.Logf("etcd: %s", d.Note)
	}
	return nil
}

// removeEtcdMember removes a control-plane node's etcd member through a pod of another
// member, unless that would lose quorum; it logs the members before and after.
func removeEtcdMember(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, node string) error {
	n, err := c.Clientset.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		jc.Note("Node %s is gone already", node)
		return engine.ErrSkip
	case err != nil:
		return fmt.Errorf("read node %s: %w", node, err)
	case !kit.NodeSummary(n).ControlPlane:
		jc.Note("%s is not a control-plane node: it has no etcd member", node)
		return engine.ErrSkip
	}
	v, err := readEtcd(ctx, c, node)
	if err != nil {
		jc.Warnf("etcd: %s. If %s ran an etcd member, remove it with etcdctl member remove", kube.Short(err), node)
		return nil
	}
	jc.Logf("etcd before (through pod kube-system/%s): %s", v.via.pod.Name, v)
	m := v.memberOf(n)
	if m == nil {
		jc.Note("No etcd member belongs to %s (removed already, or never one): nothing to remove", node)
		return nil
	}
	if why := v.quorumAfter(m); why != "" {
		return errors.New("Refused: " + why)
	}
	if err := v.remove(ctx, jc, c, m); err != nil {
		return err
	}
	jc.Logf("Removed etcd member %s (%x)", m.Name, m.ID)
	after, err := readEtcd(ctx, c, node)
	if err != nil {
		jc.Warnf("etcd after the removal: %s", kube.Short(err))
	} else {
		jc.Logf("etcd after: %s", after)
	}
	jc.Note("Removed %s's etcd member; etcd keeps its quorum", node)
	return nil
}

// etcdRecentWait is how long a removal waits for etcd's own check: it refuses ("unhealthy
// cluster") until every member it counts has been connected for 5 s (its HealthInterval).
const etcdRecentWait = 30 * time.Second

// remove removes a member with etcdctl, asking again while etcd refuses because a member
// came back only seconds ago.
func (v *etcdView) remove(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, m *etcdMember) error {
	deadline := time.Now().Add(etcdRecentWait)
	for {
		_, err := v.via.etcdctl(ctx, c, "member", "remove", fmt.Sprintf("%x", m.ID))
		var ee *kube.ExecError
		if err == nil {
			return nil
		}
		if !errors.As(err, &ee) || !strings.Contains(ee.Stderr, "unhealthy cluster") || time.Now().After(deadline) {
			return fmt.Errorf("etcdctl member remove %x (%s) in pod kube-system/%s: %w", m.ID, m.Name, v.via.pod.Name, err)
		}
		jc.Logf("etcd refuses the removal for now (unhealthy cluster: a member has been connected for less than 5 s); asking again")
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(3 * time.Second):
		}
	}
}
