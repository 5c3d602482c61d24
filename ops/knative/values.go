package knative

import (
	"fmt"

	"runr.dev/console/ops/kit"
)

// TraefikOptions are what the region Traefik's values depend on.
type TraefikOptions struct {
	// Namespace is the release's (Knative's cluster-local addresses lead to a Service there).
	Namespace  string
	Image      string
	Class      string
	Timeout    int
	TrustedIPs []string
	// HostNetwork runs Traefik as a DaemonSet on the nodes' ports 80 and 443 behind a
	// ClusterIP Service, for clusters without a load-balancer implementation.
	HostNetwork bool
}

// TraefikValues are the region Traefik's Helm values (chart traefik/traefik 40.3.0,
// whose values schema refuses unknown keys).
func TraefikValues(o TraefikOptions) map[string]any {
	reg, repo, tag := SplitImage(o.Image)
	// A Traefik that stops (a roll: a changed timeout, image or trusted address) keeps
	// accepting requests while the Service stops sending it new ones, then lets the requests
	// under way run to their timeout: without it a roll closes new connections at once and
	// cuts a long request after Traefik's default grace of 10 s (seen on the real node).
	rt := map[string]any{
		"respondingTimeouts": map[string]any{"readTimeout": fmt.Sprintf("%ds", o.Timeout), "writeTimeout": fmt.Sprintf("%ds", o.Timeout)},
		"lifeCycle":          map[string]any{"requestAcceptGraceTimeout": fmt.Sprintf("%ds", traefikAcceptGrace), "graceTimeOut": fmt.Sprintf("%ds", o.Timeout)},
	}
	web := map[string]any{"transport": rt}
	websecure := map[string]any{"transport": rt}
	if len(o.TrustedIPs) > 0 {
		// A load balancer in front of Traefik that sends PROXY protocol or X-Forwarded-For.
		ips := make([]any, len(o.TrustedIPs))
		for i, ip := range o.TrustedIPs {
			ips[i] = ip
		}
		for _, p := range []map[string]any{web, websecure} {
			p["forwardedHeaders"] = map[string]any{"trustedIPs": ips}
			p["proxyProtocol"] = map[string]any{"trustedIPs": ips}
		}
	}
	// Knative's cluster-local addresses (<service>.<namespace>.svc.cluster.local, how one
	// function calls another) lead to the internal Service's port 80 and the entry point
	// "local", which no LoadBalancer exposes: without a private Service in the Knative
	// provider's settings, Knative makes no Service for those names and they do not
	// resolve (seen on the real node, the demo frontend calling its backend).
	local := map[string]any{"port": traefikLocalPort, "exposedPort": 80, "protocol": "TCP",
		"expose": map[string]any{"default": false, traefikInternalService: true}, "transport": rt}
	ports := map[string]any{"web": web, "websecure": websecure, "local": local}
	internal := map[string]any{traefikInternalService: map[string]any{"spec": map[string]any{"type": "ClusterIP"}}}
	deployment := map[string]any{"terminationGracePeriodSeconds": traefikAcceptGrace + o.Timeout + 5}
	vals := map[string]any{
		"deployment":   deployment,
		"image":        map[string]any{"registry": reg, "repository": repo, "tag": tag},
		"ports":        ports,
		"ingressClass": map[string]any{"enabled": true, "name": o.Class, "isDefaultClass": false},
		"providers": map[string]any{
			"kubernetesIngress": map[string]any{"ingressClass": o.Class},
			"kubernetesCRD":     map[string]any{"enabled": true, "allowCrossNamespace": true},
			// The chart's own switch: only with it does its ClusterRole let Traefik read
			// Knative's ingresses and update their status.
			"knative": map[string]any{"enabled": true},
		},
		"experimental": map[string]any{"knative": true},
		"additionalArguments": []any{
			"--providers.knative.publicEntrypoints=web,websecure",
			"--providers.knative.privateEntrypoints=local",
			"--providers.knative.privateService.name=" + TraefikInternalService,
			"--providers.knative.privateService.namespace=" + o.Namespace,
		},
	}
	if !o.HostNetwork {
		// The chart's Service type lives under service.spec (a service.type is ignored).
		vals["service"] = map[string]any{"spec": map[string]any{"type": "LoadBalancer"}, "additionalServices": internal}
		return vals
	}
	// Traefik listens on the nodes' ports 80 and 443 itself; its other ports move off the
	// ones node-exporter (9100) and common node agents (8080) take on the host.
	web["port"], websecure["port"] = 80, 443
	ports["traefik"] = map[string]any{"port": 9080}
	ports["metrics"] = map[string]any{"port": 9101}
	deployment["kind"] = "DaemonSet"
	vals["hostNetwork"] = true
	vals["service"] = map[string]any{"spec": map[string]any{"type": "ClusterIP"}, "additionalServices": internal}
	// Binding ports below 1024 needs NET_BIND_SERVICE in effect: as root, with every other
	// capability dropped.
	vals["securityContext"] = map[string]any{"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
		"capabilities": map[string]any{"drop": []any{"ALL"}, "add": []any{"NET_BIND_SERVICE"}}}
	vals["podSecurityContext"] = map[string]any{"runAsUser": 0, "runAsGroup": 0, "runAsNonRoot": false,
		"seccompProfile": map[string]any{"type": "RuntimeDefault"}}
	// Two pods of one node cannot both bind its ports: replace them one node at a time.
	vals["updateStrategy"] = map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxUnavailable": 1, "maxSurge": 0}}
	return vals
}

// OperatorValues are the Knative Operator chart's values (its defaults).
func OperatorValues() map[string]any { return map[string]any{} }

// TraefikInternalService is the Service of Traefik's entry point for Knative's
// cluster-local addresses (the chart's <release>-<name> of service.additionalServices).
const TraefikInternalService = kit.TraefikRelease + "-" + traefikInternalService

// traefikInternalService names the internal Service in the chart's values; traefikLocalPort
// is the port its entry point listens on (off the ports node agents take, for host network).
const (
	traefikInternalService = "internal"
	traefikLocalPort       = 9082
)

// traefikAcceptGrace is how long a stopping Traefik keeps accepting requests (seconds).
const traefikAcceptGrace = 10
