package nodes

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"runr.dev/console/kube"
)

// Upgrades is the cluster's Kubernetes version as its nodes run it, whether the console
// upgrades it (k3s and rke2, through Rancher's system-upgrade-controller) and, when not,
// why and how it is done instead.
type Upgrades struct {
	// Versions are the kubelet versions with their nodes, newest first.
	Versions []VersionNodes `json:"versions"`
	// Distribution is k3s, rke2, eks, gke, aks or kubernetes (kubeadm and the others).
	Distribution string `json:"distribution"`
	// Upgradable says whether the console upgrades this distribution node by node.
	Upgradable bool   `json:"upgradable"`
	Why        string `json:"why"`
	// Progress is the upgrade under way or last run, per Plan (none when no Plan exists).
	Progress []Progress `json:"progress,omitempty"`
}

// VersionNodes is one kubelet version and the nodes that run it.
type VersionNodes struct {
	Version string   `json:"version"`
	Nodes   []string `json:"nodes"`
}

// Mixed says whether the nodes run more than one kubelet version.
func (u Upgrades) Mixed() bool { return len(u.Versions) > 1 }

// upgradeWhy is why the console does not upgrade a distribution, and how it is done.
var upgradeWhy = map[string]string{
	"k3s":        "The console upgrades k3s node by node through Rancher's system-upgrade-controller: the control-plane nodes first, then the others, each cordoned, drained, upgraded and uncordoned before the next.",
	"rke2":       "The console upgrades rke2 node by node through Rancher's system-upgrade-controller: the control-plane nodes first, then the others, each cordoned, drained, upgraded and uncordoned before the next.",
	"eks":        "Amazon EKS manages this cluster's Kubernetes version: upgrade the control plane, then the node groups, in AWS; EKS drains the nodes one by one.",
	"gke":        "Google Kubernetes Engine manages this cluster's Kubernetes version: upgrade it in Google Cloud; GKE drains the nodes one by one.",
	"aks":        "Azure Kubernetes Service manages this cluster's Kubernetes version: upgrade it in Azure; AKS drains the nodes one by one.",
	"kubernetes": "The console upgrades k3s and rke2 clusters only: kubeadm's upgrade runs on each node's host, which the console does not reach. With kubeadm, take one node at a time: drain it (Drain above), run kubeadm upgrade (apply on the first control-plane node, node on the others), upgrade its kubelet and restart it, then uncordon it.",
}

// upgradeProgress reads the Plans of the console's upgrades on the cluster (none when the
// controller never ran there).
func upgradeProgress(ctx context.Context, c *kube.Cluster) ([]Progress, error) {
	var out []Progress
	for _, plan := range []string{PlanControlPlane, PlanWorkers} {
		p, err := PlanProgress(ctx, c, plan)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, *p)
	}
	return out, nil
}

// clusterUpgrades reads the nodes' kubelet versions and the distribution they show.
func clusterUpgrades(nodes []corev1.Node) Upgrades {
	u := Upgrades{Distribution: "kubernetes"}
	byVersion := map[string][]string{}
	for i := range nodes {
		v := nodes[i].Status.NodeInfo.KubeletVersion
		byVersion[v] = append(byVersion[v], nodes[i].Name)
		switch {
		case strings.Contains(v, "+k3s"):
			u.Distribution = "k3s"
		case strings.Contains(v, "+rke2"):
			u.Distribution = "rke2"
		case strings.Contains(v, "-eks-"):
			u.Distribution = "eks"
		case strings.Contains(v, "-gke."):
			u.Distribution = "gke"
		case nodes[i].Labels["kubernetes.azure.com/cluster"] != "":
			u.Distribution = "aks"
		}
	}
	for v, ns := range byVersion {
		slices.Sort(ns)
		u.Versions = append(u.Versions, VersionNodes{Version: v, Nodes: ns})
	}
	slices.SortFunc(u.Versions, func(a, b VersionNodes) int { return strings.Compare(b.Version, a.Version) })
	u.Why, u.Upgradable = upgradeWhy[u.Distribution], upgradeImages[u.Distribution] != ""
	if u.Mixed() {
		u.Why = fmt.Sprintf("The nodes run %d kubelet versions: an upgrade is under way or was left half done. %s", len(u.Versions), u.Why)
	}
	return u
}
