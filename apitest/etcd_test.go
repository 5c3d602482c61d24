package apitest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/ops/nodes"
	"runr.dev/console/testcluster"
)

// Deleting a control-plane node removes its etcd member through a pod of another member
// (etcdctl with that pod's own certificates), unless that would lose quorum; the cluster
// runs a real three-member etcd under its API server.
func TestEtcdMemberRemovedWithItsNode(t *testing.T) {
	ctx := context.Background()
	cp := func(name string) testcluster.NodeSpec {
		return testcluster.NodeSpec{Name: name, CPU: "4", Memory: "8Gi", ControlPlane: true, Taints: []corev1.Taint{wkCPTaint}}
	}
	c := testcluster.New(t, testcluster.Options{EtcdMembers: 3, Nodes: []testcluster.NodeSpec{cp("cp-1"), cp("cp-2"), cp("cp-3"),
		{Name: "worker-1", CPU: "8", Memory: "16Gi", Worker: true}}})
	if names, err := c.EtcdMemberNames(ctx); err != nil || len(names) != 3 {
		t.Fatalf("etcd members at the start: %v %v", names, err)
	}
	e := console(t, nil)
	_, tok := e.User("owner")
	r := newRegion(t, e, tok, c, "etcd", nil)
	base := "/api/knative-regions/" + r.ID + "/nodes/"

	// With cp-2's member down, removing cp-3's would leave 1 of 2 answering: the preflight
	// says so with the members it read, and the delete is refused before anything changes.
	if err := c.StopEtcdMember("cp-2"); err != nil {
		t.Fatal(err)
	}
	var pre struct {
		Data  nodes.NodeDeleteCheck
		Error string
	}
	if st := e.JSON("GET", base+"cp-3/delete-preflight", tok, nil, &pre); st != 200 || pre.Data.Etcd == nil || pre.Data.Etcd.Removes != "cp-3" ||
		len(pre.Data.Etcd.Members) != 3 || pre.Data.Etcd.Members[1].Name != "cp-2" || pre.Data.Etcd.Members[1].Healthy || !pre.Data.Etcd.Members[0].Healthy ||
		!strings.Contains(pre.Data.Refused, "would leave 2 voting member(s) of which 1 answer(s)") || !strings.Contains(pre.Data.Refused, "Bring back cp-2 first") {
		t.Fatalf("delete-preflight with cp-2's member down: %d %+v %+v", st, pre.Data, pre.Data.Etcd)
	}
	var jobs, after int
	e.Store.DB.Get(&jobs, `SELECT count(*) FROM jobs`)
	var refused struct{ Error string }
	if st := e.JSON("DELETE", base+"cp-3", tok, nil, &refused); st != 422 || !strings.Contains(refused.Error, "etcd needs 2 for quorum") {
		t.Fatalf("delete with cp-2's member down: %d %+v", st, refused)
	}
	e.Store.DB.Get(&after, `SELECT count(*) FROM jobs`)
	if n, err := c.Client.CoreV1().Nodes().Get(ctx, "cp-3", metav1.GetOptions{}); err != nil || n.Spec.Unschedulable || after != jobs {
		t.Fatalf("a refused delete changed something: %v, cordoned %v, jobs %d -> %d", err, n.Spec.Unschedulable, jobs, after)
	}
	if names, err := c.EtcdMemberNames(ctx); err != nil || len(names) != 3 {
		t.Fatalf("a refused delete changed etcd: %v %v", names, err)
	}

	// cp-2's member back: the delete removes cp-3's member, then the node.
	if err := c.StartEtcdMember("cp-2"); err != nil {
		t.Fatal(err)
	}
	id, warning := wkStart(t, e, tok, "DELETE", base+"cp-3", nil)
	if !strings.Contains(warning, "leaves 2 control-plane nodes") {
		t.Fatalf("the even-count warning before the delete: %q", warning)
	}
	mustSucceed(t, e.WaitJob(id, 2*time.Minute))
	log := wkLog(t, e, id)
	for _, want := range []string{
		"even number of etcd voting members",
		"etcd before (through pod kube-system/etcd-cp-",
		"3 member(s): cp-1 (healthy), cp-2 (healthy), cp-3 (healthy)",
		"Removed etcd member cp-3",
		"etcd after: 2 member(s): cp-1 (healthy), cp-2 (healthy)",
	} {
		if !strings.Contains(log, want) {
			t.Fatalf("the delete's log lacks %q:\n%s", want, log)
		}
	}
	steps, _ := e.Store.JobSteps(ctx, id)
	var names []string
	for _, s := range steps {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"delete-preflight", "cordon", "evict", "etcd-member", "delete"}) {
		t.Fatalf("the delete's steps: %v", names)
	}
	// etcd itself lists two members, which keep quorum: the API keeps answering.
	members, err := c.EtcdMemberNames(ctx)
	if err != nil || !slices.Equal(members, []string{"cp-1", "cp-2"}) && !slices.Equal(members, []string{"cp-2", "cp-1"}) {
		t.Fatalf("etcd members after the delete: %v %v", members, err)
	}
	if _, err := c.Client.CoreV1().Nodes().Get(ctx, "cp-3", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("cp-3 still exists: %v", err)
	}
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "after-etcd-removal"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the API after the member's removal: %v", err)
	}
}

