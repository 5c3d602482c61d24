package status

import (
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
