package lifecycle

import (
	"runr.dev/console/handlers"
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/preflight"
	"runr.dev/console/views"
)

// checkReport is a cluster's connection checklist.
func checkReport(r *preflight.Result) *views.CheckReport {
	return &views.CheckReport{Items: handlers.CheckItems(r.Items)}
}

// workerOptions are the nodes the wizard offers as dedicated workers.
func workerOptions(nodes []kit.NodeInfo) []views.WorkerOption {
	out := make([]views.WorkerOption, len(nodes))
	for i, n := range nodes {
		out[i] = views.WorkerOption{Name: n.Name, Roles: n.Roles, CPU: n.CPU, Memory: n.Memory, BelowFloor: n.BelowFloor}
	}
	return out
}

// storageClassOptions are the StorageClasses the wizard offers for the registry's volume.
func storageClassOptions(classes []preflight.StorageClassInfo) []views.StorageClassOption {
	out := make([]views.StorageClassOption, len(classes))
	for i, sc := range classes {
		out[i] = views.StorageClassOption{Name: sc.Name, Default: sc.Default, Provisioning: string(sc.Provisioning), Evidence: sc.Evidence}
	}
	return out
}
