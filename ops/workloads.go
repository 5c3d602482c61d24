package ops

import (
	"context"
	"sort"

	"helm.sh/helm/v3/pkg/release"
	"runr.dev/console/engine"
	"runr.dev/console/kube"
)

// verdict judges a workload from what one look at the cluster found.
func (st *clusterLook) verdict(w kube.Workload) (bool, string) {
	switch w.Kind {
	case "Deployment":
		d, ok := st.deployments[key(w.Namespace, w.Name)]
		if !ok {
			return false, w.String() + " is missing"
		}
		ready, detail := kube.DeploymentReady(d)
		return ready, w.String() + ": " + detail
	case "StatefulSet":
		s, ok := st.statefuls[key(w.Namespace, w.Name)]
		if !ok {
			return false, w.String() + " is missing"
		}
		ready, detail := kube.StatefulSetIsReady(s)
		return ready, w.String() + ": " + detail
	case "DaemonSet":
		d, ok := st.daemons[key(w.Namespace, w.Name)]
		if !ok {
			return false, w.String() + " is missing"
		}
		ready, detail := kube.DaemonSetIsReady(d)
		return ready, w.String() + ": " + detail
	}
	o, ok := st.resources[w.String()]
	if !ok {
		return false, w.String() + " is missing"
	}
	ready, detail := kube.OperatorResourceAvailable(o)
	return ready, w.String() + ": " + detail
}

// WaitRelease waits, one named wait each, for the workloads a Helm release contains and
// the custom resources its operator turns into workloads.
func waitRelease(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, rel *release.Release, o engine.WaitOpts) error {
	ws, err := kube.ReleaseWorkloads(rel.Manifest, rel.Namespace)
	if err != nil {
		return err
	}
	for _, w := range ws {
		what := w.String() + " to be ready"
		if _, ok := kube.OperatorKinds[w.Kind]; ok {
			what = w.String() + " to be available (its operator creates the workload)"
		}
		if err := jc.Wait(ctx, what, o, c.WorkloadReady(w)); err != nil {
			return err
		}
	}
	return nil
}

// workloadNames lists workloads for a log line.
func workloadNames(ws []kube.Workload) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.String()
	}
	sort.Strings(out)
	return out
}
