package handlers

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"runr.dev/console/agent"
	"runr.dev/console/ops/isolation"
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/knative"
	"runr.dev/console/ops/observability"
	"runr.dev/console/store"
	"runr.dev/console/views"
)

// regionStatuses are the statuses a region can be given, in the order the form offers them.
var regionStatuses = []store.RegionStatus{store.RegionActive, store.RegionInactive, store.RegionMaintenance}

// servingComponents are the components the Serving tab lists with their statuses.
var servingComponents = []string{"traefik", "prometheus", "loki", "agent", "tracing"}

// RegionView is a region as its pages show it.
func RegionView(r *store.Region) views.RegionView {
	v := views.RegionView{
		ID: r.ID, Name: r.Name, SecretError: r.SecretError, ClusterServer: r.ClusterServer, K8sVersion: r.K8sVersion,
		Status: string(r.Status), Active: r.Status == store.RegionActive, StatusOptions: OptionsOf(regionStatuses, r.Status),
		HealthAPI: healthLayer(r.Health.V.API), HealthComponents: healthLayer(r.Health.V.Components), HealthExternal: healthLayer(r.Health.V.External),
		AgentStatus: string(r.Component("agent").Status), AgentLastSeenAt: r.AgentLastSeenAt,
		RequestTimeout: r.Settings.V.RequestTimeout, AgentWSURL: r.Settings.V.AgentWSURL, TrustedIPs: strings.Join(r.Settings.V.IngressTrustedIPs, ", "),
		ImageMirror:   r.Settings.V.ImageMirror,
		PrometheusURL: r.Monitoring.V.PrometheusURL, LokiURL: r.Monitoring.V.LokiURL, LokiOrgID: r.Monitoring.V.LokiOrgID,
		MonitoringStorage: monitoringStorageFields(r.Monitoring.V),
		DNSResolved:       r.DNSResolved, ExternalIP: r.ExternalIP, FunctionTLSExpiresAt: r.FunctionTLSExpiresAt, ProjectCount: r.ProjectCount,
		DedicatedWorkers: r.Nodes, DataLocation: r.DataLocation, FaaSCPUOvercommit: r.FaaSCPUOvercommit, FaaSMemoryOvercommit: r.FaaSMemoryOvercommit,

		RegistryMode: string(r.RegistryMode), RegistryStatus: string(r.RegistryStatus), RegistryAddress: r.RegistryAddress, RegistryMessage: r.RegistryMessage,
		HasRegistry: r.RegistryMode != store.RegistryNone, RegistryInternal: r.RegistryMode == store.RegistryInternal,
		RegistryExternal: r.RegistryMode == store.RegistryExternal, RegistryReady: r.RegistryStatus == store.ComponentReady,

		OperatorStatus: string(r.OperatorStatus), OperatorNamespace: r.OperatorNamespace, OperatorVersion: r.OperatorVersion,
		OperatorAdopted: r.OperatorAdopted, OperatorReady: r.OperatorStatus == store.ComponentReady,

		ServingStatus: string(r.ServingStatus), ServingNamespace: r.ServingNamespace, KnativeVersion: r.KnativeVersion, KnativeMessage: r.KnativeMessage,
		ServingReady: r.ServingStatus == store.ComponentReady, ServingNotInstalled: r.ServingStatus == store.ComponentNotInstalled,
		ServingInstallable: r.ServingStatus == store.ComponentNotInstalled || r.ServingStatus == store.ComponentError,

		RedisMode: string(r.RedisMode), RedisStatus: string(r.RedisStatus), RedisAddress: r.RedisAddress, RedisMessage: r.RedisMessage,
		HasRedis: r.RedisMode != store.RedisNone, RedisGiven: r.RedisMode.Given(),
	}
	if v.AgentStatus == "" {
		v.AgentStatus = string(store.ComponentNotInstalled)
	}
	for _, name := range servingComponents {
		v.Components = append(v.Components, views.ComponentBadge{Name: name, Status: string(r.Component(name).Status)})
	}
	var sandboxes []string
	for _, name := range isolation.SandboxRuntimes {
		if rt := r.Isolation.V.Runtime(name); rt.Ready() {
			sandboxes = append(sandboxes, RuntimeTitles[name]+" ("+strings.Join(rt.Classes, ", ")+")")
		}
	}
	v.SandboxSummary = strings.Join(sandboxes, ", ")
	return v
}

// healthLayer is one layer of a status check; a layer never checked is unknown.
func healthLayer(l store.HealthLayer) views.HealthLayer {
	state := l.State
	if state == "" {
		state = store.HealthUnknown
	}
	return views.HealthLayer{State: string(state), Reason: l.Reason, CheckedAt: l.CheckedAt}
}