// rke2's etcd pods name only their configuration file: the console uses the certificates
// rke2 keeps beside it and the node's address, and removes the member named <node>-<hex>.
func TestEtcdMemberRemovedOnRKE2(t *testing.T) {
	ctx := context.Background()
	cp := func(name string) testcluster.NodeSpec {
		return testcluster.NodeSpec{Name: name, CPU: "4", Memory: "8Gi", ControlPlane: true, KubeletVersion: "v1.34.1+rke2r1", Taints: []corev1.Taint{wkCPTaint}}
	}
	c := testcluster.New(t, testcluster.Options{EtcdMembers: 3, EtcdRKE2: true, Nodes: []testcluster.NodeSpec{cp("cp-1"), cp("cp-2"), cp("cp-3"),
		{Name: "worker-1", CPU: "8", Memory: "16Gi", Worker: true, KubeletVersion: "v1.34.1+rke2r1"}}})
	pod, err := c.Client.CoreV1().Pods("kube-system").Get(ctx, "etcd-cp-3", metav1.GetOptions{})
	if err != nil || len(pod.Spec.Containers[0].Command) != 2 || !strings.HasSuffix(pod.Spec.Containers[0].Command[1], "/server/db/etcd/config") {
		t.Fatalf("rke2's etcd pod: %v %v", err, pod.Spec.Containers)
	}
	e := console(t, nil)
	_, tok := e.User("owner")
	r := newRegion(t, e, tok, c, "rke2", nil)
	base := "/api/knative-regions/" + r.ID + "/nodes/"
	var pre struct{ Data nodes.NodeDeleteCheck }
	if st := e.JSON("GET", base+"cp-3/delete-preflight", tok, nil, &pre); st != 200 || pre.Data.Etcd == nil || len(pre.Data.Etcd.Members) != 3 ||
		!strings.HasPrefix(pre.Data.Etcd.Removes, "cp-3-") || pre.Data.Refused != "" {
		t.Fatalf("delete-preflight: %d %+v %+v", st, pre.Data, pre.Data.Etcd)
	}
	id, _ := wkStart(t, e, tok, "DELETE", base+"cp-3", nil)
	mustSucceed(t, e.WaitJob(id, 2*time.Minute))
	if log := wkLog(t, e, id); !strings.Contains(log, "Removed etcd member cp-3-") || !strings.Contains(log, "etcd after: 2 member(s)") {
		t.Fatalf("the delete's log:\n%s", log)
	}
	members, err := c.EtcdMemberNames(ctx)
	if err != nil || len(members) != 2 || slices.ContainsFunc(members, func(m string) bool { return strings.HasPrefix(m, "cp-3-") }) {
		t.Fatalf("etcd members after the delete: %v %v", members, err)
	}
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "after-rke2-removal"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the API after the member's removal: %v", err)
	}
}
