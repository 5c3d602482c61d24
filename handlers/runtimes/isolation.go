package runtimes

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/a-h/templ"
	"github.com/gofiber/fiber/v2"

	"runr.dev/console/handlers"
	"runr.dev/console/ops/isolation"
	"runr.dev/console/problem"
	"runr.dev/console/store"
	"runr.dev/console/views"
)

// hypervisorTitles name Kata's hypervisors, with what an administrator must know first.
var hypervisorTitles = map[string]string{
	"qemu": "QEMU", "clh": "Cloud Hypervisor (amd64)", "fc": "Firecracker (amd64, needs containerd's devmapper snapshotter)",
	"dragonball": "Dragonball (amd64)",
}

// isolationTab is the Isolation tab: the nodes' readiness, the runtimes, the workload
// classes and the Sandbox API's settings.
func (h *Handlers) isolationTab(c *fiber.Ctx, r *store.Region) (templ.Component, error) {
	d := views.IsolationData{RegionID: r.ID}
	if f, ok := c.Locals(handlers.TabFormKey).(views.Form); ok {
		d.Form = f
	}
	d.InWizard, _ = c.Locals(handlers.InWizardKey).(bool)
	cctx, cancel := h.ClusterCtx(c)
	defer cancel()
	nodes, err := h.Ops.Isolation.RegionSandboxNodes(cctx, r)
	if err != nil {
		d.ClusterError = h.Cause(c, "The cluster did not answer", err)
	}
	busy, err := h.Store.LatestJobOf(c.UserContext(), r.ID, isolation.SandboxKinds)
	if err == nil {
		d.Busy = !busy.Status.Done()
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	fillIsolation(&d, r, nodes)
	return views.IsolationTab(handlers.TabPage(c), d), nil
}

// fillIsolation builds the Isolation tab's view of a region and its nodes.
func fillIsolation(d *views.IsolationData, r *store.Region, nodes []isolation.SandboxNode) {
	iso := r.Isolation.V
	if len(nodes) > 0 && !slices.ContainsFunc(nodes, isolation.KataCandidate) {
		d.NoKataNode = isolation.NoKataNode
	}
	for _, n := range nodes {
		kvm := map[string]string{"true": "yes", "false": "no", "": "not probed"}[n.KVM]
		rt := n.Runtime + " " + n.RuntimeVersion
		if n.Flavor != "" {
			rt += " (" + n.Flavor + ")"
		}
		only := ""
		if n.KataEligible && len(n.KataHypervisors) < len(isolation.Hypervisors) {
			only = "(" + strings.Join(n.KataHypervisors, ", ") + " only on " + n.Arch + ")"
		}
		d.Nodes = append(d.Nodes, views.SandboxNodeView{Name: n.Name, Runtime: rt, Arch: n.Arch, KVM: kvm, Installed: n.Installed,
			KataEligible: n.KataEligible, KataReason: n.KataReason, KataOnly: only, WasmSelected: slices.Contains(iso.Wasm.Nodes, n.Name)})
	}
	for _, name := range isolation.SandboxRuntimes {
		rt := iso.Runtime(name)
		status := string(rt.State())
		v := views.SandboxRuntimeView{Key: name, Title: handlers.RuntimeTitles[name], Status: status, Message: rt.Message,
			Installed: rt.Ready(), Installable: rt.State() == store.ComponentNotInstalled || rt.Status == store.ComponentError, Classes: rt.Classes, Nodes: rt.Nodes}
		switch name {
		case store.RuntimeKata:
			v.RemoveWarning = "Remove Kata Containers? kata-deploy's cleanup restarts the container runtime (containerd or CRI-O) on " + strings.Join(rt.Nodes, ", ") + "; their pods keep running, new ones wait for the restart. Workload kinds mapped to Kata go back to runc."
		case store.RuntimeGVisor:
			v.RemoveWarning = "Remove gVisor? Its RuntimeClass goes (runsc stays on the nodes, unused); workload kinds mapped to gvisor go back to runc."
		default:
			v.RemoveWarning = "Remove WebAssembly support? The shims are taken off " + strings.Join(rt.Nodes, ", ") + " and their RuntimeClasses deleted."
		}
		if rt.SharedWith != "" {
			v.SharedWith = rt.SharedWith
			v.RemoveWarning = "Stop sharing " + handlers.RuntimeTitles[name] + "? It stays on the cluster for region " + rt.SharedWith + "; workload kinds of this region mapped to it go back to runc."
		}
		d.Runtimes = append(d.Runtimes, v)
	}
	for _, hv := range isolation.Hypervisors {
		label := hypervisorTitles[hv]
		if len(nodes) > 0 && len(isolation.KataNodesFor(nodes, hv)) == 0 {
			label += " — no node here can run it (" + strings.Join(isolation.HypervisorArches[hv], ", ") + ")"
		}
		d.Hypervisors = append(d.Hypervisors, views.Option{Value: hv, Label: label,
			Selected: slices.Contains(iso.Kata.Hypervisors, hv) || len(iso.Kata.Hypervisors) == 0 && hv == "qemu"})
	}
	installed := isolation.InstalledClasses(iso)
	for _, kind := range store.WorkloadKinds {
		w := views.WorkloadClassView{Kind: kind}
		current := iso.Class(kind)
		for _, class := range append([]string{store.RuncClass}, installed...) {
			w.Options = append(w.Options, views.Option{Value: class, Label: class, Selected: class == current})
		}
		if !slices.Contains(installed, current) && current != store.RuncClass {
			w.Options = append(w.Options, views.Option{Value: current, Label: current + " (not installed)", Selected: true})
		}
		d.Workloads = append(d.Workloads, w)
	}
	s := isolation.SandboxSettingsOf(r)
	d.Settings = views.SandboxSettingsView{Enabled: s.Enabled, AllowRunc: s.AllowRunc, DefaultTTL: s.DefaultTTLSeconds,
		MaxTTL: s.MaxTTLSeconds, MaxCPUm: s.MaxCPUm, MaxMemoryMB: s.MaxMemoryMB, MaxDiskMB: s.MaxDiskMB}
	for _, class := range isolation.SandboxClasses(iso) {
		d.Settings.Allowed = append(d.Settings.Allowed, views.Option{Value: class, Label: class, Selected: slices.Contains(s.AllowedClasses, class)})
		d.Settings.DefaultClasses = append(d.Settings.DefaultClasses, views.Option{Value: class, Label: class, Selected: class == s.DefaultClass})
	}
	d.Settings.DefaultClasses = append(d.Settings.DefaultClasses, views.Option{Value: store.RuncClass, Label: "runc (needs Allow runc)", Selected: s.DefaultClass == store.RuncClass})
}

// SandboxInstallForm installs a sandbox runtime from the Isolation tab.
func (h *Handlers) SandboxInstallForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	in := isolation.SandboxParams{Runtime: c.FormValue("runtime"), Hypervisors: formList(c, "hypervisors"), Nodes: formList(c, "nodes")}
	_, err = h.Ops.Isolation.InstallSandbox(c.UserContext(), h.Actor(c), r, in)
	return h.FormOutcome(c, r, "isolation", nil, err, "")
}

