package handlers

import (
	"fmt"

	"runr.dev/console/store"
	"runr.dev/console/views"
)

// ProjectRow is a project as a line of the projects list, with its region's name and its address.
func ProjectRow(p *store.Project, regionName, url string) views.ProjectRow {
	return views.ProjectRow{ID: p.ID, Name: p.Name, Slug: p.Slug, Message: p.Message, RegionName: regionName, State: string(p.State),
		Running: p.State == store.ProjectRunning, Stopped: p.State == store.ProjectStopped,
		Image: p.Image, CPUm: p.CPUm, MemoryMi: p.MemoryMi, GPUs: projectGPUs(p.GPU.V), URL: url, Kind: projectKindText(p), Demo: p.Demo}
}

// projectKindText is a project's kind with its schedule or stream.
func projectKindText(p *store.Project) string {
	switch {
	case p.Kind == store.ProjectScheduledJob:
		return p.Kind.Label() + " (" + p.Schedule + ")"
	case p.QueueStream != "":
		return p.Kind.Label() + " (stream " + p.QueueStream + ")"
	}
	return p.Kind.Label()
}

// projectGPUs says what a project asks of GPUs: "2× Tesla-T4", "1 GPU" ("" none).
func projectGPUs(g store.ProjectGPU) string {
	switch {
	case g.Count == 0:
		return ""
	case g.Model != "":
		return fmt.Sprintf("%d× %s", g.Count, g.Model)
	}
	return fmt.Sprintf("%d GPU(s)", g.Count)
}

// RegionOptions are the regions a project can be created in.
func RegionOptions(rs []store.Region) []views.Option {
	out := make([]views.Option, len(rs))
	for i, r := range rs {
		out[i] = views.Option{Value: r.ID, Label: r.Name}
	}
	return out
}
