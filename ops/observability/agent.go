package observability

import (
	"context"
	"errors"
	"strings"

	"runr.dev/console/crypt"
	"runr.dev/console/engine"
	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/store"
)

// The runr-agent's names on the cluster.
const (
	AgentName   = "runr-agent"
	AgentSecret = "runr-agent-token"
)

// AgentWSURL is where a region's agent connects, in the spec's order: the region's
// agent_ws_url; the in-cluster gateway when the region is the console's own cluster;
// RUNR_AGENT_WS_URL; the console URL with https becoming wss.
func (s *Service) AgentWSURL(r *store.Region, ownCluster bool) string {
	base := ""
	switch {
	case r.Settings.V.AgentWSURL != "":
		base = r.Settings.V.AgentWSURL
	case ownCluster && s.Cfg.GatewayURL != "":
		base = s.Cfg.GatewayURL
	case s.Cfg.AgentWSURL != "":
		base = s.Cfg.AgentWSURL
	default:
		base = s.Cfg.AppURL
	}
	base = strings.TrimRight(base, "/")
	switch {
	case strings.HasPrefix(base, "https://"):
		base = "wss://" + strings.TrimPrefix(base, "https://")
	case strings.HasPrefix(base, "http://"):
		base = "ws://" + strings.TrimPrefix(base, "http://")
	}
	if base == "" {
		return ""
	}
	if !strings.Contains(strings.TrimPrefix(strings.TrimPrefix(base, "wss://"), "ws://"), "/") {
		base += AgentPath
	}
	return base
}

// OwnCluster reports whether c is the cluster the console runs in (the same kube-system
// namespace UID). A cluster whose identity cannot be read counts as another one.
func (s *Service) OwnCluster(ctx context.Context, c *kube.Cluster) bool {
	if s.Cfg.OwnClusterUID == "" {
		return false
	}
	uid, err := kube.ClusterUID(ctx, c.Clientset)
	if err != nil {
		s.Log.Debug("cluster identity", "err", err)
		return false
	}
	return uid == s.Cfg.OwnClusterUID
}

// AgentAddress is where the agent of a region on cluster c connects (AgentWSURL, with the
// in-cluster gateway on the console's own cluster).
func (s *Service) AgentAddress(ctx context.Context, c *kube.Cluster, r *store.Region) string {
	return s.AgentWSURL(r, s.OwnCluster(ctx, c))
}

// clusterAgentToken returns the token of the cluster's one runr-agent and gives it to the
// region: the token the cluster's other regions share when they have one (the running
// agent keeps it), else the region's own, unless the region still shares it with the
// regions of another cluster (it moved), which gets it a new one.
func (s *Service) clusterAgentToken(ctx context.Context, r *store.Region) (string, error) {
	token, err := s.Store.ClusterAgentToken(ctx, r.ClusterKey)
	if err != nil {
		return "", err
	}
	if token == "" || token == r.AgentToken {
		token = r.AgentToken
		if sharing, err := s.Store.RegionsByAgentToken(ctx, token); err == nil {
			for _, o := range sharing {
				if o.ClusterKey != r.ClusterKey {
					token = ""
					break
				}
			}
		}
	}
	if token == "" {
		token = crypt.RandomToken("runr_agent_")
	}
	if token != r.AgentToken {
		if err := s.Store.SetAgentToken(ctx, r.ID, token); err != nil {
			return "", err
		}
	}
	return token, nil
}

// AdoptClusterAgentToken gives a new region the token of its cluster's agent, when the
// cluster has one already: the agent that runs there reports for the new region too.
func (s *Service) AdoptClusterAgentToken(ctx context.Context, r *store.Region) error {
	token, err := s.Store.ClusterAgentToken(ctx, r.ClusterKey)
	if err != nil || token == "" {
		return err
	}
	r.AgentToken, r.AgentTokenHash = token, crypt.HashToken(token)
	return nil
}

// ErrNoAgentAddress refuses to install an agent that could never reach the console (it
// would exit at once and the region read degraded for ever).
var ErrNoAgentAddress = errors.New("the runr-agent has no address to reach the console: set the region's agent address (agent_ws_url, in its settings), RUNR_AGENT_WS_URL or RUNR_APP_URL (the console's public URL), then retry")

// AgentPath is the agent's WebSocket endpoint on the console.
const AgentPath = "/api/internal/agent/ws"

// InstallAgent deploys the runr-agent: its token Secret, RBAC and Deployment. The
// Deployment runs this project's binary (`runr agent`).
func (s *Service) InstallAgent(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, r *store.Region) error {
	if _, err := kit.EnsureNamespace(ctx, jc, c, ObservabilityNamespace, nil); err != nil {
		return err
	}
	url := s.AgentAddress(ctx, c, r)
	if url == "" {
		return ErrNoAgentAddress
	}
	token, err := s.clusterAgentToken(ctx, r)
	if err != nil {
		return err
	}
	image, err := s.RegionImage(ctx, r, s.Cfg.AgentImage)
	if err != nil {
		return err
	}
	labels := map[string]any{"app.kubernetes.io/name": AgentName, "app.kubernetes.io/managed-by": "runr"}
	objs := []map[string]any{
		{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": AgentName, "namespace": ObservabilityNamespace, "labels": labels}},
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": map[string]any{"name": AgentName, "labels": labels},
			"rules": []any{
				map[string]any{"apiGroups": []any{""}, "resources": []any{"nodes", "pods", "events", "namespaces"}, "verbs": []any{"get", "list", "watch"}},
				map[string]any{"apiGroups": []any{"events.k8s.io"}, "resources": []any{"events"}, "verbs": []any{"get", "list", "watch"}},
				map[string]any{"apiGroups": []any{"metrics.k8s.io"}, "resources": []any{"pods", "nodes"}, "verbs": []any{"get", "list"}},
			}},
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": map[string]any{"name": AgentName, "labels": labels},
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": AgentName},
			"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": AgentName, "namespace": ObservabilityNamespace}}},
		{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": AgentSecret, "namespace": ObservabilityNamespace, "labels": labels},
			"stringData": map[string]any{"token": token}},
		{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": AgentName, "namespace": ObservabilityNamespace, "labels": labels},
			"spec": map[string]any{
				"replicas": 1,
				"selector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": AgentName}},
				"template": map[string]any{"metadata": map[string]any{"labels": labels}, "spec": map[string]any{
					"serviceAccountName": AgentName,
					"securityContext":    kit.UnprivilegedPod(),
					"containers": []any{map[string]any{
						"name": "agent", "image": image, "args": []any{"agent"}, "securityContext": kit.UnprivilegedContainer(),
						"env": []any{
							map[string]any{"name": "RUNR_AGENT_URL", "value": url},
							map[string]any{"name": "RUNR_AGENT_TOKEN", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": AgentSecret, "key": "token"}}},
						},
						"resources": map[string]any{"requests": map[string]any{"cpu": "20m", "memory": "48Mi"}, "limits": map[string]any{"memory": "256Mi"}},
					}},
				}},
			}},
	}
	for _, o := range objs {
		if _, err := c.ApplyObject(ctx, o); err != nil {
			return err
		}
	}
	if err := jc.Wait(ctx, "Deployment "+ObservabilityNamespace+"/"+AgentName+" to be available", engine.WaitOpts{}, c.DeploymentAvailable(ObservabilityNamespace, AgentName)); err != nil {
		return err
	}
	jc.Note("runr-agent runs and connects to %s", url)
	return nil
}