// SandboxUninstallForm removes a sandbox runtime from the Isolation tab.
func (h *Handlers) SandboxUninstallForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	_, err = h.Ops.Isolation.UninstallSandbox(c.UserContext(), h.Actor(c), r, c.FormValue("runtime"))
	return h.FormOutcome(c, r, "isolation", nil, err, "")
}

// SandboxProbeForm runs the KVM probe from the Isolation tab.
func (h *Handlers) SandboxProbeForm(c *fiber.Ctx) error {
	return handlers.RegionFormAction(h.Handlers, c, "isolation", "", h.Ops.Isolation.ProbeSandboxNodes)
}

// SandboxClassesForm saves the runtime class of each workload kind.
func (h *Handlers) SandboxClassesForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	in := map[string]string{}
	for _, kind := range store.WorkloadKinds {
		if v := c.FormValue(kind); v != "" {
			in[kind] = v
		}
	}
	_, err = h.Ops.Isolation.SetWorkloadClasses(c.UserContext(), h.Actor(c), r, in)
	return h.FormOutcome(c, r, "isolation", in, err, "Runtime classes saved; projects deploy with them from their next deploy.")
}

// SandboxSettingsForm saves the Sandbox API's settings (permission sandboxes.manage).
func (h *Handlers) SandboxSettingsForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	in := isolation.SandboxSettingsInput{Enabled: store.Ptr(c.FormValue("enabled") == "true"), AllowRunc: store.Ptr(c.FormValue("allow_runc") == "true"),
		DefaultClass: store.Ptr(c.FormValue("default_class"))}
	if c.FormValue("allowed_classes_sent") != "" {
		in.AllowedClasses = store.Ptr(formList(c, "allowed_classes"))
	}
	values := map[string]string{}
	fe := handlers.FieldErrors{}
	for name, to := range map[string]**int{"default_ttl_seconds": &in.DefaultTTLSeconds, "max_ttl_seconds": &in.MaxTTLSeconds,
		"max_cpu_m": &in.MaxCPUm, "max_memory_mb": &in.MaxMemoryMB, "max_disk_mb": &in.MaxDiskMB} {
		values[name] = strings.TrimSpace(c.FormValue(name))
		if values[name] == "" {
			continue
		}
		n, err := strconv.Atoi(values[name])
		if err != nil {
			fe[name] = "Use a whole number."
			continue
		}
		*to = &n
	}
	if len(fe) > 0 {
		return h.FormInvalid(c, r, "isolation", values, fe, "")
	}
	_, err = h.Ops.Isolation.SetSandboxSettings(c.UserContext(), h.Actor(c), r, in)
	return h.FormOutcome(c, r, "isolation", values, err, "Sandbox API settings saved.")
}

