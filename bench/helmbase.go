package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"

	"runr.dev/console/helm"
	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/observability"
	"runr.dev/console/testcluster"
)

// servingReleases are the Helm releases install-serving makes (the KnativeServing, the
// agent and the console's own objects are not Helm releases).
var servingReleases = map[string]bool{kit.TraefikRelease: true, observability.PrometheusRelease: true, observability.LokiRelease: true, observability.TempoRelease: true, observability.OtelRelease: true}

// helmBaseline reads the releases install-serving made on a cluster (their charts' names
// and versions and their values, as Helm stored them), loads the same charts from the
// mirror the console used (a stored release keeps no crds/ directory), and installs them
// on a fresh simulated cluster one after the other with the Helm SDK and --wait, in the
// order the console installed them. It returns the wall time of those installs and the
// releases, in order.
func helmBaseline(from *testcluster.Cluster, mirror string) (time.Duration, []string, error) {
	ctx := context.Background()
	src, err := clusterOf(from)
	if err != nil {
		return 0, nil, err
	}
	l, err := src.Metadata.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace("").
		List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,status=deployed"})
	if err != nil {
		return 0, nil, fmt.Errorf("list the Helm releases: %w", err)
	}
	var rels []*release.Release
	for _, m := range l.Items {
		if !servingReleases[m.Labels["name"]] {
			continue
		}
		r, err := helm.Status(src, m.Namespace, m.Labels["name"])
		if err != nil || r == nil {
			return 0, nil, fmt.Errorf("read release %s/%s: %v", m.Namespace, m.Labels["name"], err)
		}
		rels = append(rels, r)
	}
	if len(rels) != len(servingReleases) {
		return 0, nil, fmt.Errorf("found %d of the %d releases of install-serving", len(rels), len(servingReleases))
	}
	sort.Slice(rels, func(i, j int) bool { return rels[i].Info.FirstDeployed.Before(rels[j].Info.FirstDeployed) })
	charts := helm.NewChartSource(mirror, "")
	loaded := make([]*chart.Chart, len(rels))
	for i, r := range rels {
		if loaded[i], err = charts.Load(ctx, helm.ChartRef{Name: r.Chart.Metadata.Name, Version: r.Chart.Metadata.Version}); err != nil {
			return 0, nil, fmt.Errorf("Helm baseline: %w", err)
		}
	}
	fmt.Println("  Helm baseline: starting a fresh simulated cluster")
	cs, err := startClusters(1)
	if err != nil {
		return 0, nil, err
	}
	defer cs[0].Stop()
	dst, err := clusterOf(cs[0])
	if err != nil {
		return 0, nil, err
	}
	var names []string
	start := time.Now()
	// The charts' pods ask for the console's PriorityClass (observability.LokiValues and the
	// others), which the console creates before its first release: without it they are
	// refused and --wait never ends.
	if err := copyPriorityClass(ctx, src, dst, observability.PriorityClassName); err != nil {
		return 0, nil, err
	}
	for i, r := range rels {
		names = append(names, r.Namespace+"/"+r.Name+" ("+r.Chart.Metadata.Name+" "+r.Chart.Metadata.Version+")")
		if _, err := helm.Apply(ctx, dst, helm.Release{Namespace: r.Namespace, Name: r.Name, Chart: loaded[i], Values: r.Config},
			helm.Options{Timeout: 5 * time.Minute, Wait: true}); err != nil {
			return 0, nil, fmt.Errorf("Helm baseline: %w", err)
		}
	}
	took := time.Since(start)
	fmt.Printf("  Helm baseline: %d releases in %s\n", len(rels), took.Round(time.Millisecond))
	return took, names, nil
}

// clusterOf is a simulated cluster as the console reaches it.
func clusterOf(c *testcluster.Cluster) (*kube.Cluster, error) {
	kc, err := kube.ParseKubeconfig(c.Kubeconfig())
	if err != nil {
		return nil, err
	}
	kc.AllowLoopback = true // the simulated clusters listen on 127.0.0.1
	return kube.NewCluster(kc)
}

// copyPriorityClass creates on dst the PriorityClass name as src has it.
func copyPriorityClass(ctx context.Context, src, dst *kube.Cluster, name string) error {
	pc, err := src.Clientset.SchedulingV1().PriorityClasses().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("Helm baseline: read PriorityClass %s: %w", name, err)
	}
	pc.ObjectMeta = metav1.ObjectMeta{Name: pc.Name, Labels: pc.Labels}
	if _, err := dst.Clientset.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("Helm baseline: create PriorityClass %s: %w", name, err)
	}
	return nil
}
