package workloads

import (
	"sort"
	"time"

	"runr.dev/console/handlers"
	"runr.dev/console/ops/nodes"
	"runr.dev/console/views"
)

// nodesReport is the cluster's nodes as the Workers tab shows them.
func nodesReport(r *nodes.Report) *views.NodesReport {
	out := &views.NodesReport{ControlPlanes: r.ControlPlanes, UpgradeWhy: r.Upgrades.Why, Upgradable: r.Upgrades.Upgradable}
	for _, p := range r.Upgrades.Progress {
		for _, n := range p.Nodes {
			out.UpgradeNodes = append(out.UpgradeNodes, views.UpgradeNode{Node: n.Node, Stage: n.Stage, Detail: n.Detail, Version: p.Version})
		}
	}
	for _, v := range r.Upgrades.Versions {
		out.Versions = append(out.Versions, views.VersionNodes{Version: v.Version, Nodes: v.Nodes})
	}
	for _, w := range r.Warnings {
		out.Warnings = append(out.Warnings, views.ShapeWarning{Key: w.Key, Message: w.Message})
	}
	for _, n := range r.Nodes {
		out.Nodes = append(out.Nodes, views.NodeView{Name: n.Name, Roles: n.Roles, Status: string(n.Status), Dedicated: n.Dedicated, Cordoned: n.Cordoned,
			HeartbeatSeen: n.LastHeartbeat != nil, HeartbeatAge: time.Duration(n.HeartbeatAgeSeconds) * time.Second,
			KubeletVersion: n.KubeletVersion, OSImage: n.OSImage, ContainerRuntime: n.ContainerRuntime,
			CPURequestedM: n.CPURequestedM, CPUAllocatableM: n.CPUAllocatableM, MemoryRequestedMi: n.MemoryRequestedMi, MemoryAllocatableMi: n.MemoryAllocatableMi,
			Pods: n.Pods, Taints: n.Taints, Labels: sortedLabels(n.Labels), Preflight: handlers.CheckItems(n.Preflight),
			DeleteRefused: n.Delete.Refused, DeleteWarning: n.Delete.Warning})
	}
	return out
}

// sortedLabels are a node's labels as "key=value" ("key" for an empty value), sorted.
func sortedLabels(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		if v == "" {
			out = append(out, k)
		} else {
			out = append(out, k+"="+v)
		}
	}
	sort.Strings(out)
	return out
}

// capacityOf is the region capacity and its budgets as the Workers tab shows them.
func capacityOf(c *nodes.CapacityReport) *views.Capacity {
	out := &views.Capacity{Dedicated: c.Dedicated, Total: resources(c.Total), Allocatable: resources(c.Allocatable), Platform: resources(c.Platform),
		CPUOvercommit: c.CPUOvercommit, MemoryOvercommit: c.MemoryOvercommit, AlwaysOn: budget(c.AlwaysOn), FaaS: budget(c.FaaS)}
	for _, n := range c.Nodes {
		out.Nodes = append(out.Nodes, views.CapacityNode{Name: n.Name, Counted: n.Counted, Reason: n.Reason,
			Allocatable: resources(n.Allocatable), Platform: resources(n.Platform)})
	}
	return out
}

func resources(r nodes.Resources) views.Resources {
	return views.Resources{CPUm: r.CPUm, MemoryMi: r.MemoryMi}
}

func budget(b nodes.Budget) views.Budget {
	return views.Budget{Name: b.Name, CPU: budgetLine(b.CPU), Memory: budgetLine(b.Memory), Projects: b.Projects}
}

func budgetLine(l nodes.BudgetLine) views.BudgetLine {
	return views.BudgetLine{Gross: l.Gross, Reserved: l.Reserved, Budget: l.Budget, Used: l.Used, Free: l.Free}
}