// formList is the values of a repeated form field, trimmed, empty ones left out.
func formList(c *fiber.Ctx, name string) []string {
	var out []string
	for _, v := range c.Context().PostArgs().PeekMulti(name) {
		if s := strings.TrimSpace(string(v)); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// isolationJSON is a region's sandbox runtimes, workload classes and nodes, as the API
// answers them.
func isolationJSON(r *store.Region, nodes []isolation.SandboxNode) fiber.Map {
	iso := r.Isolation.V
	runtimes := fiber.Map{}
	for _, name := range isolation.SandboxRuntimes {
		rt := iso.Runtime(name)
		rt.Status = rt.State()
		runtimes[name] = rt
	}
	classes := map[string]string{}
	for _, kind := range store.WorkloadKinds {
		classes[kind] = iso.Class(kind)
	}
	if nodes == nil {
		nodes = []isolation.SandboxNode{}
	}
	return fiber.Map{"runtimes": runtimes, "runtime_classes": classes, "installed_classes": orEmpty(isolation.InstalledClasses(iso)), "nodes": nodes}
}

func orEmpty(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}

// APISandbox is GET /api/knative-regions/{id}/sandbox: the runtimes, the workload
// classes and each node's readiness.
func (h *Handlers) APISandbox(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	cctx, cancel := h.ClusterCtx(c)
	defer cancel()
	nodes, err := h.Ops.Isolation.RegionSandboxNodes(cctx, r)
	if err != nil {
		return h.Fail(c, &problem.Unreachable{Region: r.Name, Err: err})
	}
	return c.JSON(isolationJSON(r, nodes))
}

// APIInstallSandbox is POST /api/knative-regions/{id}/install-sandbox {"runtime",
// "hypervisors"} (and POST …/wasm {"nodes"} for WebAssembly).
func (h *Handlers) APIInstallSandbox(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	var in isolation.SandboxParams
	if err := handlers.OptionalBody(c, &in); err != nil {
		return h.Fail(c, err)
	}
	if strings.HasSuffix(c.Path(), "/wasm") {
		in.Runtime = store.RuntimeWasm
	}
	j, err := h.Ops.Isolation.InstallSandbox(c.UserContext(), h.Actor(c), r, in)
	return h.Accepted(c, j, err)
}

// APIUninstallSandbox is POST /api/knative-regions/{id}/uninstall-sandbox {"runtime"} and
// DELETE /api/knative-regions/{id}/wasm: refused (422, naming them) while pods use it.
func (h *Handlers) APIUninstallSandbox(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	in := struct {
		Runtime string `json:"runtime"`
	}{}
	if c.Method() == fiber.MethodDelete {
		in.Runtime = store.RuntimeWasm
	} else if err := handlers.BodyMap(c, &in); err != nil {
		return h.Fail(c, err)
	}
	j, err := h.Ops.Isolation.UninstallSandbox(c.UserContext(), h.Actor(c), r, in.Runtime)
	return h.Accepted(c, j, err)
}

// APIProbeSandbox is POST /api/knative-regions/{id}/probe-kvm: the KVM probe on every node.
func (h *Handlers) APIProbeSandbox(c *fiber.Ctx) error {
	return handlers.RegionActionAPI(h.Handlers, c, h.Ops.Isolation.ProbeSandboxNodes)
}

// APISetRuntimeClasses is PUT /api/knative-regions/{id}/runtime-classes {kind: class}.
func (h *Handlers) APISetRuntimeClasses(c *fiber.Ctx) error {
	r, in, err := handlers.RegionBody[map[string]string](h.Handlers, c)
	if err != nil {
		return h.Fail(c, err)
	}
	classes, err := h.Ops.Isolation.SetWorkloadClasses(c.UserContext(), h.Actor(c), r, in)
	if err != nil {
		return h.Fail(c, err)
	}
	return c.JSON(fiber.Map{"runtime_classes": classes})
}

// APIGetSandboxRegion is GET /api/sandbox-regions/{id}: the Sandbox API's settings.
func (h *Handlers) APIGetSandboxRegion(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	return c.JSON(sandboxSettingsJSON(r, isolation.SandboxSettingsOf(r)))
}

// APIPutSandboxRegion is PUT /api/sandbox-regions/{id}: changes the Sandbox API's
// settings (422 with field errors, nothing stored, when one is wrong).
func (h *Handlers) APIPutSandboxRegion(c *fiber.Ctx) error {
	r, in, err := handlers.RegionBody[isolation.SandboxSettingsInput](h.Handlers, c)
	if err != nil {
		return h.Fail(c, err)
	}
	v, err := h.Ops.Isolation.SetSandboxSettings(c.UserContext(), h.Actor(c), r, in)
	if err != nil {
		return h.Fail(c, err)
	}
	return c.JSON(sandboxSettingsJSON(r, v))
}

func sandboxSettingsJSON(r *store.Region, v store.SandboxSettings) fiber.Map {
	return fiber.Map{"region_id": r.ID, "region": r.Name, "enabled": v.Enabled, "allowed_classes": orEmpty(v.AllowedClasses),
		"default_class": v.DefaultClass, "allow_runc": v.AllowRunc, "default_ttl_seconds": v.DefaultTTLSeconds,
		"max_ttl_seconds": v.MaxTTLSeconds, "max_cpu_m": v.MaxCPUm, "max_memory_mb": v.MaxMemoryMB, "max_disk_mb": v.MaxDiskMB,
		"installed_classes": orEmpty(isolation.SandboxClasses(r.Isolation.V))}
}

// Handlers are the pages and endpoints of a region's runtimes: the sandboxes (isolation),
// GPU support and the supply chain's admission policy.
type Handlers struct{ *handlers.Handlers }

// New builds the runtimes' handlers and registers their region tabs.
func New(h *handlers.Handlers) *Handlers {
	rt := &Handlers{Handlers: h}
	h.AddTab("isolation", rt.isolationTab)
	h.AddTab("gpu", rt.gpuTab)
	h.AddTab("supply-chain", rt.supplyChainTab)
	return rt
}