// regionRow is a region as a line of the regions list.
func regionRow(r *store.Region) views.RegionRow {
	glance := r.Health.V.Glance()
	return views.RegionRow{ID: r.ID, Name: r.Name, MigrationStatus: string(r.MigrationStatus),
		Moving: r.MigrationStatus.Unsettled(),
		Status: string(r.Status), ServingStatus: string(r.ServingStatus), RegistryStatus: string(r.RegistryStatus), RedisStatus: string(r.RedisStatus),
		ExternalIP: r.ExternalIP, DNSResolved: r.DNSResolved, ProjectCount: r.ProjectCount, GPUs: GPUText(r.GPU.V),
		Health: string(glance.State), HealthReason: glance.Reason}
}

// GPUText says a region's GPUs: "3 GPUs: 2× NVIDIA-A100, 1× Tesla-T4" ("" for none).
func GPUText(g store.RegionGPU) string {
	if g.Total == 0 {
		return ""
	}
	models := make([]string, 0, len(g.Models))
	for m, n := range g.Models {
		models = append(models, strconv.Itoa(n)+"× "+m)
	}
	sort.Strings(models)
	return strconv.Itoa(g.Total) + " GPUs: " + strings.Join(models, ", ")
}

// regionRows are the lines of the regions list.
func regionRows(rs []store.Region) []views.RegionRow {
	out := make([]views.RegionRow, len(rs))
	for i := range rs {
		out[i] = regionRow(&rs[i])
	}
	return out
}

// versionOptions offers the Knative versions a cluster may install, the preselected one selected.
func versionOptions(vs []knative.Version) []views.Option {
	out := make([]views.Option, len(vs))
	for i, v := range vs {
		out[i] = views.Option{Value: v.Version, Label: v.Version, Selected: v.Preselected}
	}
	return out
}

// usageOf is what the General tab shows of the agent's latest report, made at.
func usageOf(snap *agent.Snapshot, at *time.Time) *views.Usage {
	u := &views.Usage{ReportedAt: at}
	for _, n := range snap.Nodes {
		u.Nodes = append(u.Nodes, views.UsageNode{Name: n.Name, Pods: n.Pods, CPURequested: n.CPURequested, CPUAllocatable: n.CPUAllocatable,
			MemRequested: n.MemRequested, MemAllocatable: n.MemAllocatable})
	}
	return u
}

// RuntimeTitles name the sandbox runtimes on the Isolation tab.
var RuntimeTitles = map[string]string{store.RuntimeKata: "Kata Containers", store.RuntimeGVisor: "gVisor", store.RuntimeWasm: "WebAssembly"}

// CheckItems are the lines of a checklist with their verdicts.
func CheckItems(items []kit.CheckItem) []views.CheckItem {
	out := make([]views.CheckItem, len(items))
	for i, it := range items {
		out[i] = views.CheckItem{Key: it.Key, Title: it.Title, Status: string(it.Status), Evidence: it.Evidence, Details: it.Details}
	}
	return out
}

// monitoringStorageFields are the volume and retention settings of a region's own
// Prometheus, Loki and Tempo, with RunR's defaults in the hints.
func monitoringStorageFields(m store.Monitoring) []views.SettingField {
	num := func(n int) string {
		if n == 0 {
			return ""
		}
		return strconv.Itoa(n)
	}
	def := func(n int, unit string) string { return fmt.Sprintf("RunR's default: %d %s", n, unit) }
	return []views.SettingField{
		{Name: "storage_class", Label: "StorageClass", Type: "text", Value: m.StorageClass, Hint: "RunR's default: the cluster's default class"},
		{Name: "prometheus_size_gi", Label: "Prometheus volume (GiB)", Type: "number", Value: num(m.PrometheusSizeGi), Hint: def(observability.DefaultPrometheusSizeGi, "GiB")},
		{Name: "prometheus_retention_days", Label: "Prometheus retention (days)", Type: "number", Value: num(m.PrometheusRetentionDays), Hint: def(observability.DefaultPrometheusRetentionDays, "days")},
		{Name: "loki_size_gi", Label: "Loki volume (GiB)", Type: "number", Value: num(m.LokiSizeGi), Hint: def(observability.DefaultLokiSizeGi, "GiB")},
		{Name: "loki_retention_days", Label: "Loki retention (days)", Type: "number", Value: num(m.LokiRetentionDays), Hint: def(observability.DefaultLokiRetentionDays, "days")},
		{Name: "tempo_size_gi", Label: "Tempo volume (GiB)", Type: "number", Value: num(m.TempoSizeGi), Hint: def(observability.DefaultTempoSizeGi, "GiB")},
	}
}
