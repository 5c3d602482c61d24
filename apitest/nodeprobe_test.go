package apitest

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/ops/isolation"
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/nodes"
	"runr.dev/console/testcluster"
)

// Probe nodes measures the floor on each node (the harness plays the probe's pods from the
// nodes' specs): cgroup v2 with its controllers, free disk for images, egress; the Workers
// tab and the API show each line with its evidence, and a node below it needs the
// confirmation to be dedicated.
func TestNodeProbe(t *testing.T) {
	ctx := context.Background()
	c := testcluster.New(t, testcluster.Options{Nodes: []testcluster.NodeSpec{testcluster.DefaultNodes()[0],
		{Name: "w-ok", CPU: "8", Memory: "16Gi", Worker: true},
		{Name: "w-v1", CPU: "8", Memory: "16Gi", Worker: true, CgroupV1: true},
		{Name: "w-disk", CPU: "8", Memory: "16Gi", Worker: true, ContainerdFreeGiB: 10},
		{Name: "w-closed", CPU: "8", Memory: "16Gi", Worker: true, NoEgress: true}}})
	e := console(t, nil)
	_, tok := e.User("owner")
	r := newRegion(t, e, tok, c, "probe", nil)

	// Not probed yet: one advisory line, which does not fail the floor.
	if v := wkGetNodes(t, e, tok, r.ID).node(t, "w-v1"); !v.PreflightOK || wkPreflight(v, "probe").Status != kit.CheckWarn {
		t.Fatalf("w-v1 before the probe: %+v", v.Preflight)
	}
	id, _ := wkStart(t, e, tok, "POST", "/api/knative-regions/"+r.ID+"/nodes-probe", nil)
	mustSucceed(t, e.WaitJob(id, 2*time.Minute))
	if log := wkLog(t, e, id); !strings.Contains(log, "Probed 5 node(s); 3 below the floor") || !strings.Contains(log, "w-v1 (cgroup v2: cgroup v1") {
		t.Fatalf("the probe's log:\n%s", log)
	}
	if _, err := c.Client.AppsV1().DaemonSets(isolation.SandboxNamespace).Get(ctx, nodes.NodeProbe, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the probe's DaemonSet stays: %v", err)
	}
	ns := wkGetNodes(t, e, tok, r.ID)
	ok := ns.node(t, "w-ok")
	if !ok.PreflightOK || wkPreflight(ok, "probe").Key != "" || wkPreflight(ok, "cgroup").Status != kit.CheckPass ||
		!strings.Contains(wkPreflight(ok, "disk").Evidence, "100.0 GiB free on the volume of /var/lib/containerd") ||
		wkPreflight(ok, "egress:registry.k8s.io:443").Status != kit.CheckPass {
		t.Fatalf("w-ok: %+v", ok.Preflight)
	}
	for node, want := range map[string]struct{ key, evidence string }{
		"w-v1":     {"cgroup", "cgroup v1: Kubernetes needs cgroup v2"},
		"w-disk":   {"disk", "10.0 GiB free on the volume of /var/lib/containerd (at least 15 GiB)"},
		"w-closed": {"egress:pkgs.k8s.io:443", "cannot resolve pkgs.k8s.io"},
	} {
		v := ns.node(t, node)
		if it := wkPreflight(v, want.key); v.PreflightOK || it.Status != kit.CheckFail || !strings.Contains(it.Evidence, want.evidence) {
			t.Fatalf("%s: %+v", node, v.Preflight)
		}
	}
	// The Workers tab shows the measured lines, and the cluster's Kubernetes version with
	// why the console does not upgrade it (kubeadm) and no upgrade form.
	if _, page := e.Raw("GET", "/regions/"+r.ID+"?tab=workers", tok, ""); !strings.Contains(page, "cgroup v1: Kubernetes needs cgroup v2") || !strings.Contains(page, `action="/regions/`+r.ID+`/nodes-probe"`) ||
		!strings.Contains(page, testcluster.KubernetesVersion+`</span> on cp-1, w-closed, w-disk, w-ok, w-v1`) || !strings.Contains(page, "The console upgrades k3s and rke2 clusters only") || strings.Contains(page, "/kubernetes-upgrade\"") {
		t.Fatal("the Workers tab lacks the probe's lines, its button or the Kubernetes version (without an upgrade form on a kubeadm cluster)")
	}
	if ns.Upgrades.Distribution != "kubernetes" || len(ns.Upgrades.Versions) != 1 || !strings.Contains(ns.Upgrades.Why, "kubeadm upgrade") {
		t.Fatalf("upgrades %+v", ns.Upgrades)
	}
	// Dedicating a node below the measured floor asks for the confirmation naming it.
	var below struct{ Fields map[string]string }
	if st := e.JSON("PUT", "/api/knative-regions/"+r.ID+"/workers", tok, map[string]any{"nodes": []string{"w-ok", "w-disk"}}, &below); st != 422 ||
		!strings.Contains(below.Fields["confirm_below_floor"], "w-disk fails Free disk for images: 10.0 GiB free") {
		t.Fatalf("dedicating w-disk: %d %+v", st, below)
	}
}
