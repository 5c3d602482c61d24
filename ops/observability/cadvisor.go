package observability

import (
	"context"

	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
)

// cAdvisor on the cluster: the containers' usage on every node, scraped by the region's
// Prometheus (regions.md: "cAdvisor in observability with the host's PID namespace and
// host paths").
const (
	CAdvisorName = "cadvisor"
	// CAdvisorRole names the ClusterRole and ClusterRoleBinding (the spec's removal list).
	CAdvisorRole = "cadvisor-runr"
	// CAdvisorImage is cAdvisor from gcr.io, as the spec says the nodes pull it.
	CAdvisorImage = "gcr.io/cadvisor/cadvisor:v0.52.1"
	cadvisorPort  = 8080
)

// cadvisorObjects are cAdvisor's objects, running image: its identity, the DaemonSet, and
// the PodMonitor by which the Prometheus of release PrometheusRelease scrapes it (that
// Prometheus selects PodMonitors labelled release=<its release>).
func cadvisorObjects(image string) []map[string]any {
	labels := kit.ToAnyMap(kit.ManagedLabels(map[string]string{"app.kubernetes.io/name": CAdvisorName}))
	selector := map[string]any{"app.kubernetes.io/name": CAdvisorName}
	meta := func(name string, extra map[string]any) map[string]any {
		m := map[string]any{"name": name, "labels": labels}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	hostPath := func(name, path string) map[string]any {
		return map[string]any{"name": name, "hostPath": map[string]any{"path": path}}
	}
	mount := func(name, path string) map[string]any {
		return map[string]any{"name": name, "mountPath": path, "readOnly": true}
	}
	return []map[string]any{
		{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(CAdvisorName, map[string]any{"namespace": ObservabilityNamespace})},
		// cAdvisor reads no API: the role (upstream's granted only the PodSecurityPolicy that
		// Kubernetes removed) is the identity the spec names, with no rights.
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": meta(CAdvisorRole, nil), "rules": []any{}},
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": meta(CAdvisorRole, nil),
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": CAdvisorRole},
			"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": CAdvisorName, "namespace": ObservabilityNamespace}}},
		{"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta(CAdvisorName, map[string]any{"namespace": ObservabilityNamespace}),
			"spec": map[string]any{
				"selector": map[string]any{"matchLabels": selector},
				"template": map[string]any{
					"metadata": map[string]any{"labels": labels},
					"spec": map[string]any{
						"serviceAccountName": CAdvisorName, "priorityClassName": PriorityClassName,
						"hostPID": true, "automountServiceAccountToken": false,
						// Also on the nodes dedicated to projects, where the functions run.
						"tolerations": []any{map[string]any{"key": "runr.dev/dedicated", "operator": "Exists"}},
						"containers": []any{map[string]any{
							"name": CAdvisorName, "image": image,
							"args": []any{"--housekeeping_interval=15s", "--docker_only=false", "--store_container_labels=false",
								"--whitelisted_container_labels=io.kubernetes.container.name,io.kubernetes.pod.name,io.kubernetes.pod.namespace",
								"--disable_metrics=percpu,sched,tcp,udp,process,hugetlb,referenced_memory,cpu_topology,resctrl"},
							"ports":           []any{map[string]any{"name": "http-metrics", "containerPort": cadvisorPort}},
							"securityContext": map[string]any{"privileged": true},
							"resources":       map[string]any{"requests": map[string]any{"cpu": "50m", "memory": "128Mi"}, "limits": map[string]any{"memory": "512Mi"}},
							"volumeMounts": []any{mount("rootfs", "/rootfs"), mount("var-run", "/var/run"), mount("sys", "/sys"),
								mount("containerd", "/var/lib/containerd"), mount("dev-disk", "/dev/disk")},
						}},
						"volumes": []any{hostPath("rootfs", "/"), hostPath("var-run", "/var/run"), hostPath("sys", "/sys"),
							hostPath("containerd", "/var/lib/containerd"), hostPath("dev-disk", "/dev/disk")},
					},
				},
			}},
		{"apiVersion": "monitoring.coreos.com/v1", "kind": "PodMonitor",
			"metadata": meta(CAdvisorName, map[string]any{"namespace": ObservabilityNamespace,
				"labels": kit.ToAnyMap(kit.ManagedLabels(map[string]string{"app.kubernetes.io/name": CAdvisorName, "release": PrometheusRelease}))}),
			"spec": map[string]any{
				"selector":            map[string]any{"matchLabels": selector},
				"podMetricsEndpoints": []any{map[string]any{"port": "http-metrics", "interval": "30s"}},
			}},
	}
}

// installCAdvisor applies cAdvisor (after Prometheus: its PodMonitor needs the operator's
// CRDs), its image through the region's image mirror, and waits for it on every node it
// runs on.
func (s *Service) installCAdvisor(ctx context.Context, jc *engine.JobContext, c *kube.Cluster) error {
	image, err := s.JobImage(ctx, jc, CAdvisorImage)
	if err != nil {
		return err
	}
	for _, o := range cadvisorObjects(image) {
		if _, err := c.ApplyObject(ctx, o); err != nil {
			return err
		}
	}
	if err := jc.Wait(ctx, "DaemonSet "+ObservabilityNamespace+"/"+CAdvisorName+" to run on every node", engine.WaitOpts{},
		c.DaemonSetReady(ObservabilityNamespace, CAdvisorName)); err != nil {
		return err
	}
	jc.Logf("cAdvisor (%s) runs on every node, scraped by Prometheus through PodMonitor %s/%s", image, ObservabilityNamespace, CAdvisorName)
	return nil
}
