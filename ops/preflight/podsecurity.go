package preflight

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
)

// PrivilegedNamespaces are the namespaces where the console runs privileged pods or pods
// with host paths or the host's PID namespace (the spec's "Privileged pods": the
// registry's node mirror and pre-pull, the sandbox and WebAssembly installers, cAdvisor
// and the log collector in observability; and GPU support's operator and device plugin).
var PrivilegedNamespaces = []string{"runr-registry", "runr-sandbox", "observability", "runr-gpu"}

// podSecurityEnforce is the namespace label with which Pod Security admission enforces a level.
const podSecurityEnforce = "pod-security.kubernetes.io/enforce"

// checkPodSecurity warns when Pod Security admission would refuse the console's privileged
// pods: a namespace of PrivilegedNamespaces that exists and enforces baseline or
// restricted, or an API server that reads an admission configuration of its own (its
// cluster-wide default level is not visible through the API; seen where the API server
// runs as a pod in kube-system).
func (s *Service) checkPodSecurity(ctx context.Context, c *kube.Cluster, res *Result) {
	nss, err := c.Clientset.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		res.add("pod-security", "Pod Security", kit.CheckWarn, "namespaces could not be read: "+kube.Evidence(err))
		return
	}
	levels := map[string]string{}
	for _, ns := range nss.Items {
		levels[ns.Name] = ns.Labels[podSecurityEnforce]
	}
	var refusing []string
	for _, name := range PrivilegedNamespaces {
		if l := levels[name]; l == "baseline" || l == "restricted" {
			refusing = append(refusing, fmt.Sprintf("namespace %s enforces %s: label it %s=privileged", name, l, podSecurityEnforce))
		}
	}
	config := admissionConfigFile(ctx, c)
	exempt := strings.Join(PrivilegedNamespaces, ", ")
	switch {
	case len(refusing) > 0:
		res.add("pod-security", "Pod Security", kit.CheckWarn, "Pod Security would refuse RunR's privileged pods (node mirror, sandbox installers, cAdvisor)", refusing...)
	case config != "":
		res.add("pod-security", "Pod Security", kit.CheckWarn, fmt.Sprintf("the API server reads an admission configuration (%s) that RunR cannot see: if it enforces baseline or restricted by default, exempt the namespaces %s", config, exempt))
	default:
		res.add("pod-security", "Pod Security", kit.CheckPass, "no namespace RunR runs privileged pods in ("+exempt+") enforces baseline or restricted")
	}
}

// admissionConfigFile is the --admission-control-config-file of an API server that runs
// as a pod in kube-system ("" when there is none, or it cannot be seen).
func admissionConfigFile(ctx context.Context, c *kube.Cluster) string {
	pods, err := c.Clientset.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "component=kube-apiserver"})
	if err != nil {
		return ""
	}
	for _, p := range pods.Items {
		for _, ct := range p.Spec.Containers {
			for _, arg := range append(append([]string{}, ct.Command...), ct.Args...) {
				if v, ok := strings.CutPrefix(arg, "--admission-control-config-file="); ok {
					return v
				}
			}
		}
	}
	return ""
}
