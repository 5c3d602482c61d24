package handlers

import (
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/preflight"
	"runr.dev/console/views"
)

// checkReport is a cluster's connection checklist.
func checkReport(r *preflight.Result) *views.CheckReport {
	return &views.CheckReport{Items: CheckItems(r.Items)}
}

// CheckItems are the lines of a checklist with their verdicts.
func CheckItems(items []kit.CheckItem) []views.CheckItem {
	out := make([]views.CheckItem, len(items))
	for i, it := range items {
		out[i] = views.CheckItem{Key: it.Key, Title: it.Title, Status: string(it.Status), Evidence: it.Evidence, Details: it.Details}
	}
	return out
}

// workerOptions are the nodes the wizard offers as dedicated workers.
func workerOptions(nodes []kit.NodeInfo) []views.WorkerOption {
	out := make([]views.WorkerOption, len(nodes))
	for i, n := range nodes {
		out[i] = views.WorkerOption{Name: n.Name, Roles: n.Roles, CPU: n.CPU, Memory: n.Memory}
	}
	return out
}

// storageClassOptions are the StorageClasses the wizard offers for the registry's volume.
func storageClassOptions(classes []preflight.StorageClassInfo) []views.StorageClassOption {
	out := make([]views.StorageClassOption, len(classes))
	for i, sc := range classes {
		out[i] = views.StorageClassOption{Name: sc.Name, Default: sc.Default}
	}
	return out
}
