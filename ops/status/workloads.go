package status

import (
	"runr.dev/console/kube"
)

// verdict judges a workload from what one look at the cluster found.
func (st *clusterLook) verdict(w kube.Workload) (bool, string) {
	k := key(w.Namespace, w.Name)
	switch w.Kind {
	case "Deployment":
		return judge(w, st.deployments, k, kube.DeploymentReady)
	case "StatefulSet":
		return judge(w, st.statefuls, k, kube.StatefulSetIsReady)
	case "DaemonSet":
		return judge(w, st.daemons, k, kube.DaemonSetIsReady)
	}
	return judge(w, st.resources, w.String(), kube.OperatorResourceAvailable)
}

// judge says whether the workload the look found under k is ready, and why; one the look
// did not find is missing.
func judge[T any](w kube.Workload, found map[string]T, k string, ready func(T) (bool, string)) (bool, string) {
	o, ok := found[k]
	if !ok {
		return false, w.String() + " is missing"
	}
	r, detail := ready(o)
	return r, w.String() + ": " + detail
}
