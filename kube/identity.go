package kube

import (
	"context"
	"errors"
	"fmt"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// IdentityNamespace is the namespace whose UID names a cluster: every cluster has it,
// and it is never deleted and re-created.
const IdentityNamespace = "kube-system"

// serviceAccountToken is where a pod's service account token is mounted.
const serviceAccountToken = "/var/run/secrets/kubernetes.io/serviceaccount/token"

// ClusterUID is the cluster's identity: the UID of its kube-system namespace.
func ClusterUID(ctx context.Context, cs kubernetes.Interface) (string, error) {
	ns, err := cs.CoreV1().Namespaces().Get(ctx, IdentityNamespace, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("read namespace %s (the cluster's identity): %w", IdentityNamespace, err)
	}
	return string(ns.UID), nil
}

// InClusterUID is the identity of the cluster this process runs in, through its pod's
// service account ("" and no error outside a cluster or without a mounted token).
func InClusterUID(ctx context.Context) (string, error) {
	if _, err := os.Stat(serviceAccountToken); err != nil {
		return "", nil
	}
	cfg, err := rest.InClusterConfig()
	if errors.Is(err, rest.ErrNotInCluster) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("in-cluster configuration: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", fmt.Errorf("in-cluster client: %w", err)
	}
	return ClusterUID(ctx, cs)
}
